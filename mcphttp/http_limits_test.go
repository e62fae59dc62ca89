package mcphttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/internal/slowhttp"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoLen answers with the length of the body it was given.
var echoLen = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "got %d bytes", len(b))
})

func serveLimited(t *testing.T, h http.Handler, bodyTimeout time.Duration, maxBody int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := mcphttp.NewHTTPServer(h, time.Second, bodyTimeout, maxBody)
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// A client that sends its body one byte at a time is cut off with 408 and a
// closed connection once the body timeout passes; the same request sent at
// once is served.
func TestLimitBodiesCutsOffSlowBody(t *testing.T) {
	addr := serveLimited(t, echoLen, 300*time.Millisecond, 1<<20)
	r, err := slowhttp.Trickle(addr, "/", 100_000, 50*time.Millisecond, 20*time.Second, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Code != http.StatusRequestTimeout || !r.Closed {
		t.Fatalf("slow body: %+v; want 408 and a closed connection", r)
	}
	// Control: the same size, sent at once.
	resp, err := http.Post("http://"+addr+"/", "application/json", strings.NewReader(strings.Repeat(" ", 100_000)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "got 100000 bytes" {
		t.Fatalf("control: %d %q", resp.StatusCode, b)
	}
}

// Once the body is in, the deadline is lifted: a handler that then waits
// (an elicitation, a long poll, an SSE stream) keeps its request alive past
// the body timeout, in the buffered form and when the handler reads the
// body itself. Control: the same wait with the deadline left in place ends
// the request.
func TestBodyDeadlineLiftedAfterBody(t *testing.T) {
	const timeout = 200 * time.Millisecond
	wait := func(keep bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			if keep { // put the deadline back, as if it had never been lifted
				http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(5 * timeout):
			}
			io.WriteString(w, "alive")
		})
	}
	for _, tc := range []struct {
		name string
		h    http.Handler
		want string
	}{
		{"buffered", mcphttp.LimitBodies(wait(false), timeout, 1<<20), "alive"},
		{"read by the handler", mcphttp.BodyDeadline(wait(false), timeout), "alive"},
		{"control: deadline kept", mcphttp.BodyDeadline(wait(true), timeout), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			hs := &http.Server{Handler: tc.h}
			go hs.Serve(ln)
			defer hs.Close()
			resp, err := http.Post("http://"+ln.Addr().String()+"/", "application/json", strings.NewReader("{}"))
			got := ""
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got = string(b)
			}
			if got != tc.want {
				t.Fatalf("got %q (err %v), want %q", got, err, tc.want)
			}
		})
	}
}

