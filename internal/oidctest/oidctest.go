// Package oidctest runs a real OpenID Connect provider for tests
// (github.com/oauth2-proxy/mockoidc: discovery, JWKS, authorize and token
// endpoints over HTTP on a loopback port) and fetches access tokens from it
// through the authorization-code flow with PKCE, as a client would.
package oidctest

import (
	"context"
	"crypto/rsa"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/oauth2-proxy/mockoidc"
	"golang.org/x/oauth2"
)

// Provider is a running mockoidc whose handlers run under a lock, so that a
// test may change its client id or clock between token requests.
type Provider struct {
	*mockoidc.MockOIDC
	mu sync.Mutex
}

// Start runs a provider that signs with key (nil: mockoidc's built-in key)
// and issues access tokens whose aud is audience. It stops when t ends.
func Start(t testing.TB, key *rsa.PrivateKey, audience string) *Provider {
	t.Helper()
	m, err := mockoidc.NewServer(key)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{MockOIDC: m}
	m.ClientID = audience // mockoidc's access tokens carry aud = client id
	err = m.AddMiddleware(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			defer p.mu.Unlock()
			next.ServeHTTP(w, r)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	return p
}

// Change runs f on the provider between requests.
func (p *Provider) Change(f func(m *mockoidc.MockOIDC)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p.MockOIDC)
}

// Token runs the authorization-code flow for the user sub and returns the
// access token the provider issues.
func (p *Provider) Token(t testing.TB, sub string) string {
	t.Helper()
	tok, err := p.token(sub)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (p *Provider) token(sub string) (string, error) {
	p.mu.Lock()
	clientID, secret := p.ClientID, p.ClientSecret
	p.QueueUser(&mockoidc.MockUser{Subject: sub, Email: sub + "@example.com"})
	p.mu.Unlock()
	cfg := oauth2.Config{
		ClientID: clientID, ClientSecret: secret, RedirectURL: "http://127.0.0.1/callback", Scopes: []string{"openid"},
		Endpoint: oauth2.Endpoint{AuthURL: p.AuthorizationEndpoint(), TokenURL: p.TokenEndpoint(), AuthStyle: oauth2.AuthStyleInParams},
	}
	verifier := oauth2.GenerateVerifier()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(cfg.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier)))
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return "", fmt.Errorf("authorize: status %d, location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	tok, err := cfg.Exchange(context.Background(), loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		return "", fmt.Errorf("token exchange: %w", err)
	}
	return tok.AccessToken, nil
}
