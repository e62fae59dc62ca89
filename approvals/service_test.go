package approvals

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
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

var testApprovers = []Approver{
	{Name: "alice", Token: "alice-token-0123456789"},
	{Name: "bob", Token: "bob-token-0123456789ab"},
	{Name: "carol", Token: "carol-token-0123456789"},
	{Name: "ci-bot", Token: "ci-bot-token-012345678"}, // also the principal of testRequest
}

func tokenOf(name string) string {
	for _, a := range testApprovers {
		if a.Name == name {
			return a.Token
		}
	}
	panic("no approver " + name)
}

type env struct {
	t    *testing.T
	svc  *Service
	srv  *httptest.Server
	hook *channel.Webhook
}

func newEnv(t *testing.T, opts ServiceOptions) *env {
	t.Helper()
	if opts.Secret == nil {
		opts.Secret = testSecret
	}
	if opts.Approvers == nil {
		opts.Approvers = testApprovers
	}
	svc, err := NewService(opts)
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	srv := httptest.NewServer(svc)
	e := &env{t: t, svc: svc, srv: srv, hook: newHook(t, srv.URL+"/webhook")}
	t.Cleanup(e.stop)
	return e
}

// stop ends the service first so that waiting long-polls return and the
// test server can close.
func (e *env) stop() {
	e.svc.Close()
	e.srv.Close()
}

type result struct {
	d   approver.Decision
	err error
}

// ask sends r through the webhook in the background.
func (e *env) ask(r approver.Request) chan result {
	ch := make(chan result, 1)
	go func() {
		d, err := e.hook.Approve(context.Background(), r)
		ch <- result{d, err}
	}()
	return ch
}

func wait(t *testing.T, ch chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook call did not return")
		return result{}
	}
}

// api calls the JSON API as who ("" = no credentials).
func (e *env) api(method, path, who string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, nil)
	if who != "" {
		req.Header.Set("Authorization", "Bearer "+tokenOf(who))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// waitFor polls cond until it holds, and fails with what (and what saw
// says then, if given) when it has not after 20 seconds: for what the
// service, a webhook caller or a delivery loop does on its own, which the
// test can only observe from outside (through the API or the store).
func waitFor(t testing.TB, what string, cond func() bool, saw ...func() string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			for _, s := range saw {
				what += "; " + s()
			}
			t.Fatal("never happened: " + what)
		}
	}
}

// waitPending waits until the service lists id as pending.
func (e *env) waitPending(id string) {
	e.t.Helper()
	waitFor(e.t, "request "+id+" pending", func() bool {
		code, out := e.api("GET", "/api/requests/"+id, "alice")
		return code == 200 && out["status"] == channel.StatusPending
	})
}

func (e *env) decide(id, action, who string, wantCode int) map[string]any {
	e.t.Helper()
	code, out := e.api("POST", "/api/requests/"+id+"/"+action, who)
	if code != wantCode {
		e.t.Fatalf("%s %s by %s: HTTP %d %v, want %d", action, id, who, code, out, wantCode)
	}
	return out
}

func TestLongPollApprove(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ch := e.ask(testRequest("req-approve"))
	e.waitPending("req-approve")
	e.decide("req-approve", "approve", "alice", 200)
	r := wait(t, ch)
	if r.err != nil || !r.d.Approved || strings.Join(r.d.Approvers, ",") != "alice" {
		t.Fatalf("got %+v, %v", r.d, r.err)
	}
}

func TestLongPollDeny(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ch := e.ask(testRequest("req-deny"))
	e.waitPending("req-deny")
	e.decide("req-deny", "deny", "bob", 200)
	r := wait(t, ch)
	checkOutcome(t, r.d, r.err, channel.ErrDenied, "bob")
	// Final: nobody can approve it afterwards.
	out := e.decide("req-deny", "approve", "alice", 409)
	if !strings.Contains(out["error"].(string), "already denied by bob") {
		t.Fatalf("error = %v", out["error"])
	}
}

func TestLongPollExpires(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	req := testRequest("req-expire")
	req.ExpiresAt = time.Now().Add(700 * time.Millisecond)
	ch := e.ask(req)
	e.waitPending("req-expire")
	r := wait(t, ch)
	checkOutcome(t, r.d, r.err, channel.ErrTimeout, "")
	_, out := e.api("GET", "/api/requests/req-expire", "alice")
	if out["status"] != channel.StatusExpired {
		t.Fatalf("status = %v", out["status"])
	}
	e.decide("req-expire", "approve", "alice", 409)
}

