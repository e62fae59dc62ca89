package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/mcpsafe/mcpsafe/internal/oidctest"
	"github.com/mcpsafe/mcpsafe/internal/slowhttp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/oauth2-proxy/mockoidc"
)

// These tests run `mcpsafe files --http` as an OAuth resource server in
// front of a real OIDC provider (internal/oidctest: mockoidc, started in
// this process, serving discovery, JWKS, authorize and token endpoints over
// real HTTP). Every token below comes from its authorization-code flow
// (with PKCE), except the forgeries, which are built from a real token's
// claims the way an attacker would.

// audience is the public URL the server would have behind a TLS front; the
// binary itself listens on a random port of every interface.
const audience = "https://mcp.test/mcp"

// authServer is one `mcpsafe files --http` process with authentication.
type authServer struct {
	url, root, journal string
}

func startAuthServer(t *testing.T, extra ...string) *authServer {
	t.Helper()
	base := t.TempDir()
	s := &authServer{root: filepath.Join(base, "root"), journal: filepath.Join(base, "journal.jsonl")}
	must(t, os.Mkdir(s.root, 0o755))
	args := append([]string{"files", "--root", s.root, "--journal", s.journal,
		"--mode", "token", "--allow-token-for", "delete_file"}, extra...)
	s.url = startBinary(t, args...)
	return s
}

// bannerRE finds the URL a server prints once it listens: the MCP endpoint
// of files and proxy, the base URL of the approval service.
var bannerRE = regexp.MustCompile(`(?:serving MCP on|listening on) (http://[^\s/]+(?:/mcp)?)`)

// startBinary runs the binary with args and returns the URL it prints.
func startBinary(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	stderr, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	must(t, cmd.Start())
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	var log strings.Builder
	var logMu sync.Mutex
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := bannerRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case u := <-found:
		// The server listens on every interface; reach it on loopback.
		return strings.Replace(strings.Replace(u, "[::]", "127.0.0.1", 1), "0.0.0.0", "127.0.0.1", 1)
	case <-time.After(20 * time.Second):
		logMu.Lock()
		defer logMu.Unlock()
		t.Fatalf("server did not start: %s", log.String())
		return ""
	}
}

// bearer adds a fixed Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func connectWithToken(serverURL, token string) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "auth-e2e", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: serverURL, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{token}},
		}, nil)
}

// rawCall posts one JSON-RPC message with the given Authorization header
// (none if empty) and returns the response and its body.
func rawCall(t *testing.T, serverURL, authz string) (*http.Response, string) {
	t.Helper()
	return rawSessionCall(t, serverURL, authz, "")
}

func rawSessionCall(t *testing.T, serverURL, authz, session string) (*http.Response, string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	req, _ := http.NewRequest(http.MethodPost, serverURL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func journalPrincipals(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct{ Principal string }
		must(t, json.Unmarshal([]byte(line), &r))
		out = append(out, r.Principal)
	}
	return out
}

// A valid token from the issuer opens the server; its subject is the
// principal bound into the approval, so another user's valid token cannot
// redeem it.
func TestHTTPAuthValidTokenNamesThePrincipal(t *testing.T) {
	p := oidctest.Start(t, nil, audience)
	s := startAuthServer(t, "--http", "0.0.0.0:0", "--auth-issuer", p.Issuer(), "--auth-audience", audience)
	must(t, os.WriteFile(filepath.Join(s.root, "a.txt"), []byte("a"), 0o644))

	alice, err := connectWithToken(s.url, p.Token(t, "alice"))
	if err != nil {
		t.Fatalf("alice's valid token was refused: %v", err)
	}
	defer alice.Close()
	res := call(t, alice, "delete_file", map[string]any{"path": "a.txt"})
	tok := tokenOf(t, res)

	// Attack: bob, authenticated just as well, presents alice's approval.
	bob, err := connectWithToken(s.url, p.Token(t, "bob"))
	if err != nil {
		t.Fatalf("bob's valid token was refused: %v", err)
	}
	defer bob.Close()
	res = call(t, bob, "delete_file", map[string]any{"path": "a.txt", "approval_token": tok})
	if !res.IsError || content(t, filepath.Join(s.root, "a.txt")) != "a" {
		t.Fatalf("bob redeemed alice's approval: %v", res.Content)
	}
	// Control: alice redeems her own.
	res = call(t, alice, "delete_file", map[string]any{"path": "a.txt", "approval_token": tok})
	if res.IsError || content(t, filepath.Join(s.root, "a.txt")) != "<missing>" {
		t.Fatalf("alice could not redeem her approval: %v", res.Content)
	}
	var sawAlice, sawBob bool
	for _, pr := range journalPrincipals(t, s.journal) {
		switch pr {
		case "user:alice":
			sawAlice = true
		case "user:bob":
			sawBob = true
		case "anonymous", "":
			t.Errorf("journal names an authenticated caller %q", pr)
		}
	}
	if !sawAlice || !sawBob {
		t.Fatalf("journal principals %v: want user:alice and user:bob (the tokens' subjects)", journalPrincipals(t, s.journal))
	}
}

// A stateful session belongs to the subject that opened it: another user's
// valid token cannot ride on its id (and so on its pending in-call
// approvals); the owner's can.
func TestHTTPAuthSessionStaysWithItsUser(t *testing.T) {
	p := oidctest.Start(t, nil, audience)
	s := startAuthServer(t, "--http", "0.0.0.0:0", "--http-stateful", "--auth-issuer", p.Issuer(), "--auth-audience", audience)
	aliceToken := p.Token(t, "alice")
	alice, err := connectWithToken(s.url, aliceToken)
	must(t, err)
	defer alice.Close()
	if alice.ID() == "" {
		t.Fatal("no session id: the server is not stateful")
	}
	if resp, body := rawSessionCall(t, s.url, "Bearer "+p.Token(t, "bob"), alice.ID()); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("bob on alice's session: %d %q, want 403", resp.StatusCode, body)
	}
	if resp, body := rawSessionCall(t, s.url, "Bearer "+aliceToken, alice.ID()); resp.StatusCode != http.StatusOK {
		t.Fatalf("control: alice on her session: %d %q", resp.StatusCode, body)
	}
}

