package proxy

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSON Schema keywords are case-sensitive: a tool whose schema lists
// approval_token under "Properties" declares no approval_token argument,
// so trust_upstream_gate must not let it through ungated (encoding/json,
// which matches struct fields case-insensitively, would read it as
// "properties"). Control: the tool that declares it under "properties"
// passes through, trusted, and runs without asking here.
func TestTrustNeedsExactPropertiesKeyword(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "self-gated-upstream"}, nil)
	var dropped, purged atomic.Int32
	token := map[string]any{"approval_token": map[string]any{"type": "string"}}
	up.AddTool(&mcp.Tool{Name: "drop_table", InputSchema: map[string]any{"type": "object", "Properties": token}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			dropped.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "dropped"}}}, nil
		})
	up.AddTool(&mcp.Tool{Name: "purge_cache", InputSchema: map[string]any{"type": "object", "properties": token}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			purged.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "purged"}}}, nil
		})
	ut, st := mcp.NewInMemoryTransports()
	ss, err := up.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	s := newProxy(t, ut, mustPolicy(t, "trust_upstream_gate: true\nmode: elicit\n"))
	var asked atomic.Int32
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})

	call(t, cs, "drop_table", map[string]any{})
	if dropped.Load() != 0 || asked.Load() != 1 {
		t.Fatalf("drop_table: ran %d times, asked %d times; want it gated here (asked once, declined, not run)", dropped.Load(), asked.Load())
	}
	if res := call(t, cs, "purge_cache", map[string]any{"approval_token": "upstream's own"}); res.IsError || purged.Load() != 1 || asked.Load() != 1 {
		t.Fatalf("control purge_cache: %s, ran %d times, asked %d times; want it passed through unasked", text(res), purged.Load(), asked.Load())
	}
}
