package approvals

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/wire"
)

// hostRequest sends a request to the service with the Host header set to
// host, carrying alice's bearer token and the given headers.
func (e *env) hostRequest(method, path, host string, body []byte, header ...string) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.srv.URL+path, bytes.NewReader(body))
	req.Host = host
	req.Header.Set("Authorization", "Bearer "+tokenOf("alice"))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestHostHeaderChecked: a DNS-rebinding page reaches the service under
// its own name (evil.example resolving to 127.0.0.1); every endpoint
// refuses that Host (421) before doing anything. Controls: loopback names,
// a configured host and the Origin's host are served.
func TestHostHeaderChecked(t *testing.T) {
	e := newEnv(t, ServiceOptions{Hosts: []string{"Approvals.Example.com"}, Origin: "https://ui.example.com"})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.srv.URL, "http://"))
	// Short-lived: without the check a webhook under a foreign Host would
	// wait for a decision, and the test would fail slowly.
	body := wireBody(t, "req-host", time.Now().Add(300*time.Millisecond))
	sig := channel.Sign(testSecret, body, time.Now())
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example", "localhost.evil.example:" + port, "approvals.example.com.evil.example", "[::2]:" + port} {
		for _, ep := range []struct{ method, path string }{{"GET", "/api/requests"}, {"GET", "/login"}, {"POST", "/webhook"}, {"GET", "/static/app.js"}} {
			code, out := e.hostRequest(ep.method, ep.path, host, body, channel.SignatureHeader, sig)
			if code != http.StatusMisdirectedRequest || !strings.Contains(out, "is not served here") {
				t.Errorf("Host %s, %s %s: HTTP %d %s", host, ep.method, ep.path, code, out)
			}
		}
	}
	if _, out := e.api("GET", "/api/requests?status=all", "alice"); len(out["requests"].([]any)) != 0 {
		t.Fatalf("a webhook under a foreign Host registered a request: %v", out)
	}
	// Controls.
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "[::1]:" + port, "approvals.example.com", "approvals.example.com:443", "ui.example.com"} {
		if code, out := e.hostRequest("GET", "/api/requests", host, nil); code != 200 {
			t.Errorf("Host %s: HTTP %d %s", host, code, out)
		}
	}
	if _, err := NewService(ServiceOptions{Secret: testSecret, Approvers: testApprovers, Hosts: []string{"a b"}}); err == nil {
		t.Error("a host with a space was accepted")
	}
}