// Every token that is not a valid token of this issuer for this resource is
// refused with 401 and a challenge; the control (a valid token) passes the
// same raw request.
func TestHTTPAuthRefusesBadTokens(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	p := oidctest.Start(t, key, audience)
	other := oidctest.Start(t, key, audience) // same signing key, different issuer
	s := startAuthServer(t, "--http", "0.0.0.0:0", "--auth-issuer", p.Issuer(), "--auth-audience", audience)

	valid := p.Token(t, "alice")
	if resp, _ := rawCall(t, s.url, "Bearer "+valid); resp.StatusCode != http.StatusOK {
		t.Fatalf("control: a valid token got %d", resp.StatusCode)
	}
	attackerKey, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	must(t, err)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	header, claims := splitJWT(t, valid)
	p.Change(func(m *mockoidc.MockOIDC) { m.ClientID = "https://other.test/mcp" })
	wrongAudience := p.Token(t, "alice")
	p.Change(func(m *mockoidc.MockOIDC) { m.ClientID = audience; m.FastForward(-2 * time.Hour) })
	expired := p.Token(t, "alice")
	p.Change(func(m *mockoidc.MockOIDC) { m.FastForward(2 * time.Hour) })

	cases := []struct{ name, authz, why string }{
		{"missing", "", "no bearer token"},
		{"not bearer", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pw")), "no bearer token"},
		{"garbage", "Bearer not-a-jwt", "malformed jwt"},
		{"wrong audience", "Bearer " + wrongAudience, "expected audience"},
		{"expired", "Bearer " + expired, "token is expired"},
		{"wrong issuer, same key", "Bearer " + other.Token(t, "alice"), "issued by a different provider"},
		{"payload changed after signing", "Bearer " + tamper(t, valid, map[string]any{"sub": "root"}), "failed to verify"},
		{"signed by another key", "Bearer " + resign(t, claims, attackerKey, header["kid"].(string)), "failed to verify"},
		{"alg none", "Bearer " + unsigned(t, claims, header["kid"].(string)), "unexpected signature algorithm \"none\""},
		{"HS256 with the public key as secret", "Bearer " + hmacSigned(t, claims, pubPEM), "unexpected signature algorithm \"HS256\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := rawCall(t, s.url, tc.authz)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, tc.why) {
				t.Fatalf("status %d, body %q; want 401 because %q", resp.StatusCode, body, tc.why)
			}
			want := `resource_metadata="https://mcp.test/.well-known/oauth-protected-resource/mcp"`
			if got := resp.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer ") || !strings.Contains(got, want) {
				t.Fatalf("WWW-Authenticate %q, want a Bearer challenge with %s", got, want)
			}
		})
	}
	// The metadata the challenge points at (RFC 9728) names this resource
	// and its issuer.
	resp, err := http.Get(strings.TrimSuffix(s.url, "/mcp") + "/.well-known/oauth-protected-resource/mcp")
	must(t, err)
	defer resp.Body.Close()
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	must(t, json.NewDecoder(resp.Body).Decode(&meta))
	if meta.Resource != audience || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != p.Issuer() {
		t.Fatalf("protected resource metadata %+v", meta)
	}
}

