package approvals

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// OIDCConfig lets approvers log in with single sign-on (OpenID Connect,
// authorization code flow with PKCE). The approver's identity comes from
// the ID token and is mapped by Users to a name in the same namespace as
// MCP principals (identity.Key), so separation of duties compares a
// single-sign-on approver with the requesting principal like any other.
type OIDCConfig struct {
	// Issuer is the provider's issuer URL (discovery at
	// Issuer/.well-known/openid-configuration); tokens from any other
	// issuer are refused.
	Issuer       string
	ClientID     string // the ID token's aud must name it
	ClientSecret string
	// Claim picks the identity: "email" (the default; the token must say
	// email_verified true) or "sub".
	Claim string
	// Users maps claim values to approver names. Only listed values log in:
	// an account at the provider is not by itself a right to approve.
	Users map[string]string
	// Now is the clock used to check token expiry (default time.Now).
	Now func() time.Time
}

// oidcFlowTTL bounds how long a login may take at the provider.
const oidcFlowTTL = 10 * time.Minute

// maxOIDCFlows caps logins in progress, so that unauthenticated requests to
// /oidc/login cannot grow memory without bound.
const maxOIDCFlows = 10_000

const oidcStateCookie = "mcpsafe_oidc"

type oidcLogin struct {
	cfg      OIDCConfig
	oauth    oauth2.Config
	verifier *oidc.IDTokenVerifier
}

// oidcFlow is a sign-in in progress, kept in the store under the SHA-256
// of its state (flowOIDC).
type oidcFlow struct {
	Nonce    string `json:"nonce"`
	Verifier string `json:"verifier"`
}

func newOIDCLogin(ctx context.Context, cfg OIDCConfig, origin string) (*oidcLogin, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" {
		return nil, errors.New("channel: oidc needs an issuer and a client id")
	}
	if origin == "" {
		return nil, errors.New("channel: oidc needs the service's Origin: the redirect URL registered at the provider is Origin/oidc/callback")
	}
	switch cfg.Claim {
	case "":
		cfg.Claim = "email"
	case "email", "sub":
	default:
		return nil, fmt.Errorf("channel: oidc claim %q: use email or sub", cfg.Claim)
	}
	if len(cfg.Users) == 0 {
		return nil, errors.New("channel: oidc needs at least one user mapping (claim value to approver name)")
	}
	for v, name := range cfg.Users {
		if v == "" || !nameRE.MatchString(name) {
			return nil, fmt.Errorf("channel: oidc user %q -> %q: the name must use letters, digits and ._@+- (at most 64)", v, name)
		}
		if _, err := identity.Key(name); err != nil {
			return nil, fmt.Errorf("channel: oidc user %q -> %q: %v", v, name, err)
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p, err := oidc.NewProvider(ctx, cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("channel: oidc discovery at %s: %w", cfg.Issuer, err)
	}
	return &oidcLogin{
		cfg: cfg,
		oauth: oauth2.Config{
			ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, Endpoint: p.Endpoint(),
			RedirectURL: origin + "/oidc/callback", Scopes: []string{oidc.ScopeOpenID, "email"},
		},
		verifier: p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now}),
	}, nil
}

func stateKey(state string) string {
	h := sha256.Sum256([]byte(state))
	return string(h[:])
}