// MaxWait caps a request whose expires_at lies far ahead.
func TestMaxWait(t *testing.T) {
	e := newEnv(t, ServiceOptions{MaxWait: 500 * time.Millisecond})
	r := wait(t, e.ask(testRequest("req-maxwait")))
	checkOutcome(t, r.d, r.err, channel.ErrTimeout, "")
}

// A decision is made once and reaches every re-attach of its request (same
// id, same body) until the request expires or is withdrawn: a gate that
// died after the first delivery does not take the person's decision with
// it (the call runs at most once through the gate's ledger). While a
// caller waits, a newer caller for the same request takes it over.
func TestDecisionReachesEveryReattach(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	req := testRequest("req-once")
	ch := e.ask(req)
	e.waitPending("req-once")

	// A second caller for the same request takes it over; the first is
	// told another caller waits now.
	ch2 := e.ask(req)
	r1 := wait(t, ch)
	checkOutcome(t, r1.d, r1.err, channel.ErrUnavailable, "HTTP 409")

	e.decide("req-once", "approve", "alice", 200)
	if r := wait(t, ch2); !r.d.Approved {
		t.Fatalf("got %+v, %v", r.d, r.err)
	}
	// Asking again (freshly signed, as a gate replica does with the
	// handle) gets the same decision again; nobody decides it twice.
	if r3 := wait(t, e.ask(req)); !r3.d.Approved || len(r3.d.Approvers) != 1 || r3.d.Approvers[0] != "alice" {
		t.Fatalf("a re-attach after the delivery: %+v, %v", r3.d, r3.err)
	}
	e.decide("req-once", "approve", "bob", 409)
	e.decide("req-once", "deny", "bob", 409)

	// The same id with a different plan is refused.
	other := req
	other.Summary = "delete thesis.txt"
	r4 := wait(t, e.ask(other))
	checkOutcome(t, r4.d, r4.err, channel.ErrUnavailable, "HTTP 409")

	// Once the gate withdraws it (it had the approval and did not run
	// the call), no re-attach gets the decision any more.
	if err := e.hook.Withdraw(context.Background(), req, approver.WithdrawShuttingDown); err != nil {
		t.Fatal(err)
	}
	r5 := wait(t, e.ask(req))
	checkOutcome(t, r5.d, r5.err, channel.ErrUnavailable, "HTTP 409")
}

func TestSelfApprovalRefused(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ch := e.ask(testRequest("req-self")) // principal ci-bot
	e.waitPending("req-self")
	out := e.decide("req-self", "approve", "ci-bot", 403)
	if !strings.Contains(out["error"].(string), "cannot approve it") {
		t.Fatalf("error = %v", out["error"])
	}
	// Control: another approver can.
	e.decide("req-self", "approve", "carol", 200)
	if r := wait(t, ch); !r.d.Approved || r.d.Approvers[0] != "carol" {
		t.Fatalf("got %+v, %v", r.d, r.err)
	}
}

func TestTwoOfM(t *testing.T) {
	e := newEnv(t, ServiceOptions{Require: map[string]int{"drop_table": 2}})
	req := testRequest("req-2of3")
	req.Tool = "drop_table"
	ch := e.ask(req)
	e.waitPending("req-2of3")
	e.decide("req-2of3", "approve", "alice", 200)
	out := e.decide("req-2of3", "approve", "alice", 409) // twice does not count
	if !strings.Contains(out["error"].(string), "1 more") {
		t.Fatalf("error = %v", out["error"])
	}
	select {
	case r := <-ch:
		t.Fatalf("decided after one approver: %+v, %v", r.d, r.err)
	case <-time.After(100 * time.Millisecond):
	}
	e.decide("req-2of3", "approve", "bob", 200)
	r := wait(t, ch)
	if !r.d.Approved || strings.Join(r.d.Approvers, ",") != "alice,bob" {
		t.Fatalf("got %+v, %v", r.d, r.err)
	}

	// One deny after one approval is final.
	req2 := req
	req2.ID = "req-2of3-deny"
	ch2 := e.ask(req2)
	e.waitPending("req-2of3-deny")
	e.decide("req-2of3-deny", "approve", "alice", 200)
	e.decide("req-2of3-deny", "deny", "carol", 200)
	r = wait(t, ch2)
	checkOutcome(t, r.d, r.err, channel.ErrDenied, "carol")
	e.decide("req-2of3-deny", "approve", "bob", 409)
}