func splitJWT(t *testing.T, tok string) (header, claims map[string]any) {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWS: %q", tok)
	}
	for i, dst := range []*map[string]any{&header, &claims} {
		b, err := base64.RawURLEncoding.DecodeString(parts[i])
		must(t, err)
		must(t, json.Unmarshal(b, dst))
	}
	return header, claims
}

func b64json(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return base64.RawURLEncoding.EncodeToString(b)
}

// tamper replaces claims in a signed token and keeps the old signature.
func tamper(t *testing.T, tok string, set map[string]any) string {
	t.Helper()
	_, claims := splitJWT(t, tok)
	for k, v := range set {
		claims[k] = v
	}
	parts := strings.Split(tok, ".")
	return parts[0] + "." + b64json(t, claims) + "." + parts[2]
}

// resign signs claims with key, claiming the issuer's key id.
func resign(t *testing.T, claims map[string]any, key *rsa.PrivateKey, kid string) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	must(t, err)
	b, err := json.Marshal(claims)
	must(t, err)
	jws, err := signer.Sign(b)
	must(t, err)
	out, err := jws.CompactSerialize()
	must(t, err)
	return out
}

func unsigned(t *testing.T, claims map[string]any, kid string) string {
	return b64json(t, map[string]any{"alg": "none", "typ": "JWT", "kid": kid}) + "." + b64json(t, claims) + "."
}

func hmacSigned(t *testing.T, claims map[string]any, secret []byte) string {
	input := b64json(t, map[string]any{"alg": "HS256", "typ": "JWT"}) + "." + b64json(t, claims)
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(input))
	return input + "." + base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// A non-loopback --http without authentication is refused at startup, for
// files and proxy alike; with authentication it starts (the tests above),
// and loopback without authentication still starts.
func TestHTTPNonLoopbackNeedsAuth(t *testing.T) {
	root := t.TempDir()
	j := filepath.Join(t.TempDir(), "j.jsonl")
	for _, args := range [][]string{
		{"files", "--root", root, "--journal", j, "--http", "0.0.0.0:0"},
		{"files", "--root", root, "--journal", j, "--http", ":0"},
		{"proxy", "--journal", j, "--http", "0.0.0.0:0", "--", "true"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, binary, args...).CombinedOutput()
		cancel()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "needs authentication") {
			t.Errorf("%v: err %v, output %q; want exit 2 naming the missing authentication", args, err, out)
		}
	}
	// Control: loopback without authentication serves.
	u := startBinary(t, "files", "--root", root, "--journal", j, "--http", "127.0.0.1:0")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "loopback", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: u, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("loopback without auth: %v", err)
	}
	cs.Close()
}

// A stranger's body is not read: the server answers 401 at once instead of
// buffering (or waiting for) what an unauthenticated client sends, and the
// connection is still cut off once the body timeout passes, whether
// net/http would discard the rest (a small body) or not (a large one).
func TestHTTPAuthRefusesBeforeReadingTheBody(t *testing.T) {
	p := oidctest.Start(t, nil, audience)
	s := startAuthServer(t, "--http", "0.0.0.0:0", "--auth-issuer", p.Issuer(), "--auth-audience", audience, "--http-body-timeout", "500ms")
	u, err := url.Parse(s.url)
	must(t, err)
	mcpHeaders := slowhttp.Header("Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-11-25")
	for _, size := range []int{100_000, 3_000_000} {
		r, err := slowhttp.Trickle(u.Host, "/mcp", size, 50*time.Millisecond, 20*time.Second, mcpHeaders)
		must(t, err)
		if r.Code != http.StatusUnauthorized || !r.Closed {
			t.Fatalf("unauthenticated slow body of %d bytes: %+v; want 401 and a closed connection", size, r)
		}
	}
	// Control: with a token, the same trickle is read, so it is the body
	// timeout that ends it.
	r, err := slowhttp.Trickle(u.Host, "/mcp", 100_000, 50*time.Millisecond, 20*time.Second,
		mcpHeaders+slowhttp.Header("Authorization", "Bearer "+p.Token(t, "alice")))
	must(t, err)
	if r.Code != http.StatusRequestTimeout || !r.Closed {
		t.Fatalf("authenticated slow body: %+v; want 408 and a closed connection", r)
	}
}
