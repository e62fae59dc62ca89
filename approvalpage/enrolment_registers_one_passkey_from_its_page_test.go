package approvalpage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// enrolment is an Enroll running in the background, its link as the
// person's browser got it, and its result once it returns.
type enrolling struct {
	link   string        // http://localhost:PORT/enroll/SECRET
	origin string        // http://localhost:PORT
	done   chan enrolled // Enroll's result, once
	ended  chan struct{} // closed when Enroll has returned
	cancel context.CancelFunc
}

type enrolled struct {
	key channel.RegisteredPasskey
	err error
}

func startEnroll(t *testing.T, opts EnrollOptions) *enrolling {
	t.Helper()
	links := make(chan string, 1)
	opts.Open = func(link string) error { links <- link; return nil }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	e := &enrolling{done: make(chan enrolled, 1), ended: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(e.ended)
		k, err := Enroll(ctx, opts)
		e.done <- enrolled{k, err}
	}()
	t.Cleanup(func() {
		cancel()
		<-e.ended
	})
	select {
	case e.link = <-links:
	case r := <-e.done:
		t.Fatalf("Enroll returned before opening its link: %v", r.err)
	}
	u, err := url.Parse(e.link)
	if err != nil {
		t.Fatal(err)
	}
	e.origin = u.Scheme + "://" + u.Host
	return e
}

