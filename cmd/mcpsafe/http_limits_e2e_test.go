package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/slowhttp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every HTTP server of the binary (files --http, proxy --http, approvals
// serve) cuts off a client that trickles its request body, with 408 and a
// closed connection, once the body timeout passes; the same request sent at
// once is answered. The clients are raw TCP connections.
func TestHTTPServersCutOffSlowBodies(t *testing.T) {
	root := t.TempDir()
	j := filepath.Join(t.TempDir(), "j.jsonl")
	up := mcp.NewServer(&mcp.Implementation{Name: "upstream"}, nil)
	upstream := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(upstream.Close)
	sf, af := approvalsFiles(t)

	const mcpBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	mcpHeaders := slowhttp.Header("Accept", "application/json, text/event-stream", "Mcp-Protocol-Version", "2025-11-25")
	cases := []struct {
		name    string
		args    []string
		path    string
		headers func(base string) string
		body    string
		control int // the status of the same request sent at once
	}{
		{"files", []string{"files", "--root", root, "--journal", j, "--http", "127.0.0.1:0", "--http-body-timeout", "500ms"},
			"/mcp", func(string) string { return mcpHeaders }, mcpBody, http.StatusOK},
		{"proxy", []string{"proxy", "--journal", j, "--http", "127.0.0.1:0", "--http-body-timeout", "500ms", "--upstream-url", upstream.URL},
			"/mcp", func(string) string { return mcpHeaders }, mcpBody, http.StatusOK},
		// The login form reads its body after the origin check; a wrong
		// password is the answer to a body that arrived.
		{"approvals serve", []string{"approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af, "--body-timeout", "500ms"},
			"/login", func(base string) string {
				return slowhttp.Header("Origin", base, "Content-Type", "application/x-www-form-urlencoded")
			}, "name=alice&password=wrong-password-000000", http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := url.Parse(startBinary(t, tc.args...))
			must(t, err)
			base := u.Scheme + "://" + u.Host
			r, err := slowhttp.Trickle(u.Host, tc.path, 100_000, 50*time.Millisecond, 20*time.Second, tc.headers(base))
			must(t, err)
			if r.Code != http.StatusRequestTimeout || !r.Closed {
				t.Fatalf("slow body: %+v; want 408 and a closed connection", r)
			}
			// Control: the request, sent at once.
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, base+tc.path, strings.NewReader(tc.body))
			must(t, err)
			for _, line := range strings.Split(strings.TrimSpace(tc.headers(base)), "\r\n") {
				k, v, _ := strings.Cut(line, ": ")
				req.Header.Set(k, v)
			}
			if req.Header.Get("Content-Type") == "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			resp.Body.Close()
			if resp.StatusCode != tc.control {
				t.Fatalf("control: status %d, want %d", resp.StatusCode, tc.control)
			}
		})
	}
}

// A body over the cap is refused with 413 by the binary's MCP server; the
// same message within the cap is served.
func TestHTTPServerRefusesOversizedBody(t *testing.T) {
	u := startBinary(t, "files", "--root", t.TempDir(), "--journal", filepath.Join(t.TempDir(), "j.jsonl"),
		"--http", "127.0.0.1:0", "--http-max-body", "4096")
	post := func(pad int) int {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"pad":"` + strings.Repeat("x", pad) + `"}}}`
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := post(1000); c != http.StatusOK {
		t.Fatalf("control: a 1 KB message got %d", c)
	}
	if c := post(8000); c != http.StatusRequestEntityTooLarge {
		t.Fatalf("an 8 KB message over a 4 KiB cap got %d, want 413", c)
	}
}