// oidcStart sends the browser to the provider. The state is also set as a
// cookie, so a callback only completes in the browser that started it (a
// login CSRF would otherwise log the victim in as the attacker).
func (s *Service) oidcStart(w http.ResponseWriter, r *http.Request) {
	o := s.oidc
	state, nonce, verifier := randomToken(), randomToken(), oauth2.GenerateVerifier()
	// In the store, so the provider's redirect back may reach any replica.
	flow, _ := json.Marshal(oidcFlow{Nonce: nonce, Verifier: verifier})
	ctx, cancel := storeCtx()
	err := s.st.flows().putFlow(ctx, flowOIDC, stateKey(state), flow, time.Now().Add(oidcFlowTTL), maxOIDCFlows)
	cancel()
	if err != nil {
		msg := "The approval store cannot be reached right now; try again in a moment."
		if errors.Is(err, errTooManyFlows) || strings.Contains(err.Error(), errTooManyFlows.Error()) {
			msg = "Too many logins in progress; try again in a few minutes."
		}
		s.render(w, http.StatusServiceUnavailable, "login.html", pageData{Error: msg})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: oidcStateCookie, Value: state, Path: "/oidc/", HttpOnly: true, MaxAge: int(oidcFlowTTL / time.Second),
		// Lax, not Strict: the provider's redirect back is a cross-site
		// top-level navigation, and the cookie must come with it.
		SameSite: http.SameSiteLaxMode, Secure: strings.HasPrefix(s.expectedOrigin(r), "https:"),
	})
	http.Redirect(w, r, o.oauth.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// oidcCallback completes the login: the state must match this browser's
// cookie and a flow not used before; the code is exchanged with the PKCE
// verifier; the ID token must be signed by the issuer's key, name this
// client as audience, be unexpired and carry this flow's nonce; its claim
// must be mapped to an approver.
func (s *Service) oidcCallback(w http.ResponseWriter, r *http.Request) {
	who, err := s.oidcIdentity(r)
	http.SetCookie(w, &http.Cookie{Name: oidcStateCookie, Value: "", Path: "/oidc/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	if err != nil {
		s.throttle.failed(r)
		s.render(w, http.StatusUnauthorized, "login.html", pageData{Error: "Single sign-on refused: " + err.Error()})
		return
	}
	cookie, _, ok := s.auth.newSession(who)
	if !ok {
		s.render(w, http.StatusServiceUnavailable, "login.html", pageData{Error: "The approval store cannot be reached right now; try again in a moment."})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: strings.HasPrefix(s.expectedOrigin(r), "https:"),
		MaxAge: int(s.opts.SessionTTL / time.Second),
	})
	// A page, not a redirect: the navigation began at the provider (cross
	// site), and a browser does not send a Strict cookie on a redirect
	// chain that began cross site. The next navigation starts here.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, `<!doctype html><meta http-equiv="refresh" content="0;url=/"><title>Signed in</title><p>Signed in as %s. <a href="/">Continue</a></p>`, html.EscapeString(who))
}

func (s *Service) oidcIdentity(r *http.Request) (string, error) {
	o := s.oidc
	if blocked, _ := s.throttle.blocked(r); blocked {
		return "", errors.New("too many failed attempts from this address")
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		return "", fmt.Errorf("the provider answered %q", prompt.Visible(wire.Clip(e)))
	}
	state := q.Get("state")
	c, err := r.Cookie(oidcStateCookie)
	if state == "" || err != nil || wire.CTCompare([]byte(c.Value), []byte(state)) != 1 {
		return "", errors.New("this sign-in was not started in this browser")
	}
	sctx, scancel := storeCtx()
	saved, ok, err := s.st.flows().takeFlow(sctx, flowOIDC, stateKey(state)) // single use, whatever happens next
	scancel()
	if err != nil {
		return "", errors.New("the approval store cannot be reached right now; start again in a moment")
	}
	var flow oidcFlow
	if !ok || json.Unmarshal(saved, &flow) != nil {
		return "", errors.New("unknown or expired sign-in; start again")
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	tok, err := o.oauth.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(flow.Verifier))
	if err != nil {
		return "", errors.New("the provider did not accept the code")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", errors.New("the provider sent no ID token")
	}
	id, err := o.verifier.Verify(ctx, raw)
	if err != nil {
		return "", fmt.Errorf("ID token: %v", err)
	}
	if wire.CTCompare([]byte(id.Nonce), []byte(flow.Nonce)) != 1 {
		return "", errors.New("ID token: nonce does not match this sign-in")
	}
	value := id.Subject
	if o.cfg.Claim == "email" {
		var cl struct {
			Email    string `json:"email"`
			Verified *bool  `json:"email_verified"`
		}
		if err := id.Claims(&cl); err != nil {
			return "", fmt.Errorf("ID token claims: %v", err)
		}
		if cl.Verified == nil || !*cl.Verified {
			return "", errors.New("ID token: the email address is not verified by the provider")
		}
		value = cl.Email
	}
	name, ok := o.cfg.Users[value]
	if !ok {
		return "", fmt.Errorf("%s %q is not an approver here", o.cfg.Claim, prompt.Visible(wire.Clip(value)))
	}
	return name, nil
}
