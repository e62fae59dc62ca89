package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// grantingClient connects to a stdio gateway with an elicitation handler
// that approves the first call with choice and declines every later ask;
// it counts the asks.
func grantingClient(t *testing.T, config, choice string) (*mcp.ClientSession, *atomic.Int32, *lockedBuffer, func(string)) {
	t.Helper()
	var asked atomic.Int32
	cmd, stderr := gatewayCmd(t, config)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if asked.Add(1) > 1 {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": choice}}, nil
	}}).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	n := 0
	reload := func(body string) {
		n++
		reloadWith(t, cmd, stderr, config, body, n)
	}
	return cs, &asked, stderr, reload
}

// Through the built gateway: the operator narrows a standing grant's scope
// from paths under /data/ to paths under /data/tmp/ and reloads. The grant
// an approver made under the wider scope is void: /data/c asks again (and
// is declined), nothing runs. Control: a reload that changes another tool's
// policy only leaves the grant covering calls.
func TestGatewayReloadNarrowedScopeVoidsGrant(t *testing.T) {
	url, touched := goHTTPUpstream(t)
	config := filepath.Join(t.TempDir(), "gateway.yaml")
	body := func(prefix, look string) string {
		return fmt.Sprintf(`servers:
  web:
    url: %s
    policy:
      allow_grants_for: [touch]
      tools:
%s        touch:
          grants:
            max_ttl: 1h
            max_uses: 20
            client_relayed: true
            scopes:
              - {words: "paths under %s", cel: 'args.path.startsWith(%q) && !args.path.contains("..")'}
`, url, look, prefix, prefix)
	}
	must(t, os.WriteFile(config, []byte(body("/data/", "")), 0o644))
	// grant-2-2: "paths under /data/", 1 hour, 20 uses.
	cs, asked, _, reload := grantingClient(t, config, "grant-2-2")
	touch := func(p string) *mcp.CallToolResult {
		return call(t, cs, "web__touch", map[string]any{"path": p})
	}
	if res := touch("/data/a"); res.IsError || touched.Load() != 1 || asked.Load() != 1 {
		t.Fatalf("the approved call: %+v (asked %d)", res.Content, asked.Load())
	}
	if res := touch("/data/b"); res.IsError || touched.Load() != 2 || asked.Load() != 1 {
		t.Fatalf("a call the grant covers: %+v (asked %d)", res.Content, asked.Load())
	}
	// Control: an unrelated change (look gated) keeps the grant.
	reload(body("/data/", "        look:\n          gate: true\n"))
	if res := touch("/data/b2"); res.IsError || touched.Load() != 3 || asked.Load() != 1 {
		t.Fatalf("after an unrelated reload the grant no longer covers: %+v (asked %d)", res.Content, asked.Load())
	}
	// Attack: the scope narrowed.
	reload(body("/data/tmp/", "        look:\n          gate: true\n"))
	res := touch("/data/c")
	if reasonOf(t, res) != "declined" || touched.Load() != 3 || asked.Load() != 2 {
		t.Fatalf("a grant made under the wider scope still covers /data/c after the reload narrowed it (%d runs, asked %d): %+v", touched.Load(), asked.Load(), res.Content)
	}
	// It is void, not only narrowed: /data/tmp/x asks too.
	res = touch("/data/tmp/x")
	if reasonOf(t, res) != "declined" || touched.Load() != 3 || asked.Load() != 3 {
		t.Fatalf("the old grant still covers a call under the new scope (%d runs, asked %d): %+v", touched.Load(), asked.Load(), res.Content)
	}
}