// call sends an enrolment request as its page's script would, from origin
// ("" for none).
func call(t *testing.T, method, target, origin string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// register runs the ceremony from the enrolment page: begin, the
// authenticator's answer, finish.
func (e *enrolling) register(t *testing.T, a *authenticator) (int, string) {
	t.Helper()
	code, opts := call(t, "POST", e.link+"/begin", e.origin, nil)
	if code != http.StatusOK {
		t.Fatalf("begin: %d %s", code, opts)
	}
	return call(t, "POST", e.link+"/finish", e.origin, a.create(t, []byte(opts), e.origin))
}

// The enrolment page serves one registration, to the person who ran the
// command: only at its own link, only from its own origin, only with a
// user-verified passkey answering the challenge it issued, for the RP
// "localhost" and its own origin. Each attempt that fails stores nothing
// and spends the ceremony it answered; the control registers, Enroll
// returns the passkey, the file holds it (0600), and the page is gone.
func TestEnrolmentRegistersOnlyAPasskeyFromItsOwnPage(t *testing.T) {
	file := filepath.Join(t.TempDir(), "page-passkeys.json")
	e := startEnroll(t, EnrollOptions{File: file, Name: "ada"})
	if !strings.HasPrefix(e.link, "http://localhost:") {
		t.Fatalf("the enrolment link %s is not on localhost (WebAuthn takes no IP address)", e.link)
	}
	res, err := http.Get(e.link)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), "belong to &#34;ada&#34;") || !strings.Contains(string(body), `id="register"`) {
		t.Fatalf("the enrolment page: %d\n%s", res.StatusCode, body)
	}
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("CSP %q", csp)
	}
	if code, js := call(t, "GET", e.origin+"/enroll.js", "", nil); code != 200 || !strings.Contains(js, "navigator.credentials.create") {
		t.Fatalf("enroll.js: %d", code)
	}
	wrong := e.origin + "/enroll/" + strings.Repeat("A", 43)

	a := newAuthenticator(t)
	forged := func(mod func(a *authenticator)) func() (int, string) {
		return func() (int, string) {
			b := *a
			mod(&b)
			return e.register(t, &b)
		}
	}
	for _, at := range []struct {
		name string
		try  func() (int, string)
		code int
		want string
	}{
		{"begin at a guessed link", func() (int, string) { return call(t, "POST", wrong+"/begin", e.origin, nil) }, 404, "no such enrolment"},
		{"the page at a guessed link", func() (int, string) { return call(t, "GET", wrong, "", nil) }, 404, "no such enrolment"},
		{"begin from another site", func() (int, string) { return call(t, "POST", e.link+"/begin", "http://evil.example", nil) }, 403, "only the enrolment page"},
		{"begin without an Origin", func() (int, string) { return call(t, "POST", e.link+"/begin", "", nil) }, 403, "only the enrolment page"},
		{"finish from another site", func() (int, string) { return call(t, "POST", e.link+"/finish", "http://evil.example", nil) }, 403, "only the enrolment page"},
		{"finish with no ceremony begun", func() (int, string) {
			return call(t, "POST", e.link+"/finish", e.origin, a.create(t, []byte(`{"publicKey":{"challenge":"AAAA"}}`), e.origin))
		}, 409, "no registration in progress"},
		{"a passkey without user verification", forged(func(b *authenticator) { b.verified = false }), 400, "User verification required"},
		{"a passkey for another relying party", forged(func(b *authenticator) { b.rpID = "evil.example" }), 400, "RP Hash mismatch"},
		{"an answer for another challenge", func() (int, string) {
			call(t, "POST", e.link+"/begin", e.origin, nil)
			return call(t, "POST", e.link+"/finish", e.origin, a.create(t, []byte(`{"publicKey":{"challenge":"b3RoZXI"}}`), e.origin))
		}, 400, "Error validating challenge"},
		{"an answer made at another origin", func() (int, string) {
			code, opts := call(t, "POST", e.link+"/begin", e.origin, nil)
			if code != 200 {
				t.Fatalf("begin: %d", code)
			}
			return call(t, "POST", e.link+"/finish", e.origin, a.create(t, []byte(opts), "http://127.0.0.1"+strings.TrimPrefix(e.origin, "http://localhost")))
		}, 400, "Error validating origin"},
		{"a second finish for a ceremony that failed", func() (int, string) {
			return call(t, "POST", e.link+"/finish", e.origin, a.create(t, []byte(`{"publicKey":{"challenge":"AAAA"}}`), e.origin))
		}, 409, "no registration in progress"},
	} {
		if code, b := at.try(); code != at.code || !strings.Contains(b, at.want) {
			t.Errorf("%s: %d %s, want %d %q", at.name, code, b, at.code, at.want)
		}
	}
	// DNS rebinding: another name for the same address is refused.
	req, _ := http.NewRequest("GET", e.link, nil)
	req.Host = "rebind.example" + strings.TrimPrefix(e.origin, "http://localhost")
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("another host name: %v %v", res, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a refused attempt wrote the passkeys file: %v", err)
	}
	select {
	case r := <-e.done:
		t.Fatalf("Enroll returned after refused attempts only: %+v %v", r.key, r.err)
	default:
	}

	// Control.
	if code, b := e.register(t, a); code != 200 || !strings.Contains(b, `"registered":"`+a.id()+`"`) {
		t.Fatalf("control: %d %s", code, b)
	}
	r := <-e.done
	if r.err != nil || r.key.Approver != "ada" || r.key.CredentialID != a.id() {
		t.Fatalf("Enroll: %+v %v", r.key, r.err)
	}
	fi, err := os.Stat(file)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the passkeys file: %v %v", fi, err)
	}
	reg, err := LoadPasskeys(file)
	if err != nil || len(reg.Passkeys) != 1 || reg.Passkeys[0] != r.key || reg.RPID != LocalRPID {
		t.Fatalf("the passkeys file reads %+v %v", reg, err)
	}
	// One registration per run: the page is gone.
	if res, err := http.Get(e.link); err == nil {
		res.Body.Close()
		t.Fatalf("the enrolment page still answers after its registration: %s", res.Status)
	}
}