// A body over the cap is refused with 413, however it is framed; a body at
// the cap is served.
func TestLimitBodiesRefusesOversizedBody(t *testing.T) {
	const max = 1000
	addr := serveLimited(t, echoLen, 5*time.Second, max)
	for _, tc := range []struct {
		name    string
		size    int
		chunked bool
		want    int
	}{
		{"at the cap", max, false, http.StatusOK},
		{"one over", max + 1, false, http.StatusRequestEntityTooLarge},
		{"chunked, one over", max + 1, true, http.StatusRequestEntityTooLarge},
		{"chunked, at the cap", max, true, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(strings.Repeat("x", tc.size))
			if tc.chunked {
				body = io.MultiReader(body) // unknown length: chunked encoding
			}
			resp, err := http.Post("http://"+addr+"/", "application/json", body)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// filesOver starts a files server (token mode) behind the MCP handler and
// returns its URL and root. The gate reads the caller's address where the
// handler puts it, as the CLI's gate does.
func filesOver(t *testing.T, web mcphttp.HTTP, gate mcpsafe.Options) (string, *mcp.Server) {
	t.Helper()
	root := t.TempDir()
	for _, n := range []string{"a", "b", "c", "d"} {
		if err := os.WriteFile(filepath.Join(root, n+".txt"), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gate.Audience = "limits-test"
	gate.Mode = mcpsafe.ModeToken
	gate.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_file"}}
	gate.Journal = journal.Discard
	gate.ClientAddrHeader = mcphttp.ClientAddrHeader
	srv, err := files.NewServer(context.Background(), files.Config{Roots: []string{root}, Gate: gate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(web.MCPHandler(srv.MCP))
	t.Cleanup(hs.Close)
	return hs.URL, srv.MCP
}

// from returns an HTTP client whose connections come from the loopback
// address ip (another host, as far as the server can tell) and that adds
// header to every request.
func from(ip string, header http.Header) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: addHeader{&http.Transport{DialContext: d.DialContext}, header}}
}

type addHeader struct {
	rt http.RoundTripper
	h  http.Header
}

func (a addHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range a.h {
		r.Header[k] = v
	}
	return a.rt.RoundTrip(r)
}

func connect(url string, c *http.Client) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "limits", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: c, MaxRetries: -1}, nil)
}

// closeAtEnd closes cs when the test ends, before the server stops (the
// server waits for the session's open stream).
func closeAtEnd(t *testing.T, cs *mcp.ClientSession) *mcp.ClientSession {
	t.Cleanup(func() { cs.Close() })
	return cs
}

func status(t *testing.T, cs *mcp.ClientSession, path string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": path}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &m)
	if m["status"] == "refused" {
		return "refused:" + fmt.Sprint(m["reason"])
	}
	return fmt.Sprint(m["status"])
}

// Unauthenticated callers share one principal, but not one pending bucket:
// a client that fills its allowance (and forges the address header to get
// more) leaves the others theirs.
func TestAnonymousClientsHaveTheirOwnPendingAllowance(t *testing.T) {
	url, _ := filesOver(t, mcphttp.HTTP{}, mcpsafe.Options{MaxPendingPerPrincipal: 2})
	forged := http.Header{mcphttp.ClientAddrHeader: {"forged"}}
	greedy, err := connect(url, from("127.0.0.1", forged))
	if err != nil {
		t.Fatal(err)
	}
	defer greedy.Close()
	for _, p := range []string{"a.txt", "b.txt"} {
		if got := status(t, greedy, p); got != "approval_required" {
			t.Fatalf("greedy client, %s: %s", p, got)
		}
	}
	if got := status(t, greedy, "c.txt"); got != "refused:too_many_pending" {
		t.Fatalf("greedy client over its allowance: %s, want refused:too_many_pending", got)
	}
	// Another client (another address) still gets its approvals.
	other, err := connect(url, from("127.0.0.2", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if got := status(t, other, "c.txt"); got != "approval_required" {
		t.Fatalf("another anonymous client was starved: %s", got)
	}
}

// Stateful sessions are capped per client and in all, and a closed session
// frees its slot; other clients are not locked out by one that hit its cap.
func TestSessionCaps(t *testing.T) {
	url, _ := filesOver(t, mcphttp.HTTP{Stateful: true, MaxSessions: 3, MaxSessionsPerClient: 2}, mcpsafe.Options{})
	a := from("127.0.0.1", nil)
	var open []*mcp.ClientSession
	for i := range 2 {
		cs, err := connect(url, a)
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		open = append(open, closeAtEnd(t, cs))
	}
	if cs, err := connect(url, a); err == nil {
		cs.Close()
		t.Fatal("a third session for one client was opened; the per-client cap is 2")
	}
	// Control: another client still gets one, and then the server is full.
	b, err := connect(url, from("127.0.0.2", nil))
	if err != nil {
		t.Fatalf("another client was locked out: %v", err)
	}
	closeAtEnd(t, b)
	if cs, err := connect(url, from("127.0.0.3", nil)); err == nil {
		cs.Close()
		t.Fatal("a fourth session was opened; the cap is 3")
	}
	// Closing a session (DELETE) frees its slot.
	open[0].Close()
	waitFor(t, "a closed session frees its slot", func() bool {
		cs, err := connect(url, a)
		if err == nil {
			closeAtEnd(t, cs)
		}
		return err == nil
	})
}

// An idle stateful session is closed by the server, and its slot freed.
func TestIdleSessionsExpire(t *testing.T) {
	url, server := filesOver(t, mcphttp.HTTP{Stateful: true, SessionIdle: 200 * time.Millisecond, MaxSessionsPerClient: 1}, mcpsafe.Options{})
	c := from("127.0.0.1", nil)
	cs, err := connect(url, c)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("control: a fresh session works: %v", err)
	}
	// Once idle past the timeout the session is gone (watched on the
	// server: a request would count as activity), the client's requests on
	// it fail, and its only slot is free again.
	waitFor(t, "the idle session is closed", func() bool {
		n := 0
		for range server.Sessions() {
			n++
		}
		return n == 0
	})
	if _, err := cs.ListTools(context.Background(), nil); err == nil {
		t.Fatal("the expired session still answers")
	}
	waitFor(t, "the expired session frees its slot", func() bool {
		cs2, err := connect(url, c)
		if err == nil {
			cs2.Close()
		}
		return err == nil
	})
}

// waitFor polls cond until it holds, failing after a bound far above what
// any of the conditions above should take.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
