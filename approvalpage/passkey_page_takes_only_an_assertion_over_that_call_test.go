package approvalpage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

// enrolledPasskey registers a passkey for "ada" through Enroll's page and
// returns the authenticator holding it and the passkeys file as loaded.
func enrolledPasskey(t *testing.T) (*authenticator, *channel.PasskeyRegistry) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "page-passkeys.json")
	e := startEnroll(t, EnrollOptions{File: file, Name: "ada"})
	a := newAuthenticator(t)
	if code, b := e.register(t, a); code != 200 {
		t.Fatalf("enrolment: %d %s", code, b)
	}
	if r := <-e.done; r.err != nil {
		t.Fatal(r.err)
	}
	reg, err := LoadPasskeys(file)
	if err != nil {
		t.Fatal(err)
	}
	return a, reg
}

func newPasskeyHarness(t *testing.T, reg *channel.PasskeyRegistry) *harness {
	t.Helper()
	h := &harness{clk: newClock(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)), links: make(chan string, 16)}
	p, err := Listen(Options{Addr: "127.0.0.1:0", Clock: h.clk.Now, Passkeys: reg, Open: func(link string) error {
		h.links <- link
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	h.Page = p
	return h
}

var passkeyOptionsRE = regexp.MustCompile(`data-passkey="([^"]+)"`)

// requestOptions is what the page at link asks the browser to sign.
type shownOptions struct {
	Challenge        string `json:"challenge"`
	RPID             string `json:"rpId"`
	UserVerification string `json:"userVerification"`
	AllowCredentials []struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	} `json:"allowCredentials"`
}

func optionsOf(t *testing.T, body string) shownOptions {
	t.Helper()
	m := passkeyOptionsRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the page carries no passkey options:\n%s", body)
	}
	var o shownOptions
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// approveWith posts Approve with an assertion, as the page's script does.
func approveWith(t *testing.T, link, origin, form, assertion string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", link, strings.NewReader(url.Values{"form": {form}, "decision": {"approve"}, "assertion": {assertion}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A page with a registered passkey approves a call only with a
// user-verified assertion, by that passkey, over that call's challenge,
// made at the page's own origin. A click alone, an assertion for another
// call, one without user verification, one by a passkey not registered
// here, one claiming the registered credential but signed by another
// key, one made at another origin, and one that is not an assertion each
// approve nothing and leave the call waiting. The control approves once,
// at the passkey level, with evidence the gate can check again.
func TestPasskeyPageTakesOnlyAnAssertionOverThatCall(t *testing.T) {
	a, reg := enrolledPasskey(t)
	h := newPasskeyHarness(t, reg)
	if !strings.HasPrefix(h.URL(), "http://localhost:") || h.Assurance() != mcpsafe.AssurancePasskey {
		t.Fatalf("a passkey page at %s with assurance %v", h.URL(), h.Assurance())
	}
	ra := request("a", h.clk.Now().Add(5*time.Minute))
	rb := request("b", h.clk.Now().Add(5*time.Minute))
	outA := h.await(t, ra)
	linkA := h.openedLink(t)
	outB := h.await(t, rb)
	linkB := h.openedLink(t)
	formA, bodyA := page(t, linkA)
	formB, bodyB := page(t, linkB)
	optA, optB := optionsOf(t, bodyA), optionsOf(t, bodyB)
	if optA.RPID != LocalRPID || optA.UserVerification != "required" || len(optA.AllowCredentials) != 1 || optA.AllowCredentials[0].ID != a.id() {
		t.Fatalf("the options shown: %+v", optA)
	}
	if want := base64.RawURLEncoding.EncodeToString(challengeOf(ra)); optA.Challenge != want || optA.Challenge == optB.Challenge {
		t.Fatalf("call A's challenge %s, derived from the call %s, call B's %s", optA.Challenge, want, optB.Challenge)
	}
	if code, js := call(t, "GET", h.URL()+"/passkey.js", "", nil); code != 200 || !strings.Contains(js, "navigator.credentials.get") {
		t.Fatalf("passkey.js: %d", code)
	}

	stranger := newAuthenticator(t)
	impostor := newAuthenticator(t)
	impostor.credID = a.credID // claims ada's credential, holds another key
	unverified := *a
	unverified.verified = false
	otherOrigin := "http://127.0.0.1" + strings.TrimPrefix(h.URL(), "http://localhost")
	for _, at := range []struct {
		name, assertion, want string
	}{
		{"a click alone", "", "a click alone approves nothing"},
		{"call B's assertion", a.get(t, optB.Challenge, h.URL()), "Error validating challenge"},
		{"no user verification", unverified.get(t, optA.Challenge, h.URL()), "User verification required"},
		{"a passkey not registered here", stranger.get(t, optA.Challenge, h.URL()), "that passkey is not registered for this page"},
		{"the registered id, another key", impostor.get(t, optA.Challenge, h.URL()), "validating the assertion signature"},
		{"made at another origin", a.get(t, optA.Challenge, otherOrigin), "Error validating origin"},
		{"not an assertion", `{"id":"x"}`, "not an assertion"},
	} {
		if code, b := approveWith(t, linkA, h.URL(), formA, at.assertion); code != http.StatusForbidden || !strings.Contains(b, at.want) {
			t.Errorf("%s: %d, want 403 and %q in:\n%s", at.name, code, at.want, b)
		}
	}
	pendingStill(t, outA)
	pendingStill(t, outB)

	// Control.
	good := a.get(t, optA.Challenge, h.URL())
	if code, b := approveWith(t, linkA, h.URL(), formA, good); code != 200 || !strings.Contains(b, "Approved") {
		t.Fatalf("control: %d %s", code, b)
	}
	o := <-outA
	if o.err != nil || !o.dec.Approved || o.dec.Assurance != mcpsafe.AssurancePasskey || len(o.dec.Approvers) != 1 || o.dec.Approvers[0] != "ada" {
		t.Fatalf("the decision: %+v %v", o.dec, o.err)
	}
	var ev channel.PageProof
	if err := json.Unmarshal(o.dec.Evidence, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.CredentialID != a.id() || ev.Origin != h.URL() || ev.TargetsDigest != channel.TargetsDigest(ra.Targets) || !ev.ExpiresAt.Equal(ra.ExpiresAt) {
		t.Fatalf("evidence %+v", ev)
	}
	check := *reg
	check.Origin = ev.Origin
	if err := check.VerifyProof(channel.PasskeyProof{Approver: ev.Approver, CredentialID: ev.CredentialID, Assertion: ev.Assertion}, challengeOf(ra)); err != nil {
		t.Fatalf("the evidence does not check out again: %v", err)
	}
	if err := check.VerifyProof(channel.PasskeyProof{Approver: ev.Approver, CredentialID: ev.CredentialID, Assertion: ev.Assertion}, challengeOf(rb)); err == nil {
		t.Fatal("the evidence checks out for another call")
	}
	if _, b := page(t, linkA); !strings.Contains(b, "Already decided: approved with the passkey of &#34;ada&#34;") {
		t.Fatalf("the decided page:\n%s", b)
	}

	// Replays: the same assertion again on its page, or on call B's.
	if code, b := approveWith(t, linkA, h.URL(), formA, good); code != http.StatusConflict || !strings.Contains(b, "changed nothing") {
		t.Fatalf("replayed on its page: %d %s", code, b)
	}
	if code, _ := approveWith(t, linkB, h.URL(), formB, good); code != http.StatusForbidden {
		t.Fatalf("replayed on another call's page: %d", code)
	}
	pendingStill(t, outB)
	// Deny takes no passkey: refusing is always safe.
	if code, b := post(t, linkB, h.URL(), formB, "deny"); code != 200 {
		t.Fatalf("deny: %d %s", code, b)
	}
	if o := <-outB; o.dec.Approved || !errors.Is(o.err, approver.ErrDenied) {
		t.Fatalf("after deny: %+v %v", o.dec, o.err)
	}
}

// A valid assertion arriving after the call expired approves nothing.
func TestPasskeyAssertionAfterExpiryApprovesNothing(t *testing.T) {
	a, reg := enrolledPasskey(t)
	h := newPasskeyHarness(t, reg)
	r := request("x", h.clk.Now().Add(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan outcome, 1)
	go func() { d, err := h.Awaiter().Await(ctx, r, 0); out <- outcome{d, err} }()
	link := h.openedLink(t)
	form, body := page(t, link)
	assertion := a.get(t, optionsOf(t, body).Challenge, h.URL())
	h.clk.Add(time.Minute)
	if code, b := approveWith(t, link, h.URL(), form, assertion); code != http.StatusGone || !strings.Contains(b, "expired") {
		t.Fatalf("after expiry: %d %s", code, b)
	}
	pendingStill(t, out)
	cancel()
	if o := <-out; o.dec.Approved || !errors.Is(o.err, context.Canceled) {
		t.Fatalf("approved after expiry: %+v %v", o.dec, o.err)
	}
}