// A second enrolment adds to the file and never replaces it: the person's
// existing passkey is excluded from the new ceremony (the authenticator
// will not register it twice), and both are in the file afterwards.
func TestSecondEnrolmentAddsToTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "page-passkeys.json")
	first := newAuthenticator(t)
	e := startEnroll(t, EnrollOptions{File: file, Name: "ada"})
	if code, b := e.register(t, first); code != 200 {
		t.Fatalf("first: %d %s", code, b)
	}
	<-e.done

	e = startEnroll(t, EnrollOptions{File: file, Name: "ada", Addr: "127.0.0.1:0"})
	code, opts := call(t, "POST", e.link+"/begin", e.origin, nil)
	if code != 200 || !strings.Contains(opts, `"excludeCredentials":[{"type":"public-key","id":"`+first.id()+`"`) {
		t.Fatalf("the second ceremony does not exclude the first passkey: %d %s", code, opts)
	}
	second := newAuthenticator(t)
	if code, b := call(t, "POST", e.link+"/finish", e.origin, second.create(t, []byte(opts), e.origin)); code != 200 {
		t.Fatalf("second: %d %s", code, b)
	}
	if r := <-e.done; r.err != nil {
		t.Fatal(r.err)
	}
	reg, err := LoadPasskeys(file)
	if err != nil || len(reg.Passkeys) != 2 || reg.Passkeys[0].CredentialID != first.id() || reg.Passkeys[1].CredentialID != second.id() {
		t.Fatalf("the file after two enrolments: %+v %v", reg, err)
	}
}

// A passkey that cannot be stored is not registered: the person is told,
// Enroll goes on waiting, and a new ceremony once the file can be written
// registers it.
func TestEnrolmentThatCannotStoreRegistersNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "not-yet")
	file := filepath.Join(dir, "page-passkeys.json")
	e := startEnroll(t, EnrollOptions{File: file, Name: "ada"})
	a := newAuthenticator(t)
	if code, b := e.register(t, a); code != http.StatusServiceUnavailable || !strings.Contains(b, "nothing registered") {
		t.Fatalf("storing into a missing directory: %d %s", code, b)
	}
	select {
	case r := <-e.done:
		t.Fatalf("Enroll returned although nothing was stored: %+v %v", r.key, r.err)
	default:
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if code, b := e.register(t, a); code != 200 {
		t.Fatalf("after the directory exists: %d %s", code, b)
	}
	if r := <-e.done; r.err != nil || r.key.CredentialID != a.id() {
		t.Fatalf("Enroll: %+v %v", r.key, r.err)
	}
}

// Enroll refuses to start rather than enrol somewhere unsafe, and stops
// with nothing stored when its context ends.
func TestEnrollRefusesUnsafeSettings(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.json")
	reg := channel.PasskeyRegistry{RPID: LocalRPID, Origin: "http://localhost:5555", Passkeys: []channel.RegisteredPasskey{{Approver: "ada", CredentialID: "QUJD", PublicKey: "cHVi"}}}
	if err := reg.Save(open); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o666); err != nil {
		t.Fatal(err)
	}
	never := func(string) error { t.Error("a link was opened"); return nil }
	for _, tc := range []struct {
		name string
		opts EnrollOptions
		want string
	}{
		{"no file", EnrollOptions{Name: "ada"}, "needs the passkeys file"},
		{"a name the journal cannot hold", EnrollOptions{File: filepath.Join(dir, "p.json"), Name: "Ada Lovelace <ada@example.com>"}, "the name"},
		{"a network address", EnrollOptions{File: filepath.Join(dir, "p.json"), Name: "ada", Addr: "0.0.0.0:0"}, "not a loopback address"},
		{"a passkeys file others can write", EnrollOptions{File: open, Name: "ada"}, "writable by others"},
	} {
		tc.opts.Open = never
		if _, err := Enroll(context.Background(), tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}

	file := filepath.Join(dir, "p.json")
	e := startEnroll(t, EnrollOptions{File: file, Name: "ada"})
	e.cancel()
	if r := <-e.done; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Enroll after its context ended: %+v %v", r.key, r.err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a cancelled enrolment wrote the file: %v", err)
	}
}
