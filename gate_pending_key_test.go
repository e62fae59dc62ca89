package mcpsafe_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type withHeader struct {
	name, value string
}

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

func httpClient(t *testing.T, url string, rt http.RoundTripper) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

var renameArgs = map[string]any{"from": "todo.txt", "to": "done.txt"}

// Over stateful HTTP without authentication, every caller is "anonymous",
// but each server-issued session has its own pending allowance: one session
// that fills its allowance does not starve another.
func TestAnonymousSessionsHaveTheirOwnPendingAllowance(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.MaxPendingPerPrincipal = 1 })
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, nil))
	t.Cleanup(hs.Close) // after the clients' cleanups: their streams end first
	greedy := httpClient(t, hs.URL, http.DefaultTransport)
	token(t, callTool(t, greedy, "rename_note", renameArgs))
	wantRefused(t, callTool(t, greedy, "rename_note", renameArgs), "too_many_pending")
	// Control: another session still gets its approval.
	token(t, callTool(t, httpClient(t, hs.URL, http.DefaultTransport), "rename_note", renameArgs))
}

// The address header counts only when the server says a trusted front sets
// it: otherwise a client could name a new address on every call and take
// the whole pending capacity.
func TestForgedClientAddrHeaderIsIgnored(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.MaxPendingPerPrincipal = 1 })
	stateless := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, &mcp.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(stateless)
	t.Cleanup(hs.Close)
	token(t, callTool(t, httpClient(t, hs.URL, withHeader{"Mcpsafe-Client-Addr", "10.0.0.1"}), "rename_note", renameArgs))
	wantRefused(t, callTool(t, httpClient(t, hs.URL, withHeader{"Mcpsafe-Client-Addr", "10.0.0.2"}), "rename_note", renameArgs), "too_many_pending")

	// Control: a server that trusts the header (its front sets it) counts
	// each address on its own.
	e2 := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.MaxPendingPerPrincipal = 1
		o.ClientAddrHeader = "Mcpsafe-Client-Addr"
	})
	hs2 := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e2.server }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs2.Close)
	token(t, callTool(t, httpClient(t, hs2.URL, withHeader{"Mcpsafe-Client-Addr", "10.0.0.1"}), "rename_note", renameArgs))
	wantRefused(t, callTool(t, httpClient(t, hs2.URL, withHeader{"Mcpsafe-Client-Addr", "10.0.0.1"}), "rename_note", renameArgs), "too_many_pending")
	token(t, callTool(t, httpClient(t, hs2.URL, withHeader{"Mcpsafe-Client-Addr", "10.0.0.2"}), "rename_note", renameArgs))
}
