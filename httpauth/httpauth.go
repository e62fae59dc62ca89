// Package httpauth makes an mcpsafe HTTP server an OAuth 2.1 resource server
// as the MCP authorization spec asks: every request to the MCP endpoint
// carries a bearer JWT, which is accepted only if it was signed by one of the
// issuer's keys (its JWKS) with an asymmetric algorithm, names the issuer,
// names this resource as its audience, and has not expired. The token's
// subject becomes the caller's identity (auth.TokenInfo.UserID), which the
// gate binds into every approval as the principal.
//
// Unauthenticated requests get 401 with a WWW-Authenticate challenge that
// points at this resource's RFC 9728 protected resource metadata, which
// names the authorization server, so that a client can discover where to get
// a token.
package httpauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Config names the authorization server and this resource.
type Config struct {
	// Issuer is the authorization server's issuer identifier (an https URL,
	// or http on a loopback address for tests). Tokens must carry exactly
	// this iss.
	Issuer string
	// Audience is this resource's identifier: the canonical URL of its MCP
	// endpoint, e.g. https://mcp.example.com/mcp. Tokens must list it in
	// aud, so that a token minted for another service is refused here.
	Audience string
	// JWKSURL is where the issuer's signing keys are published. Empty: read
	// jwks_uri from the issuer's metadata (RFC 8414 or OpenID discovery).
	JWKSURL string
	// Scopes, if any, must all be granted by the token.
	Scopes []string
	// HTTPClient fetches the metadata and keys (default: a client with a
	// 10 s timeout).
	HTTPClient *http.Client
}

// signingAlgs are the only algorithms a token may be signed with: asymmetric
// ones, so that "none" and HMAC tokens made with the public key as the
// secret (algorithm confusion) are refused before any key is tried.
var signingAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512,
	oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.ES256, oidc.ES384, oidc.ES512,
	oidc.EdDSA,
}

// Resource is a configured resource server.
type Resource struct {
	cfg         Config
	issuer      string
	verifier    *oidc.IDTokenVerifier
	metadata    *oauthex.ProtectedResourceMetadata
	metadataURL string
	metaPaths   []string
}

// New checks cfg, discovers the issuer's keys unless cfg.JWKSURL names them,
// and returns the resource server. It fails when the issuer cannot be
// reached: a server that cannot check tokens must not start.
func New(ctx context.Context, cfg Config) (*Resource, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("httpauth: an issuer is required")
	}
	if err := checkURL("issuer", cfg.Issuer); err != nil {
		return nil, err
	}
	if cfg.Audience == "" {
		return nil, errors.New("httpauth: an audience (this server's canonical URL, e.g. https://mcp.example.com/mcp) is required")
	}
	aud, err := url.Parse(cfg.Audience)
	if err != nil || (aud.Scheme != "https" && aud.Scheme != "http") || aud.Host == "" || aud.RawQuery != "" || aud.Fragment != "" {
		return nil, fmt.Errorf("httpauth: audience %q is not the absolute http(s) URL of this server's MCP endpoint (no query, no fragment)", cfg.Audience)
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	issuer, jwksURL := cfg.Issuer, cfg.JWKSURL
	if jwksURL == "" {
		asm, err := auth.GetAuthServerMetadata(ctx, cfg.Issuer, client)
		if err != nil {
			return nil, fmt.Errorf("httpauth: reading the metadata of issuer %s: %w", cfg.Issuer, err)
		}
		if asm == nil || asm.JWKSURI == "" {
			return nil, fmt.Errorf("httpauth: issuer %s publishes no metadata with a jwks_uri; give --auth-jwks-url", cfg.Issuer)
		}
		issuer, jwksURL = asm.Issuer, asm.JWKSURI
	}
	if err := checkURL("JWKS URL", jwksURL); err != nil {
		return nil, err
	}
	keys := oidc.NewRemoteKeySet(oidc.ClientContext(ctx, client), jwksURL)
	r := &Resource{
		cfg:    cfg,
		issuer: issuer,
		verifier: oidc.NewVerifier(issuer, keys, &oidc.Config{
			ClientID:             cfg.Audience,
			SupportedSigningAlgs: signingAlgs,
		}),
		metadata: &oauthex.ProtectedResourceMetadata{
			Resource:               cfg.Audience,
			AuthorizationServers:   []string{issuer},
			ScopesSupported:        cfg.Scopes,
			BearerMethodsSupported: []string{"header"},
		},
	}
	// RFC 9728 §3.1: the metadata of https://host/mcp lives at
	// https://host/.well-known/oauth-protected-resource/mcp. The root
	// location is served too, for clients that only try that one.
	const wellKnown = "/.well-known/oauth-protected-resource"
	path := wellKnown + strings.TrimSuffix(aud.EscapedPath(), "/")
	r.metadataURL = (&url.URL{Scheme: aud.Scheme, Host: aud.Host}).String() + path
	r.metaPaths = []string{path}
	if path != wellKnown {
		r.metaPaths = append(r.metaPaths, wellKnown)
	}
	return r, nil
}

func checkURL(what, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("httpauth: %s %q is not an absolute URL", what, raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if host := u.Hostname(); host == "localhost" || isLoopbackIP(host) {
			return nil
		}
		return fmt.Errorf("httpauth: %s %q must use https (plain http only on a loopback address)", what, raw)
	}
	return fmt.Errorf("httpauth: %s %q must be an https URL", what, raw)
}

// Verify checks a bearer token. It has the shape of auth.TokenVerifier; every
// refusal wraps auth.ErrInvalidToken, so that the caller answers 401.
func (r *Resource) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	t, err := r.verifier.Verify(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	if t.Subject == "" {
		return nil, fmt.Errorf("%w: token has no subject", auth.ErrInvalidToken)
	}
	if t.Expiry.IsZero() {
		return nil, fmt.Errorf("%w: token has no expiry", auth.ErrInvalidToken)
	}
	var claims struct {
		Scope string   `json:"scope"`
		Scp   []string `json:"scp"`
	}
	// A token whose scope claim has an unexpected shape is not refused
	// here; it simply grants no scopes.
	_ = t.Claims(&claims)
	scopes := append(strings.Fields(claims.Scope), claims.Scp...)
	return &auth.TokenInfo{
		UserID:     t.Subject,
		Expiration: t.Expiry,
		Scopes:     scopes,
		Extra:      map[string]any{"iss": t.Issuer},
	}, nil
}

// Protect wraps the MCP endpoint: requests without a valid token are refused
// with 401 and a challenge naming the metadata URL; valid ones reach h with
// the token's auth.TokenInfo in their context.
func (r *Resource) Protect(h http.Handler) http.Handler {
	return auth.RequireBearerToken(r.Verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: r.metadataURL,
		Scopes:              r.cfg.Scopes,
	})(h)
}

// Mount serves the protected resource metadata on mux.
func (r *Resource) Mount(mux *http.ServeMux) {
	h := auth.ProtectedResourceMetadataHandler(r.metadata)
	for _, p := range r.metaPaths {
		mux.Handle(p, h)
	}
}

// MetadataURL is where clients find this resource's metadata.
func (r *Resource) MetadataURL() string { return r.metadataURL }

// Issuer is the issuer tokens must name.
func (r *Resource) Issuer() string { return r.issuer }

func isLoopbackIP(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
