package proxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A grants: entry in the policy file, through the proxy, in front of the
// real npm filesystem server: the user approves one write with "paths
// under tmp/, 15 minutes, 3 uses"; two more writes under tmp/ run without
// asking, the fourth asks, and a write elsewhere asks all along.
func TestFSStandingGrant(t *testing.T) {
	dir, up := fsUpstream(t)
	tmp := filepath.Join(dir, "tmp") + "/"
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	// write_file overwrites: irreversible by upstream's annotations, so it
	// offers grants only when named (TestFSStandingGrantNotNamed).
	pol := mustPolicy(t, fmt.Sprintf(`allow_grants_for: [write_file]
tools:
  write_file:
    grants:
      max_ttl: 1h
      max_uses: 3
      client_relayed: true
      scopes:
        - {words: "paths under %[1]s", cel: 'args.path.startsWith(%[1]q) && !args.path.contains("..")'}
`, tmp))
	s := newProxy(t, up, pol)
	var asked atomic.Int32
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if asked.Add(1) > 1 {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		if !strings.Contains(r.Params.Message, "paths under "+tmp) {
			t.Errorf("the prompt does not show the scope: %s", r.Params.Message)
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-2-1"}}, nil
	}})
	write := func(p string) *mcp.CallToolResult {
		return call(t, cs, "write_file", map[string]any{"path": p, "content": "x"})
	}
	for i, name := range []string{"a.txt", "b.txt", "c.txt"} {
		if res := write(tmp + name); res.IsError {
			t.Fatalf("write %s: %s", name, text(res))
		}
		if readFile(t, tmp+name) != "x" {
			t.Fatalf("%s not written", name)
		}
		if asked.Load() != 1 {
			t.Fatalf("after write %d: asked %d times, want 1", i+1, asked.Load())
		}
	}
	if res := write(tmp + "d.txt"); reasonOf(t, res) != mcpsafe.ReasonDeclined || asked.Load() != 2 {
		t.Fatalf("the fourth write: %s (asked %d)", text(res), asked.Load())
	}
	if _, err := os.Stat(tmp + "d.txt"); !os.IsNotExist(err) {
		t.Fatalf("the declined fourth write happened: %v", err)
	}
	if res := write(filepath.Join(dir, "outside.txt")); reasonOf(t, res) != mcpsafe.ReasonDeclined || asked.Load() != 3 {
		t.Fatalf("a write outside the scope: %s (asked %d)", text(res), asked.Load())
	}
}

// Without allow_grants_for, an irreversible upstream tool offers no grant,
// and an answer choosing one is refused: nothing is written.
func TestFSStandingGrantNotNamed(t *testing.T) {
	dir, up := fsUpstream(t)
	pol := mustPolicy(t, "tools:\n  write_file:\n    grants: {max_ttl: 1h, max_uses: 3, client_relayed: true}\n")
	s := newProxy(t, up, pol)
	var schema atomic.Value
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		schema.Store(fmt.Sprint(r.Params.RequestedSchema))
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-1-1"}}, nil
	}})
	p := filepath.Join(dir, "a.txt")
	if res := call(t, cs, "write_file", map[string]any{"path": p, "content": "x"}); reasonOf(t, res) != mcpsafe.ReasonDeclined {
		t.Fatalf("want declined, got %s", text(res))
	}
	if sc, _ := schema.Load().(string); strings.Contains(sc, "grant") {
		t.Fatalf("an unnamed irreversible tool offers grants: %s", sc)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("written although refused: %v", err)
	}
}