// fromAddr returns a client whose connections come from the loopback
// address ip (127.0.0.0/8 is all loopback on Linux), so the service sees
// a different client address.
func fromAddr(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

func bearerGet(t *testing.T, c *http.Client, base, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/requests", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestBearerGuessingThrottled: one address guesses bearer tokens. After
// its budget of failures, it is refused (429) even with a right token, and
// the login form refuses it too (one budget). Controls: before that the
// right token works; another address is unaffected; requests without any
// credentials spend nothing.
func TestBearerGuessingThrottled(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	// No refill during the test, no delay: the budget alone decides.
	e.svc.throttle = newThrottle(5, time.Hour, 0)
	attacker := fromAddr("127.0.0.1")
	if code := bearerGet(t, attacker, e.srv.URL, tokenOf("bob")); code != 200 {
		t.Fatalf("control before guessing: HTTP %d", code)
	}
	for i := range 5 {
		if code := bearerGet(t, attacker, e.srv.URL, "guess-"+strings.Repeat("x", i+16)); code != 401 {
			t.Fatalf("guess %d: HTTP %d", i, code)
		}
	}
	if code := bearerGet(t, attacker, e.srv.URL, "guess-6-0123456789"); code != http.StatusTooManyRequests {
		t.Fatalf("guess beyond the budget: HTTP %d, want 429", code)
	}
	if code := bearerGet(t, attacker, e.srv.URL, tokenOf("bob")); code != http.StatusTooManyRequests {
		t.Fatalf("a right guess after the budget: HTTP %d, want 429", code)
	}
	form := url.Values{"name": {"bob"}, "password": {tokenOf("bob")}}
	req, _ := http.NewRequest("POST", e.srv.URL+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.srv.URL)
	resp, err := attacker.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("login from the throttled address: HTTP %d, want 429", resp.StatusCode)
	}

	// Controls: another address; requests with no credentials are free.
	if code := bearerGet(t, fromAddr("127.0.0.2"), e.srv.URL, tokenOf("bob")); code != 200 {
		t.Fatalf("another address: HTTP %d", code)
	}
	quiet := fromAddr("127.0.0.3")
	for range 10 {
		if code := bearerGet(t, quiet, e.srv.URL, ""); code != 401 {
			t.Fatalf("no credentials: HTTP %d", code)
		}
	}
	if code := bearerGet(t, quiet, e.srv.URL, tokenOf("bob")); code != 200 {
		t.Fatalf("after requests without credentials: HTTP %d", code)
	}
}

// TestLoginGuessingThrottled: the login form spends the same budget.
// Control: the right password works before the budget is spent.
func TestLoginGuessingThrottled(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	e.svc.throttle = newThrottle(3, time.Hour, 0)
	login := func(pass string) int {
		jar, _ := cookiejar.New(nil)
		b := &browser{Client: &http.Client{Jar: jar}, base: e.srv.URL}
		code, _ := b.post("/login", url.Values{"name": {"carol"}, "password": {pass}}, e.srv.URL)
		return code
	}
	if code := login(tokenOf("carol")); code != 200 {
		t.Fatalf("control: HTTP %d", code)
	}
	for range 3 {
		if code := login("wrong-password-0123"); code != 401 {
			t.Fatalf("wrong password: HTTP %d", code)
		}
	}
	if code := login(tokenOf("carol")); code != http.StatusTooManyRequests {
		t.Fatalf("right password after the budget: HTTP %d, want 429", code)
	}
	if code := bearerGet(t, http.DefaultClient, e.srv.URL, tokenOf("carol")); code != http.StatusTooManyRequests {
		t.Fatalf("bearer after failed logins: HTTP %d, want 429", code)
	}
}

// TestSecretsComparedAsDigests: every comparison of a secret (bearer
// token, password, CSRF token, webhook MAC) hands subtle.ConstantTimeCompare
// two 32-byte digests, whatever the lengths of the presented secret, so
// its early return on a length mismatch reveals nothing. Control: the
// right secrets still authenticate and wrong ones do not.
func TestSecretsComparedAsDigests(t *testing.T) {
	var mu sync.Mutex
	var lens [][2]int
	orig := wire.CTCompare
	wire.CTCompare = func(a, b []byte) int {
		mu.Lock()
		lens = append(lens, [2]int{len(a), len(b)})
		mu.Unlock()
		return orig(a, b)
	}
	defer func() { wire.CTCompare = orig }()
	calls := func() int { mu.Lock(); defer mu.Unlock(); return len(lens) }

	e := newEnv(t, ServiceOptions{})
	e.svc.throttle = newThrottle(1000, time.Hour, 0)
	step := func(what string, f func()) {
		t.Helper()
		before := calls()
		f()
		if calls() == before {
			t.Errorf("%s compared no secret through ctCompare", what)
		}
	}
	for _, tok := range []string{"x", "short-token-16ch", strings.Repeat("y", 100)} {
		step("bearer "+tok, func() {
			if code := bearerGet(t, http.DefaultClient, e.srv.URL, tok); code != 401 {
				t.Errorf("wrong token %q: HTTP %d", tok, code)
			}
		})
	}
	step("right bearer", func() {
		if code := bearerGet(t, http.DefaultClient, e.srv.URL, tokenOf("alice")); code != 200 {
			t.Errorf("right token: HTTP %d", code)
		}
	})
	var b *browser
	step("login", func() { b = e.login("alice") })
	step("webhook MAC", func() {
		body := []byte(`{"id":"x"}`)
		if err := channel.VerifySignature(channel.Sign(testSecret, body, time.Now()), body, testSecret, time.Now(), time.Minute); err != nil {
			t.Errorf("right MAC: %v", err)
		}
		if err := channel.VerifySignature(channel.Sign(testSecret, body, time.Now()), []byte(`{"id":"y"}`), testSecret, time.Now(), time.Minute); err == nil {
			t.Error("wrong MAC accepted")
		}
	})
	ch := e.ask(testRequest("req-ct"))
	e.waitPending("req-ct")
	step("CSRF", func() {
		code, _ := b.post("/ui/requests/req-ct/approve", url.Values{"csrf": {"abc"}}, e.srv.URL, "Accept", "application/json")
		if code != 403 {
			t.Errorf("short CSRF token: HTTP %d", code)
		}
	})
	step("right CSRF", func() {
		code, _ := b.post("/ui/requests/req-ct/approve", nil, e.srv.URL, "X-CSRF-Token", b.csrf, "Accept", "application/json")
		if code != 200 {
			t.Errorf("right CSRF token: HTTP %d", code)
		}
	})
	if r := wait(t, ch); !r.d.Approved {
		t.Fatalf("got %+v, %v", r.d, r.err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, l := range lens {
		if l != [2]int{32, 32} {
			t.Fatalf("ctCompare saw lengths %v: a secret's length reaches the comparison", l)
		}
	}
}
