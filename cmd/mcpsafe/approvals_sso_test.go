package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/oidctest"
	"github.com/oauth2-proxy/mockoidc"
)

// approvals serve with single sign-on only (no approvers file): a mapped
// account signs in through a real OpenID provider; an unmapped one does
// not; --oidc-issuer without --origin is refused at startup.
func TestApprovalsSSO(t *testing.T) {
	sf, _ := approvalsFiles(t)
	p := oidctest.Start(t, nil, "approvals-cli")
	dir := t.TempDir()
	users := filepath.Join(dir, "users")
	os.WriteFile(users, []byte("# email name\nalice@example.com alice\n"), 0o600)
	secret := filepath.Join(dir, "client-secret")
	os.WriteFile(secret, []byte(p.ClientSecret+"\n"), 0o600)

	var out, errb bytes.Buffer
	if code := run([]string{"approvals", "serve", "--secret-file", sf, "--oidc-issuer", p.Issuer(), "--oidc-client-id", p.ClientID, "--oidc-users-file", users}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--origin") {
		t.Fatalf("no --origin: exit %d, %s", code, errb.String())
	}

	// The redirect URL registered at a provider is fixed, so the test
	// picks the port first.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	base := startApprovals(t, sf, "", "--listen", addr, "--origin", "http://"+addr,
		"--oidc-issuer", p.Issuer(), "--oidc-client-id", p.ClientID, "--oidc-client-secret-file", secret, "--oidc-users-file", users)
	signIn := func(email string) (int, string) {
		p.Change(func(m *mockoidc.MockOIDC) {
			m.QueueUser(&mockoidc.MockUser{Subject: "s-" + email, Email: email, EmailVerified: true})
		})
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar}
		resp, err := c.Get(base + "/oidc/login")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := signIn("alice@example.com"); code != 200 || !strings.Contains(body, "Signed in as alice") {
		t.Fatalf("control: HTTP %d %s", code, body)
	}
	if code, body := signIn("mallory@example.com"); code != 401 || !strings.Contains(body, "not an approver") {
		t.Fatalf("unmapped account: HTTP %d", code)
	}
}
