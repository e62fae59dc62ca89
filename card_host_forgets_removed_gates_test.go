package mcpsafe

import (
	"context"
	"testing"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type htmlCard struct{}

func (htmlCard) Resource() (string, string) { return "ui://test/card", "<p>card</p>" }

// A gate whose last tool is removed leaves its server's card host (a
// gateway member that went down must not stay there, nor keep opening its
// audience's capabilities beside the gate that replaces it); registering
// again attaches it again, once.
func TestCardHostForgetsRemovedGates(t *testing.T) {
	g, err := New(Options{Audience: "a", Journal: journal.Discard, Card: htmlCard{}})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	tool := Tool{Name: "t", InputSchema: map[string]any{"type": "object"},
		Preview: func(context.Context, Call, Resolved) (Plan, error) { return Plan{Summary: "t"}, nil },
		Execute: func(context.Context, Call, Approval) (*mcp.CallToolResult, error) { return &mcp.CallToolResult{}, nil }}
	attached := func() int { return len(cardHostOf(server, false).attached()) }
	for range 2 {
		if err := g.Register(server, tool); err != nil {
			t.Fatal(err)
		}
		tool2 := tool
		tool2.Name = "t2"
		if err := g.Register(server, tool2); err != nil {
			t.Fatal(err)
		}
		if n := attached(); n != 1 {
			t.Fatalf("attached %d times, want once", n)
		}
		g.Remove(server, "t")
		if n := attached(); n != 1 {
			t.Fatalf("with a tool left: attached %d times, want once", n)
		}
		g.Remove(server, "t2")
		if n := attached(); n != 0 {
			t.Fatalf("without tools: still attached (%d)", n)
		}
	}
}