// A sender can raise the number of approvers, never lower it.
func TestMinApproversFromSender(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	e.hook = newHook(t, e.srv.URL+"/webhook", channel.WithMinApprovers("delete_file", 2))
	ch := e.ask(testRequest("req-sender-2"))
	e.waitPending("req-sender-2")
	e.decide("req-sender-2", "approve", "alice", 200)
	_, out := e.api("GET", "/api/requests/req-sender-2", "alice")
	if out["status"] != channel.StatusPending || out["required_approvals"] != float64(2) {
		t.Fatalf("after one approval: %v", out)
	}
	e.decide("req-sender-2", "approve", "bob", 200)
	if r := wait(t, ch); !r.d.Approved || len(r.d.Approvers) != 2 {
		t.Fatalf("got %+v, %v", r.d, r.err)
	}
}

// postSigned sends body to the webhook with a given signature header.
func (e *env) postSigned(body []byte, sig string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/webhook", bytes.NewReader(body))
	req.Header.Set(channel.SignatureHeader, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func wireBody(t *testing.T, id string, expires time.Time) []byte {
	r := testRequest(id)
	b, err := json.Marshal(channel.WireRequest{Version: 1, ID: r.ID, Tool: r.Tool, Summary: r.Summary, Details: r.Details,
		Targets: r.Targets, ArgsDigest: r.ArgsDigest, Principal: r.Principal, Audience: r.Audience,
		Irreversible: true, ExpiresAt: expires})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWebhookEndpointRejects(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	body := wireBody(t, "req-sig", time.Now().Add(300*time.Millisecond))
	now := time.Now()
	sig := channel.Sign(testSecret, body, now)

	cases := []struct {
		name string
		body []byte
		sig  string
		code int
		msg  string
	}{
		{"no signature", body, "", 401, "missing"},
		{"wrong secret", body, channel.Sign([]byte(strings.Repeat("x", 32)), body, now), 401, "does not match"},
		{"forged body", bytes.Replace(body, []byte("cache.txt"), []byte("thesis.txt"), 1), sig, 401, "does not match"},
		{"stale", body, channel.Sign(testSecret, body, now.Add(-10*time.Minute)), 401, "outside the"},
		{"unknown field", []byte(`{"version":1,"id":"x","tool":"t","expires_at":"2099-01-01T00:00:00Z","evil":1}`), "", 400, "unknown field"},
		{"duplicate key", []byte(`{"version":1,"id":"x","id":"y","tool":"t","expires_at":"2099-01-01T00:00:00Z"}`), "", 400, "duplicate key"},
		{"bad id", []byte(`{"version":1,"id":"../x","tool":"t","expires_at":"2099-01-01T00:00:00Z"}`), "", 400, "request id"},
		{"version 2", []byte(`{"version":2,"id":"x","tool":"t","expires_at":"2099-01-01T00:00:00Z"}`), "", 400, "version 2"},
		{"expired", wireBody(t, "req-old", now.Add(-time.Second)), "", 400, "already expired"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.sig
			if s == "" && tc.code != 401 {
				s = channel.Sign(testSecret, tc.body, time.Now())
			}
			code, out := e.postSigned(tc.body, s)
			if code != tc.code || !strings.Contains(out, tc.msg) || strings.Contains(out, `"approved":true`) {
				t.Fatalf("HTTP %d %s, want %d mentioning %q", code, out, tc.code, tc.msg)
			}
		})
	}

	// Control: the valid request is accepted (and expires: nobody decides).
	code, out := e.postSigned(body, sig)
	if code != 200 || !strings.Contains(out, `"approved":false`) || !strings.Contains(out, `"reason":"expired"`) {
		t.Fatalf("valid request: HTTP %d %s", code, out)
	}
	// Replayed: the same signed bytes again.
	code, out = e.postSigned(body, sig)
	if code != 409 || !strings.Contains(out, "replayed signature") {
		t.Fatalf("replay: HTTP %d %s", code, out)
	}
}

// browser is an http.Client with a cookie jar, logged in through the form.
type browser struct {
	*http.Client
	base, csrf string
}

func (e *env) login(name string) *browser {
	e.t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &browser{Client: &http.Client{Jar: jar}, base: e.srv.URL}
	code, _ := b.post("/login", url.Values{"name": {name}, "password": {tokenOf(name)}}, e.srv.URL)
	if code != 200 {
		e.t.Fatalf("login %s: HTTP %d", name, code)
	}
	_, page := b.get("/")
	m := regexp.MustCompile(`data-csrf="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		e.t.Fatalf("no CSRF token in the page:\n%s", page)
	}
	b.csrf = m[1]
	return b
}

func (b *browser) get(path string) (int, string) {
	resp, err := b.Get(b.base + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values, origin string, headers ...string) (int, string) {
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestCSRF(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ch := e.ask(testRequest("req-csrf"))
	e.waitPending("req-csrf")
	b := e.login("alice")
	path := "/ui/requests/req-csrf/approve"
	js := []string{"Accept", "application/json"}
	cases := []struct {
		name    string
		form    url.Values
		origin  string
		headers []string
		msg     string
	}{
		{"no token", nil, e.srv.URL, js, "missing or wrong token"},
		{"wrong token", url.Values{"csrf": {"x" + b.csrf}}, e.srv.URL, js, "missing or wrong token"},
		{"token in header, wrong origin", nil, "https://evil.example", append([]string{"X-CSRF-Token", b.csrf}, js...), "is not this site"},
		{"token, no origin", url.Values{"csrf": {b.csrf}}, "", js, "missing Origin"},
		{"token, cross-site fetch", url.Values{"csrf": {b.csrf}}, e.srv.URL, append([]string{"Sec-Fetch-Site", "cross-site"}, js...), "cross-site"},
		{"token, null origin", url.Values{"csrf": {b.csrf}}, "null", js, "is not this site"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := b.post(path, tc.form, tc.origin, tc.headers...)
			if code != 403 || !strings.Contains(body, tc.msg) {
				t.Fatalf("HTTP %d %s, want 403 %q", code, body, tc.msg)
			}
		})
	}
	_, out := e.api("GET", "/api/requests/req-csrf", "alice")
	if out["status"] != channel.StatusPending || len(out["approvals"].([]any)) != 0 {
		t.Fatalf("a refused post changed the request: %v", out)
	}
	// Login itself checks Origin (login CSRF).
	anon := &browser{Client: &http.Client{}, base: e.srv.URL}
	if code, _ := anon.post("/login", url.Values{"name": {"alice"}, "password": {tokenOf("alice")}}, "https://evil.example"); code != 403 {
		t.Fatalf("cross-site login: HTTP %d", code)
	}
	// Control: token and origin right.
	code, body := b.post(path, nil, e.srv.URL, append([]string{"X-CSRF-Token", b.csrf}, js...)...)
	if code != 200 || !strings.Contains(body, `"status":"approved"`) {
		t.Fatalf("legitimate post: HTTP %d %s", code, body)
	}
	if r := wait(t, ch); !r.d.Approved || r.d.Approvers[0] != "alice" {
		t.Fatalf("got %+v, %v", r.d, r.err)
	}
}

func TestUnauthenticated(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ch := e.ask(testRequest("req-auth"))
	e.waitPending("req-auth")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	anon := &browser{Client: noRedirect, base: e.srv.URL}
	if code, _ := anon.get("/"); code != 303 {
		t.Fatalf("GET / without login: HTTP %d, want a redirect to /login", code)
	}
	for _, p := range []string{"/ui/fragment", "/ui/events"} {
		if code, _ := anon.get(p); code != 401 {
			t.Fatalf("GET %s without login: HTTP %d", p, code)
		}
	}
	if code, _ := anon.post("/ui/requests/req-auth/approve", nil, e.srv.URL); code != 401 {
		t.Fatalf("POST approve without login: HTTP %d", code)
	}
	jar, _ := cookiejar.New(nil)
	u, _ := url.Parse(e.srv.URL)
	jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: randomToken()}})
	forged := &browser{Client: &http.Client{Jar: jar, CheckRedirect: noRedirect.CheckRedirect}, base: e.srv.URL}
	if code, _ := forged.get("/ui/fragment"); code != 401 {
		t.Fatalf("forged cookie: HTTP %d", code)
	}
	if code, _ := anon.post("/login", url.Values{"name": {"alice"}, "password": {"alice-token-0123456788"}}, e.srv.URL); code != 401 {
		t.Fatalf("wrong password: HTTP %d", code)
	}
	if code, _ := anon.post("/login", url.Values{"name": {"bob"}, "password": {tokenOf("alice")}}, e.srv.URL); code != 401 {
		t.Fatalf("alice's password for bob: HTTP %d", code)
	}

	for _, h := range []string{"", "Bearer ", "Bearer wrong-token-0123456789", "Basic " + basic("alice", tokenOf("alice")), "bearer " + tokenOf("alice")} {
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/requests/req-auth/approve", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Fatalf("Authorization %q: HTTP %d", h, resp.StatusCode)
		}
	}
	_, out := e.api("GET", "/api/requests/req-auth", "alice")
	if out["status"] != channel.StatusPending {
		t.Fatalf("unauthenticated calls changed the request: %v", out)
	}
	// Control: the bearer token works.
	e.decide("req-auth", "approve", "bob", 200)
	if r := wait(t, ch); !r.d.Approved {
		t.Fatalf("got %+v, %v", r.d, r.err)
	}
}

func basic(u, p string) string {
	req, _ := http.NewRequest("GET", "http://x", nil)
	req.SetBasicAuth(u, p)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

func TestHTMLEscaping(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	req := testRequest("req-xss")
	req.Tool = `drop<script>alert(1)</script>`
	req.Summary = "delete <script>alert(document.cookie)</script> \u202etxt.exe"
	req.Details = []string{`"><img src=x onerror=alert(1)>`, "line\nbreak \u200b zero width"}
	req.Targets = []mcpsafe.Target{{Name: `'><svg onload=alert(1)>`, State: "\u2066isolated\u2069"}}
	// (A principal like <b>ci-bot</b> never gets this far: it has no
	// identity key, see TestPrincipalWithoutIdentityRefused.)
	req.Audience = `javascript:alert(1)`
	ch := e.ask(req)
	e.waitPending("req-xss")
	b := e.login("alice")
	for _, p := range []string{"/", "/ui/fragment"} {
		_, page := b.get(p)
		for _, bad := range []string{"<script>alert", "<img", "<svg", "\u202e", "\u200b", "\u2066", "\u2069", "onerror=alert(1)>"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s contains %q unescaped", p, bad)
			}
		}
		for _, good := range []string{"&lt;script&gt;alert(document.cookie)&lt;/script&gt;", `\u202etxt.exe`, `&#34;&gt;&lt;img src=x onerror=alert(1)&gt;`, `line\nbreak \u200b zero width`, `\u2066isolated\u2069`} {
			if !strings.Contains(page, good) {
				t.Errorf("%s lacks the escaped form %q", p, good)
			}
		}
	}
	e.decide("req-xss", "deny", "alice", 200)
	wait(t, ch)
	_, page := b.get("/")
	if strings.Contains(page, "<script>alert") || !strings.Contains(page, "&lt;script&gt;alert(document.cookie)") {
		t.Error("the history view does not escape the summary")
	}
}

func TestRestartWithStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.db")
	opts := ServiceOptions{Store: "file:" + path}
	e := newEnv(t, opts)
	req := testRequest("req-restart")
	ch := e.ask(req)
	e.waitPending("req-restart")
	e.stop() // the service goes away while the caller waits
	r0 := wait(t, ch)
	// The caller was told 503 and sent the request again, to a service
	// that is gone: unreachable, and the request stays open for later.
	checkOutcome(t, r0.d, r0.err, channel.ErrUnavailable, "")
	if !errors.Is(r0.err, approver.ErrUnreachable) {
		t.Fatalf("a service that went away under the caller: %v, want it unreachable (the request may still be open)", r0.err)
	}

	e2 := newEnv(t, opts)
	e2.waitPending("req-restart")
	e2.decide("req-restart", "approve", "alice", 200)
	// The gated server asks again for the same request (freshly signed)
	// and gets the decision made after the restart.
	e2.hook = newHook(t, e2.srv.URL+"/webhook")
	r := wait(t, e2.ask(req))
	if !r.d.Approved || r.d.Approvers[0] != "alice" {
		t.Fatalf("after restart: %+v, %v", r.d, r.err)
	}
	e2.stop()

	// A third start: the decision is still there, and reaches the gate
	// that asks again (it runs once through the gate's ledger).
	e3 := newEnv(t, opts)
	r = wait(t, e3.ask(req))
	if !r.d.Approved || r.d.Approvers[0] != "alice" {
		t.Fatalf("after a second restart: %+v, %v", r.d, r.err)
	}
	_, out := e3.api("GET", "/api/requests/req-restart", "alice")
	if out["status"] != channel.StatusApproved {
		t.Fatalf("history lost: %v", out)
	}

	// Control: the memory store forgets on restart.
	m := newEnv(t, ServiceOptions{})
	mch := m.ask(testRequest("req-mem"))
	m.waitPending("req-mem")
	m.stop()
	<-mch
	m2 := newEnv(t, ServiceOptions{})
	if code, _ := m2.api("GET", "/api/requests/req-mem", "alice"); code != 404 {
		t.Fatalf("memory store kept a request across a restart: HTTP %d", code)
	}
}

// The live stream announces a decision made elsewhere, and the re-rendered
// list no longer offers buttons for it.
func TestLiveUpdates(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ch := e.ask(testRequest("req-live"))
	e.waitPending("req-live")
	b := e.login("alice")
	if _, frag := b.get("/ui/fragment"); !strings.Contains(frag, "/ui/requests/req-live/approve") {
		t.Fatal("pending request has no approve button")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/ui/events", nil)
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data: ") {
				events <- sc.Text()
			}
		}
	}()
	first := <-events
	e.decide("req-live", "approve", "bob", 200) // elsewhere: bob, over the API
	select {
	case ev := <-events:
		if ev == first {
			t.Fatalf("no new version: %s", ev)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no event after a decision")
	}
	if _, frag := b.get("/ui/fragment"); strings.Contains(frag, "/ui/requests/req-live/approve") {
		t.Fatal("the decided request still offers buttons")
	}
	wait(t, ch)
}

