package approvals

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mcpsafe/mcpsafe/internal/oidctest"
	"github.com/oauth2-proxy/mockoidc"
)

// The provider is github.com/oauth2-proxy/mockoidc (through
// internal/oidctest): a real OpenID provider over HTTP on a loopback port
// with discovery, JWKS, authorize and token endpoints and PKCE checks, kept
// up by the oauth2-proxy project; the httpauth tests use it already.
// craftedUser lets one test change one claim of the ID token the provider
// signs with its real key, so only the check under test can refuse it.
type craftedUser struct {
	*mockoidc.MockUser
	mod func(*mockoidc.IDTokenClaims)
}

func (u craftedUser) Claims(scope []string, c *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	if u.mod != nil {
		u.mod(c)
	}
	return u.MockUser.Claims(scope, c)
}

type ssoEnv struct {
	*env
	p *oidctest.Provider
}

func newSSOEnv(t *testing.T, users map[string]string) *ssoEnv {
	t.Helper()
	p := oidctest.Start(t, nil, "mcpsafe-approvals")
	srv := httptest.NewUnstartedServer(nil)
	origin := "http://" + srv.Listener.Addr().String()
	svc, err := NewService(ServiceOptions{
		Secret: testSecret, Approvers: testApprovers, Origin: origin,
		OIDC: &OIDCConfig{Issuer: p.Issuer(), ClientID: p.ClientID, ClientSecret: p.ClientSecret, Users: users},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = svc
	srv.Start()
	e := &env{t: t, svc: svc, srv: srv, hook: newHook(t, origin+"/webhook")}
	t.Cleanup(e.stop)
	return &ssoEnv{env: e, p: p}
}

func user(email string, mod func(*mockoidc.IDTokenClaims)) mockoidc.User {
	return craftedUser{&mockoidc.MockUser{Subject: "sub-" + email, Email: email, EmailVerified: true}, mod}
}

// sso runs the whole browser flow: /oidc/login, the provider, the callback.
// It returns the browser, the callback's status and body.
func (e *ssoEnv) sso(u mockoidc.User) (*browser, int, string) {
	e.t.Helper()
	e.p.Change(func(m *mockoidc.MockOIDC) { m.QueueUser(u) })
	jar, _ := cookiejar.New(nil)
	b := &browser{Client: &http.Client{Jar: jar}, base: e.srv.URL}
	code, body := b.get("/oidc/login")
	return b, code, body
}

// csrfOf loads the page and reads the CSRF token of the session.
func (b *browser) csrfOf(t *testing.T) string {
	t.Helper()
	code, page := b.get("/")
	m := regexp.MustCompile(`data-csrf="([^"]+)"`).FindStringSubmatch(page)
	if code != 200 || m == nil {
		t.Fatalf("no session page: HTTP %d", code)
	}
	return m[1]
}

func TestOIDCLogin(t *testing.T) {
	e := newSSOEnv(t, map[string]string{"alice@example.com": "alice", "ci@example.com": "CI-Bot", "unverified@example.com": "bob"})

	// Control: a mapped, verified account signs in as its approver name.
	b, code, body := e.sso(user("alice@example.com", nil))
	if code != 200 || !strings.Contains(body, "Signed in as alice") {
		t.Fatalf("control: HTTP %d %s", code, body)
	}
	if code, page := b.get("/"); code != 200 || !strings.Contains(page, "alice") || !strings.Contains(page, "data-csrf") {
		t.Fatalf("control: the session page: HTTP %d", code)
	}

	past := time.Now().Add(-time.Hour)
	for _, tc := range []struct {
		name string
		u    mockoidc.User
		want string
	}{
		{"wrong audience", user("alice@example.com", func(c *mockoidc.IDTokenClaims) { c.Audience = jwt.ClaimStrings{"another-client"} }), "audience"},
		{"expired token", user("alice@example.com", func(c *mockoidc.IDTokenClaims) {
			c.IssuedAt, c.NotBefore, c.ExpiresAt = jwt.NewNumericDate(past.Add(-time.Hour)), jwt.NewNumericDate(past.Add(-time.Hour)), jwt.NewNumericDate(past)
		}), "expired"},
		{"wrong issuer", user("alice@example.com", func(c *mockoidc.IDTokenClaims) { c.Issuer = "https://evil.example" }), "issued by a different provider"},
		{"nonce of another sign-in", user("alice@example.com", func(c *mockoidc.IDTokenClaims) { c.Nonce = "not-this-one" }), "nonce"},
		{"email not verified", craftedUser{&mockoidc.MockUser{Subject: "u", Email: "unverified@example.com"}, nil}, "not verified"},
		{"account not mapped", user("mallory@example.com", nil), "not an approver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, code, body := e.sso(tc.u)
			if code != 401 || !strings.Contains(body, tc.want) {
				t.Fatalf("HTTP %d, want 401 naming %q:\n%s", code, tc.want, body)
			}
			if _, page := b.get("/"); strings.Contains(page, "data-csrf") {
				t.Fatal("a session exists after a refused sign-in")
			}
		})
	}
}

// The callback completes only once, and only in the browser that started
// the sign-in (login CSRF: an attacker's callback URL must not log the
// victim in as the attacker).
func TestOIDCCallbackBoundToBrowser(t *testing.T) {
	e := newSSOEnv(t, map[string]string{"alice@example.com": "alice"})
	e.p.Change(func(m *mockoidc.MockOIDC) { m.QueueUser(user("alice@example.com", nil)) })
	jar, _ := cookiejar.New(nil)
	noFollow := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(e.srv.URL + "/oidc/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = noFollow.Get(resp.Header.Get("Location")) // the provider
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	callback := resp.Header.Get("Location")
	if u, err := url.Parse(callback); err != nil || u.Path != "/oidc/callback" {
		t.Fatalf("provider redirected to %q", callback)
	}
	victimJar, _ := cookiejar.New(nil)
	victim := &browser{Client: &http.Client{Jar: victimJar}, base: e.srv.URL}
	if code, body := victim.get(strings.TrimPrefix(callback, e.srv.URL)); code != 401 || !strings.Contains(body, "not started in this browser") {
		t.Fatalf("callback in another browser: HTTP %d", code)
	}
	starter := &browser{Client: &http.Client{Jar: jar}, base: e.srv.URL}
	// The victim's attempt spent nothing: the state is still this
	// browser's; but it is single use.
	if code, _ := starter.get(strings.TrimPrefix(callback, e.srv.URL)); code != 200 {
		t.Fatalf("control: the starting browser: HTTP %d", code)
	}
	jar2, _ := cookiejar.New(nil)
	u, _ := url.Parse(e.srv.URL)
	jar2.SetCookies(u, jar.Cookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/oidc/"}))
	u2, _ := url.Parse(callback)
	jar2.SetCookies(&url.URL{Scheme: "http", Host: u.Host, Path: "/oidc/"}, []*http.Cookie{{Name: oidcStateCookie, Value: u2.Query().Get("state"), Path: "/oidc/"}})
	replay := &browser{Client: &http.Client{Jar: jar2}, base: e.srv.URL}
	if code, body := replay.get(strings.TrimPrefix(callback, e.srv.URL)); code != 401 || !strings.Contains(body, "unknown or expired") {
		t.Fatalf("replayed callback: HTTP %d", code)
	}
}

// One namespace: an account mapped to "CI-Bot" is the principal
// "user:ci-bot" and cannot approve its own request; another SSO approver
// can, and the gate sees her name.
func TestOIDCSeparationOfDuties(t *testing.T) {
	e := newSSOEnv(t, map[string]string{"alice@example.com": "alice", "ci@example.com": "CI-Bot"})
	req := testRequest("sso-sod")
	req.Principal = "user:ci-bot"
	ch := e.ask(req)
	e.waitPending("sso-sod")
	approve := func(email string) int {
		b, code, _ := e.sso(user(email, nil))
		if code != 200 {
			t.Fatalf("%s: sign-in HTTP %d", email, code)
		}
		code, _ = b.post("/ui/requests/sso-sod/approve", url.Values{"csrf": {b.csrfOf(t)}}, e.srv.URL, "Accept", "application/json")
		return code
	}
	if code := approve("ci@example.com"); code != 403 {
		t.Fatalf("the requester approved its own request through SSO: HTTP %d", code)
	}
	if code := approve("alice@example.com"); code != 200 {
		t.Fatalf("control: alice: HTTP %d", code)
	}
	if r := wait(t, ch); r.err != nil || !r.d.Approved || strings.Join(r.d.Approvers, ",") != "alice" {
		t.Fatalf("decision %+v, %v", r.d, r.err)
	}
}

func TestLoadOIDCUsersFile(t *testing.T) {
	good := writeFile(t, "# who\nalice@example.com alice\n\nbob@example.com  bob\n")
	m, err := LoadOIDCUsersFile(good)
	if err != nil || len(m) != 2 || m["bob@example.com"] != "bob" {
		t.Fatalf("control: %v, %v", m, err)
	}
	for name, tc := range map[string]struct{ content, want string }{
		"listed twice": {"a@x alice\na@x bob\n", "listed twice"},
		"one field":    {"a@x\n", "want VALUE NAME"},
		"three fields": {"a@x alice extra\n", "want VALUE NAME"},
		"nobody":       {"# none\n", "maps nobody"},
	} {
		if _, err := LoadOIDCUsersFile(writeFile(t, tc.content)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	os.Chmod(good, 0o644)
	if _, err := LoadOIDCUsersFile(good); err == nil || !strings.Contains(err.Error(), "must not be readable") {
		t.Errorf("world-readable file: %v", err)
	}
}
