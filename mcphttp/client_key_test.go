package mcphttp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Per-client caps key a caller by what it cannot vary at will: its token's
// subject, its IPv4 address, its IPv6 /64; never the port.
func TestClientKey(t *testing.T) {
	cases := []struct{ remote, user, want string }{
		{"192.0.2.7:1000", "", "addr 192.0.2.7"},
		{"192.0.2.7:2000", "", "addr 192.0.2.7"},
		{"192.0.2.8:1000", "", "addr 192.0.2.8"},
		{"[2001:db8:1:2::1]:1000", "", "addr 2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::9]:3000", "", "addr 2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:1000", "", "addr 2001:db8:1:3::/64"},
		{"[::ffff:192.0.2.7]:1000", "", "addr ::ffff:192.0.2.7"},
		{"192.0.2.7:1000", "alice", "user alice"},
		{"192.0.2.8:1000", "alice", "user alice"},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("POST", "/mcp", nil)
		r.RemoteAddr = tc.remote
		got := clientKey(r)
		if tc.user != "" {
			// The SDK's middleware is the only way a TokenInfo gets into
			// a request's context.
			r.Header.Set("Authorization", "Bearer t")
			verify := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
				return &auth.TokenInfo{UserID: tc.user, Expiration: time.Now().Add(time.Hour)}, nil
			}
			got = ""
			auth.RequireBearerToken(verify, nil)(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got = clientKey(r)
			})).ServeHTTP(httptest.NewRecorder(), r)
		}
		if got != tc.want {
			t.Errorf("%s (user %q): %q, want %q", tc.remote, tc.user, got, tc.want)
		}
	}
}

// Only an initialize request (or what the SDK cannot decode) reserves a
// session slot; the SDK's own decoder decides.
func TestMayInitialize(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, false},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false},
		{`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, true},
		{`not json`, true},
		{``, true},
	} {
		if got := mayInitialize([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.body, got, tc.want)
		}
	}
}