func TestNewServiceRefuses(t *testing.T) {
	for name, o := range map[string]ServiceOptions{
		"short secret":     {Secret: testSecret[:31], Approvers: testApprovers},
		"no approvers":     {Secret: testSecret},
		"short token":      {Secret: testSecret, Approvers: []Approver{{Name: "a", Token: "short"}}},
		"duplicate name":   {Secret: testSecret, Approvers: []Approver{{Name: "a", Token: "aaaaaaaaaaaaaaaaaa"}, {Name: "A", Token: "bbbbbbbbbbbbbbbbbb"}}},
		"shared token":     {Secret: testSecret, Approvers: []Approver{{Name: "a", Token: "aaaaaaaaaaaaaaaaaa"}, {Name: "b", Token: "aaaaaaaaaaaaaaaaaa"}}},
		"bad name":         {Secret: testSecret, Approvers: []Approver{{Name: "<a>", Token: "aaaaaaaaaaaaaaaaaa"}}},
		"require too many": {Secret: testSecret, Approvers: testApprovers, Require: map[string]int{"drop_table": 5}},
		"require zero":     {Secret: testSecret, Approvers: testApprovers, Require: map[string]int{"drop_table": 0}},
		"bad store":        {Secret: testSecret, Approvers: testApprovers, Store: "redis://x"},
		"bad origin":       {Secret: testSecret, Approvers: testApprovers, Origin: "https://x/path"},
	} {
		if s, err := NewService(o); err == nil {
			s.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

// A webhook body that trickles in is cut off; the long poll after a
// complete body is not.
func TestSlowWebhookBody(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	e.svc.bodyTimeout = 300 * time.Millisecond
	// Control: a complete request, long-polling from before the stalled
	// body below was sent; the stalled body's answer (after the body
	// deadline) shows that this one has outlived the deadline too.
	ch := e.ask(testRequest("req-slow-control"))
	e.waitPending("req-slow-control")
	u, _ := url.Parse(e.srv.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /webhook HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n{\"version\":", u.Host)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	if resp.StatusCode != 400 || time.Since(start) > 3*time.Second {
		t.Fatalf("HTTP %d after %s", resp.StatusCode, time.Since(start))
	}
	// The control still long-polls, past that deadline.
	e.decide("req-slow-control", "approve", "alice", 200)
	if r := wait(t, ch); !r.d.Approved {
		t.Fatalf("got %+v, %v", r.d, r.err)
	}
}

func TestRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "approvals.db")
	opts := ServiceOptions{Store: "file:" + path, Retention: 300 * time.Millisecond}
	e := newEnv(t, opts)
	ch := e.ask(testRequest("req-old"))
	e.waitPending("req-old")
	e.decide("req-old", "deny", "alice", 200)
	wait(t, ch)
	waitFor(t, "the decided request pruned after the retention", func() bool {
		code, _ := e.api("GET", "/api/requests/req-old", "alice")
		return code == 404
	})
	e.stop()
	e2 := newEnv(t, opts)
	if code, _ := e2.api("GET", "/api/requests/req-old", "alice"); code != 404 {
		t.Fatalf("pruned request came back from the store: HTTP %d", code)
	}
}

// Many gated calls at once, decided concurrently by several approvers:
// every caller gets exactly the decision made for its request.
func TestConcurrentRequests(t *testing.T) {
	for _, store := range []string{"memory", "file:" + filepath.Join(t.TempDir(), "c.db")} {
		t.Run(store, func(t *testing.T) {
			e := newEnv(t, ServiceOptions{Store: store})
			const n = 20
			chans := make([]chan result, n)
			for i := range chans {
				chans[i] = e.ask(testRequest(fmt.Sprintf("req-c%d", i)))
			}
			for i := 0; i < n; i++ {
				e.waitPending(fmt.Sprintf("req-c%d", i))
			}
			done := make(chan struct{})
			for i := 0; i < n; i++ {
				go func(i int) {
					defer func() { done <- struct{}{} }()
					action, who := "approve", []string{"alice", "bob", "carol"}[i%3]
					if i%2 == 1 {
						action = "deny"
					}
					req, _ := http.NewRequest("POST", fmt.Sprintf("%s/api/requests/req-c%d/%s", e.srv.URL, i, action), nil)
					req.Header.Set("Authorization", "Bearer "+tokenOf(who))
					if resp, err := http.DefaultClient.Do(req); err == nil {
						resp.Body.Close()
					}
				}(i)
			}
			for i := 0; i < n; i++ {
				<-done
			}
			for i, ch := range chans {
				r := wait(t, ch)
				if (i%2 == 0) != r.d.Approved {
					t.Errorf("req-c%d: %+v, %v", i, r.d, r.err)
				}
			}
		})
	}
}

// Without JavaScript the buttons are plain forms: the hidden csrf field and
// the browser's Origin are enough, and the answer sends the page back.
func TestFormPostWithoutJavaScript(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ch := e.ask(testRequest("req-form"))
	e.waitPending("req-form")
	b := e.login("carol")
	b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	code, _ := b.post("/ui/requests/req-form/deny", url.Values{"csrf": {b.csrf}}, e.srv.URL)
	if code != http.StatusSeeOther {
		t.Fatalf("HTTP %d, want 303 back to the page", code)
	}
	r := wait(t, ch)
	checkOutcome(t, r.d, r.err, channel.ErrDenied, "carol")
}

// BenchmarkRoundTrip measures one approval through the service: a signed
// webhook call, the request listed, an approver's API call, the answer.
func BenchmarkRoundTrip(b *testing.B) {
	svc, err := NewService(ServiceOptions{Secret: testSecret, Approvers: testApprovers, MaxPending: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(svc)
	defer srv.Close()
	defer svc.Close()
	hook, err := channel.NewWebhook(srv.URL+"/webhook", testSecret)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("bench-%d", i)
		done := make(chan error, 1)
		go func() {
			_, err := hook.Approve(context.Background(), testRequest(id))
			done <- err
		}()
		for {
			req, _ := http.NewRequest("POST", srv.URL+"/api/requests/"+id+"/approve", nil)
			req.Header.Set("Authorization", "Bearer "+tokenOf("alice"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifySignature(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 2048)
	now := time.Now()
	h := channel.Sign(testSecret, body, now)
	for b.Loop() {
		if err := channel.VerifySignature(h, body, testSecret, now, time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}
