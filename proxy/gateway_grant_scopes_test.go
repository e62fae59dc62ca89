package proxy

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// In a gateway, a server's allow_grants_for reaches its gate, and a
// reload that changes a grant's scope voids the grants made under the old
// one (the scopes are in the tool's policy hash); a reload that leaves the
// scope alone keeps them.

func scopedNotePolicy(prefix, extra string) string {
	return fmt.Sprintf(`    policy:
      allow_grants_for: [note]
      tools:
%s        note:
          grants:
            max_ttl: 1h
            max_uses: 20
            client_relayed: true
            scopes:
              - {words: "x starting with %s", cel: 'args.x.startsWith(%q)'}
`, extra, prefix, prefix)
}

func TestGatewayGrantScopeChangeVoidsGrant(t *testing.T) {
	gs := newGoServer(t)
	dir := t.TempDir()
	body := func(prefix, extra string) string {
		return "servers:\n" + gs.yaml(t, "go", scopedNotePolicy(prefix, extra))
	}
	g, _ := keyedGatewayNoClient(t, dir, body("a", ""))
	var asked atomic.Int32
	cs := connectGateway(t, g, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if asked.Add(1) > 1 {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		// grant-2-2: the file's scope, 1 hour, 20 uses.
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-2-2"}}, nil
	}})
	note := func(x string) *mcp.CallToolResult { return call(t, cs, "go__note", map[string]any{"x": x}) }
	runs := func() int { return strings.Count(gs.calls(), "note ") }
	if res := note("a1"); res.IsError || runs() != 1 || asked.Load() != 1 {
		t.Fatalf("the approved call (allow_grants_for in a gateway): %s (asked %d)", text(res), asked.Load())
	}
	if res := note("a2"); res.IsError || runs() != 2 || asked.Load() != 1 {
		t.Fatalf("a call the grant covers: %s (asked %d)", text(res), asked.Load())
	}
	// Control: another tool's entry changes; the grant stays.
	reload(t, g, dir, body("a", "        wipe:\n          deny: ['false']\n"))
	if res := note("a3"); res.IsError || runs() != 3 || asked.Load() != 1 {
		t.Fatalf("after an unrelated reload: %s (asked %d)", text(res), asked.Load())
	}
	// Attack: the scope narrows to x starting with "ab".
	reload(t, g, dir, body("ab", "        wipe:\n          deny: ['false']\n"))
	if res := note("a4"); reasonOf(t, res) != mcpsafe.ReasonDeclined || runs() != 3 || asked.Load() != 2 {
		t.Fatalf("a grant made under the wider scope still covers a4: %s (asked %d)", text(res), asked.Load())
	}
	if res := note("ab1"); reasonOf(t, res) != mcpsafe.ReasonDeclined || runs() != 3 || asked.Load() != 3 {
		t.Fatalf("the old grant covers a call in the new scope: %s (asked %d)", text(res), asked.Load())
	}
}

// Attack: the operator withdraws allow_grants_for: [note] by a reload; the
// grant made under it must stop covering calls (the gate's opt-ins are
// fixed when it is built, so the change restarts the server). Control:
// the same reload keeping the opt-in keeps the grant.
func TestGatewayReloadWithdrawsAllowGrantsFor(t *testing.T) {
	for _, withdrawn := range []bool{true, false} {
		t.Run(fmt.Sprintf("withdrawn=%v", withdrawn), func(t *testing.T) {
			gs := newGoServer(t)
			dir := t.TempDir()
			pol := scopedNotePolicy("a", "")
			g, _ := keyedGatewayNoClient(t, dir, "servers:\n"+gs.yaml(t, "go", pol))
			var asked atomic.Int32
			cs := connectGateway(t, g, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if asked.Add(1) > 1 {
					return &mcp.ElicitResult{Action: "decline"}, nil
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-2-2"}}, nil
			}})
			runs := func() int { return strings.Count(gs.calls(), "note ") }
			if res := call(t, cs, "go__note", map[string]any{"x": "a1"}); res.IsError || runs() != 1 {
				t.Fatalf("the approved call: %s", text(res))
			}
			next := scopedNotePolicy("a", "        wipe:\n          deny: ['false']\n")
			if withdrawn {
				next = strings.Replace(next, "      allow_grants_for: [note]\n", "", 1)
			}
			reload(t, g, dir, "servers:\n"+gs.yaml(t, "go", next))
			eventually(t, "go's tools back", func() bool { return hasTool(t, cs, "go__note") })
			res := call(t, cs, "go__note", map[string]any{"x": "a2"})
			if !withdrawn {
				if res.IsError || runs() != 2 || asked.Load() != 1 {
					t.Fatalf("control, opt-in kept: %s (asked %d)", text(res), asked.Load())
				}
				return
			}
			if reasonOf(t, res) != mcpsafe.ReasonDeclined || runs() != 1 || asked.Load() != 2 {
				t.Fatalf("a grant survived the withdrawal of allow_grants_for: %s (asked %d)", text(res), asked.Load())
			}
		})
	}
}
