package mcpsafe_test

import (
	"context"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options.RequireUserInteraction puts Claude Code's always-ask key on the
// gated tools exactly when set: on every gated tool (also as an MCP Apps
// host sees them, with the card's own _meta beside it), never on a tool
// the gate does not own, and on no tool when unset. Real SDK client.
func TestRequireUserInteractionMarksGatedToolsOnly(t *testing.T) {
	for _, on := range []bool{true, false} {
		e := cardEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.RequireUserInteraction = on })
		// A tool of the server's own, not gated: it never carries the key.
		mcp.AddTool(e.server, &mcp.Tool{Name: "read_note"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		for _, caps := range []*mcp.ClientCapabilities{nil, appsCaps(false)} {
			res, err := e.connectCaps(caps, nil).ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			gated := 0
			for _, tl := range res.Tools {
				v, has := tl.Meta[mcpsafe.RequiresUserInteractionMeta]
				switch {
				case tl.Name == "read_note" || tl.Name == "mcpsafe_card_decision":
					if has {
						t.Errorf("on=%v apps=%v: ungated tool %s carries %v", on, caps != nil, tl.Name, tl.Meta)
					}
				case on && v != true:
					t.Errorf("on=%v apps=%v: gated tool %s has _meta %v, want %s: true", on, caps != nil, tl.Name, tl.Meta, mcpsafe.RequiresUserInteractionMeta)
				case !on && has:
					t.Errorf("off: gated tool %s carries %v", tl.Name, tl.Meta)
				default:
					gated++
				}
				if caps != nil && tl.Name == "delete_note" && tl.Meta["ui"] == nil {
					t.Errorf("apps client: delete_note lost the card's _meta: %v", tl.Meta)
				}
			}
			if gated < 3 {
				t.Errorf("on=%v: only %d gated tools checked in %d", on, gated, len(res.Tools))
			}
		}
	}
}
