package proxy

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newProxy starts a proxy in front of upstream with a real journal in a
// temporary directory.
func newProxy(t testing.TB, upstream mcp.Transport, pol *policy.Policy) *Server {
	t.Helper()
	journal := filepath.Join(t.TempDir(), "journal.jsonl")
	s, err := NewServer(context.Background(), Config{
		Upstream:    upstream,
		Policy:      pol,
		Gate:        stores(t, serverconf.Config{JournalPath: journal}),
		JournalPath: journal,
	})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// connect attaches a real SDK client to the proxy in memory.
func connect(t testing.TB, s *Server, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.MCP.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client"}, copts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func mustPolicy(t testing.TB, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test-policy.yaml", []byte(src))
	if err != nil {
		t.Fatalf("policy.Parse: %v", err)
	}
	return p
}

func call(t testing.TB, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func structured(t testing.TB, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func reasonOf(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	r, _ := structured(t, res)["reason"].(string)
	return r
}

func tokenOf(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	m := structured(t, res)
	if m["status"] != "approval_required" {
		t.Fatalf("want approval_required, got %s", text(res))
	}
	return m["approval_token"].(string)
}

func text(res *mcp.CallToolResult) string {
	b, _ := json.Marshal(res)
	return string(b)
}

func answer(action string, approve any) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		r := &mcp.ElicitResult{Action: action}
		if action == "accept" {
			r.Content = map[string]any{"approve": approve}
		}
		return r, nil
	}
}

// fsServerBin finds the npm filesystem server that scripts/npm-deps
// installed. Missing: a loud skip, or a failure when CI=true.
func fsServerBin(t testing.TB) string {
	t.Helper()
	bin, err := filepath.Abs("../.cache/npm/node_modules/.bin/mcp-server-filesystem")
	if err == nil {
		if _, err = os.Stat(bin); err == nil {
			if _, err = exec.LookPath("node"); err == nil {
				return bin
			}
		}
	}
	msg := "!!! @modelcontextprotocol/server-filesystem is not installed (run scripts/npm-deps; needs node and npm): " + err.Error()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// fsUpstream starts the real npm filesystem server confined to a fresh
// directory, which it returns with symlinks resolved (the server reports
// real paths).
func fsUpstream(t testing.TB) (string, mcp.Transport) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir, fsUpstreamIn(t, dir)
}

// fsUpstreamIn starts one more npm filesystem server on dir.
func fsUpstreamIn(t testing.TB, dir string) mcp.Transport {
	t.Helper()
	cmd := exec.Command(fsServerBin(t), dir)
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	return &mcp.CommandTransport{Command: cmd}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t testing.TB, p, body string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func serverconfFor(journalPath string) serverconf.Config {
	return serverconf.Config{JournalPath: journalPath}
}

// stores opens the gate's stores as cmd/mcpsafe does (internal/serverconf)
// and closes them after the test (with t nil, a helper process: at its
// exit). An empty audience stays empty, for the proxy to derive.
func stores(t testing.TB, gc serverconf.Config) mcpsafe.Options {
	aud := gc.Audience
	if aud == "" {
		gc.Audience = "mcpsafe-test-stores"
	}
	g, err := serverconf.Build(context.Background(), gc)
	if err != nil {
		if t == nil {
			panic(err)
		}
		t.Fatalf("serverconf.Build: %v", err)
	}
	if t != nil {
		t.Cleanup(func() { g.Close() })
	}
	g.Options.Audience = aud
	return g.Options
}
