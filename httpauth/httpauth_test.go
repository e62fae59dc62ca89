package httpauth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/httpauth"
	"github.com/mcpsafe/mcpsafe/internal/oidctest"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

const resource = "https://mcp.test/mcp"

// Configurations that could not check a token, or would check it against
// the wrong thing, do not start; each has a working twin.
func TestNewRefusesBadConfig(t *testing.T) {
	p := oidctest.Start(t, nil, resource)
	cases := []struct {
		name string
		cfg  httpauth.Config
		want string // "" means it must start
	}{
		{"control", httpauth.Config{Issuer: p.Issuer(), Audience: resource}, ""},
		{"control: explicit JWKS", httpauth.Config{Issuer: p.Issuer(), Audience: resource, JWKSURL: p.JWKSEndpoint()}, ""},
		{"no issuer", httpauth.Config{Audience: resource}, "issuer is required"},
		{"plain http issuer off loopback", httpauth.Config{Issuer: "http://sso.example.com", Audience: resource}, "must use https"},
		{"not a URL", httpauth.Config{Issuer: "sso.example.com", Audience: resource}, "not an absolute URL"},
		{"no audience", httpauth.Config{Issuer: p.Issuer()}, "audience"},
		{"audience is a name, not a URL", httpauth.Config{Issuer: p.Issuer(), Audience: "mcpsafe-files"}, "not the absolute http(s) URL"},
		{"audience with a query", httpauth.Config{Issuer: p.Issuer(), Audience: resource + "?x=1"}, "not the absolute http(s) URL"},
		{"plain http JWKS off loopback", httpauth.Config{Issuer: p.Issuer(), Audience: resource, JWKSURL: "http://sso.example.com/keys"}, "must use https"},
		{"issuer without metadata", httpauth.Config{Issuer: p.Addr() + "/nothing-here", Audience: resource}, "no metadata"},
		{"issuer unreachable", httpauth.Config{Issuer: "http://127.0.0.1:1", Audience: resource}, "issuer http://127.0.0.1:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := httpauth.New(context.Background(), tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// whoami answers with the subject the middleware put in the context.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.WriteString(w, auth.TokenInfoFromContext(r.Context()).UserID)
})

func get(t *testing.T, url, token string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// With --auth-jwks-url the keys come from that set only: a token of the
// issuer is accepted when the set holds its key, and refused when the set
// is another one's, though the issuer's own metadata would have named the
// right keys.
func TestExplicitJWKSIsTheOnlyKeySource(t *testing.T) {
	p := oidctest.Start(t, nil, resource)
	otherKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other := oidctest.Start(t, otherKey, resource)
	token := p.Token(t, "alice")
	for _, tc := range []struct {
		name, jwks string
		want       int
	}{
		{"the issuer's keys", p.JWKSEndpoint(), http.StatusOK},
		{"another provider's keys", other.JWKSEndpoint(), http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := httpauth.New(context.Background(), httpauth.Config{Issuer: p.Issuer(), Audience: resource, JWKSURL: tc.jwks})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(res.Protect(whoami))
			defer hs.Close()
			code, body, _ := get(t, hs.URL, token)
			if code != tc.want || (code == http.StatusOK && body != "alice") {
				t.Fatalf("%d %q, want %d", code, body, tc.want)
			}
		})
	}
}

// The challenge points at the metadata, which is served at the RFC 9728
// location for the resource's path and at the root location, and names
// the resource and its issuer.
func TestProtectedResourceMetadata(t *testing.T) {
	p := oidctest.Start(t, nil, resource)
	res, err := httpauth.New(context.Background(), httpauth.Config{Issuer: p.Issuer(), Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://mcp.test/.well-known/oauth-protected-resource/mcp"; res.MetadataURL() != want {
		t.Fatalf("metadata URL %q, want %q", res.MetadataURL(), want)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", res.Protect(whoami))
	res.Mount(mux)
	hs := httptest.NewServer(mux)
	defer hs.Close()

	code, _, h := get(t, hs.URL+"/mcp", "")
	if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != `Bearer resource_metadata="`+res.MetadataURL()+`"` {
		t.Fatalf("no token: %d, WWW-Authenticate %q", code, h.Get("WWW-Authenticate"))
	}
	if code, body, _ := get(t, hs.URL+"/mcp", p.Token(t, "alice")); code != http.StatusOK || body != "alice" {
		t.Fatalf("control: %d %q", code, body)
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		code, body, _ := get(t, hs.URL+path, "")
		var meta struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &meta) != nil ||
			meta.Resource != resource || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != p.Issuer() {
			t.Fatalf("%s: %d %s", path, code, body)
		}
	}
}
