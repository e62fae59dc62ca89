package mcpsafe_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// upstreamGatedTool stands for a tool of a server behind its own mcpsafe
// gate, as a proxy mirrors it: approval_token is one of its arguments.
func upstreamGatedTool(seen *[]json.RawMessage, mu *sync.Mutex) mcpsafe.Tool {
	return mcpsafe.Tool{
		Name:           "delete_file",
		Irreversible:   true,
		OwnsTokenField: true,
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":           map[string]any{"type": "string"},
				"approval_token": map[string]any{"type": "string"},
			},
			"required": []string{"path"},
		},
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "delete a file upstream"}, nil
		},
		Execute: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			mu.Lock()
			*seen = append(*seen, append(json.RawMessage(nil), c.Arguments...))
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "forwarded"}}}, nil
		},
	}
}

// TestOwnedTokenFieldIsAnArgument: a tool that owns approval_token is
// approved by elicitation like any other, and its approval_token reaches
// Execute unchanged, bound into the approval (a legacy client that answers
// the in-call elicitation sees the digest of the call with it).
func TestOwnedTokenFieldIsAnArgument(t *testing.T) {
	var mu sync.Mutex
	var seen []json.RawMessage
	e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		*tools = []mcpsafe.Tool{upstreamGatedTool(&seen, &mu)}
	})
	asked := 0
	cs := e.connect(client{protocol: "2025-11-25", elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := json.Marshal(tools.Tools[0].InputSchema)
	if strings.Count(string(schema), "approval_token") != 1 || strings.Contains(string(schema), "One-time approval token") {
		t.Fatalf("the schema is not the tool's own: %s", schema)
	}
	res := callTool(t, cs, "delete_file", map[string]any{"path": "a.txt", "approval_token": "upstream-token"})
	if res.IsError || asked != 1 {
		t.Fatalf("asked %d times: %v", asked, res.Content)
	}
	if len(seen) != 1 || !strings.Contains(string(seen[0]), `"approval_token":"upstream-token"`) {
		t.Fatalf("Execute got %s, want the upstream's approval_token passed on", seen)
	}
}

// TestOwnedTokenFieldHasNoTokenPath: where the gate would hand out a
// one-time token (mode token, or a client that cannot elicit) a tool that
// owns approval_token is refused with the reason, never given a token; a
// spelling variant of approval_token is refused as for any gated tool.
// Control: the same calls to an ordinary reversible tool get a token.
func TestOwnedTokenFieldHasNoTokenPath(t *testing.T) {
	var mu sync.Mutex
	var seen []json.RawMessage
	for _, mode := range []mcpsafe.Mode{mcpsafe.ModeToken, mcpsafe.ModeAuto} {
		e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.Mode = mode
			owned := upstreamGatedTool(&seen, &mu)
			owned.Irreversible = false // so that only OwnsTokenField stands in the way
			*tools = []mcpsafe.Tool{owned, e0notes().renameTool()}
		})
		cs := e.connect(client{}) // cannot elicit
		res := callTool(t, cs, "delete_file", map[string]any{"path": "a.txt"})
		m := structured(t, res)
		if !res.IsError || m["approval_token"] != nil || !strings.Contains(text(res), "takes its own approval_token argument") {
			t.Errorf("mode %s: %v", mode, res.Content)
		}
		res = rawCall(t, cs, "delete_file", `{"path":"a.txt","Approval_Token":"x"}`)
		if m := structured(t, res); !res.IsError || m["reason"] != "arguments_invalid" {
			t.Errorf("mode %s: a case variant of approval_token: %v", mode, res.Content)
		}
		// Control.
		res = callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt"})
		if m := structured(t, res); m["approval_token"] == nil {
			t.Errorf("mode %s: the ordinary tool got no token: %v", mode, res.Content)
		}
	}
	if len(seen) != 0 {
		t.Fatalf("Execute ran: %s", seen)
	}
}

func e0notes() *notes { return newNotes("todo.txt") }

// TestOwnsTokenFieldNeedsTheProperty: the flag and the schema must agree.
func TestOwnsTokenFieldNeedsTheProperty(t *testing.T) {
	g, err := mcpsafe.New(mcpsafe.Options{Audience: "t", Journal: journal.Discard})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []json.RawMessage
	bad := upstreamGatedTool(&seen, &mu)
	bad.InputSchema = pathSchema
	if err := g.Register(mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil), bad); err == nil {
		t.Error("OwnsTokenField without the property was registered")
	}
	theirs := upstreamGatedTool(&seen, &mu)
	theirs.OwnsTokenField = false
	if err := g.Register(mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil), theirs); err == nil || !strings.Contains(err.Error(), "OwnsTokenField") {
		t.Errorf("a schema with approval_token registered without OwnsTokenField: %v", err)
	}
	if err := g.Register(mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil), upstreamGatedTool(&seen, &mu)); err != nil {
		t.Errorf("control: %v", err)
	}
}

// TestOwnedTokenFieldGetsNoPendingHandle: a pending handle is called back
// as approval_token, which for this tool is its own argument: the handle
// would reach the tool instead of the gate, and the person would be asked
// again for a call carrying it. Such a tool waits for the decision
// instead. Control: an ordinary tool of the same gate gets the handle.
func TestOwnedTokenFieldGetsNoPendingHandle(t *testing.T) {
	var mu sync.Mutex
	var seen []json.RawMessage
	waits := make(chan time.Duration, 4)
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.ChannelWait = time.Millisecond
		o.Approver = resumableFunc{
			approverFunc: func(context.Context, approver.Request) (approver.Decision, error) {
				return approver.Decision{}, approver.ErrNoDecision
			},
			await: func(_ context.Context, _ approver.Request, wait time.Duration) (approver.Decision, error) {
				waits <- wait
				if wait > 0 {
					return approver.Decision{}, approver.ErrPending
				}
				return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
			},
		}
		*tools = append(*tools, upstreamGatedTool(&seen, &mu))
	})
	cs := e.connect(client{}) // sends no progress token
	res := callTool(t, cs, "delete_file", map[string]any{"path": "a.txt"})
	if res.IsError || structured(t, res)["status"] == "approval_pending" || len(seen) != 1 || <-waits != 0 {
		t.Fatalf("the owned-token tool: %v (ran %d times)", res.Content, len(seen))
	}
	pendingHandle(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	if w := <-waits; w == 0 {
		t.Fatal("control: the ordinary tool was not offered a pending answer")
	}
}
