package proxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A proxy built as a library, from plain mcpsafe.Options (no
// Options.GrantCEL), still evaluates its policy's grant scopes: the policy
// reads them as CEL, so the proxy brings the evaluator. The scope covers a
// write under tmp/ without asking, and not one outside it (control).
func TestGrantScopesWithPlainOptions(t *testing.T) {
	dir, up := fsUpstream(t)
	tmp := filepath.Join(dir, "tmp") + "/"
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := mustPolicy(t, fmt.Sprintf(`allow_grants_for: [write_file]
tools:
  write_file:
    grants:
      max_ttl: 1h
      max_uses: 3
      client_relayed: true
      scopes:
        - {words: "paths under %[1]s", cel: 'args.path.startsWith(%[1]q)'}
`, tmp))
	s, err := NewServer(context.Background(), Config{Upstream: up, Policy: pol, Gate: mcpsafe.Options{Journal: journal.Discard}})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	var asked atomic.Int32
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if asked.Add(1) > 1 {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-2-1"}}, nil
	}})
	for _, name := range []string{"a.txt", "b.txt"} {
		if res := call(t, cs, "write_file", map[string]any{"path": tmp + name, "content": "x"}); res.IsError {
			t.Fatalf("write %s: %s", name, text(res))
		}
	}
	if asked.Load() != 1 {
		t.Fatalf("asked %d times, want 1: the scope did not cover the second write", asked.Load())
	}
	res := call(t, cs, "write_file", map[string]any{"path": filepath.Join(dir, "outside.txt"), "content": "x"})
	if reasonOf(t, res) != mcpsafe.ReasonDeclined || asked.Load() != 2 {
		t.Fatalf("a write outside the scope: %s (asked %d)", text(res), asked.Load())
	}
}
