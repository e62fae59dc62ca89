package mcpsafe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// noteArgs is a typed tool's input; its schema is inferred.
type noteArgs struct {
	Path plainName `json:"path" jsonschema:"the note to delete"`
}

// plainName refuses ".." when decoded: a type the schema cannot express.
type plainName string

func (p *plainName) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if strings.Contains(s, "..") {
		return errors.New("no .. in a note name")
	}
	*p = plainName(s)
	return nil
}

// noteState is what a typed delete binds: the note's current contents.
type noteState struct {
	Path     string `json:"path"`
	Contents string `json:"contents"`
}

// typedDelete deletes a note as a typed tool; seen records what Execute
// received.
func (n *notes) typedDelete(seen *mcpsafe.Call) mcpsafe.ToolFor[noteArgs, noteState] {
	return mcpsafe.ToolFor[noteArgs, noteState]{
		Tool: mcpsafe.Tool{Name: "delete_typed", Description: "Delete a note."},
		Resolve: func(_ context.Context, _ mcpsafe.Call, in noteArgs) (noteState, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			v, ok := n.m[string(in.Path)]
			if !ok {
				return noteState{}, mcpsafe.Refuse("not_found", "no note %q", in.Path)
			}
			return noteState{Path: string(in.Path), Contents: v}, nil
		},
		Preview: func(_ context.Context, _ mcpsafe.Call, _ noteArgs, s noteState) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: fmt.Sprintf("Delete note %q (%d bytes)", s.Path, len(s.Contents))}, nil
		},
		Execute: func(_ context.Context, c mcpsafe.Call, in noteArgs, s noteState, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			if n.m[s.Path] != s.Contents || string(in.Path) != s.Path || a.Resolved != nil {
				return nil, fmt.Errorf("execute got in %q, state %+v, resolved %v", in.Path, s, a.Resolved)
			}
			n.execs++
			delete(n.m, s.Path)
			if seen != nil {
				*seen = c
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + s.Path}}}, nil
		},
	}
}

func typedEnv(t *testing.T, tool mcpsafe.ToolFor[noteArgs, noteState]) *env {
	t.Helper()
	e := newEnv(t, nil)
	if err := mcpsafe.Register(e.gate, e.server, tool); err != nil {
		t.Fatal(err)
	}
	return e
}

// A typed tool runs after approval with its decoded input and its State,
// and Execute receives the checked call: the canonical arguments, the
// digest the approval bound (the one journaled), the principal and the
// request.
func TestTypedToolRuns(t *testing.T) {
	var seen mcpsafe.Call
	n := newNotes()
	e := typedEnv(t, n.typedDelete(&seen))
	e.notes = n
	n.set("cache.txt", "old cache")
	cs := e.connect(client{elicit: accept})

	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	for _, tl := range lt.Tools {
		if tl.Name == "delete_typed" {
			b, _ := json.Marshal(tl.InputSchema)
			_ = json.Unmarshal(b, &schema)
		}
	}
	props, _ := schema["properties"].(map[string]any)
	if props["path"] == nil || props[mcpsafe.TokenField] == nil || schema["additionalProperties"] != false || fmt.Sprint(schema["required"]) != "[path]" {
		t.Fatalf("inferred schema %v: want path (required), approval_token, no other properties", schema)
	}

	res := callTool(t, cs, "delete_typed", map[string]any{"path": "cache.txt"})
	wantExecuted(t, res)
	if n.has("cache.txt") || n.executions() != 1 {
		t.Fatal("approved, but the note is still there")
	}
	var approved journal.Record
	for _, r := range e.journal.recs {
		if r.Decision == journal.ClientAccepted {
			approved = r
		}
	}
	if seen.ArgsDigest == "" || seen.ArgsDigest != approved.ArgsDigest {
		t.Fatalf("Execute got digest %q, the journal bound %q", seen.ArgsDigest, approved.ArgsDigest)
	}
	if string(seen.Arguments) != `{"path":"cache.txt"}` || seen.Principal != "stdio" || seen.Tool != "delete_typed" {
		t.Fatalf("Execute got call %+v", seen)
	}
	if seen.Request == nil || seen.Request.Params.Name != "delete_typed" {
		t.Fatalf("Execute got no request: %+v", seen.Request)
	}
}

// The State is bound: a note whose contents changed after the approval was
// issued is not deleted; unchanged, the same approval path runs.
func TestTypedStateBound(t *testing.T) {
	n := newNotes("cache.txt")
	e := typedEnv(t, n.typedDelete(nil)) // reversible: the token path
	cs := e.connect(client{})
	args := map[string]any{"path": "cache.txt"}
	tok := token(t, callTool(t, cs, "delete_typed", args))
	n.set("cache.txt", "the user's new work")
	wantRefused(t, callTool(t, cs, "delete_typed", map[string]any{"path": "cache.txt", mcpsafe.TokenField: tok}), mcpsafe.ReasonTargetChanged)
	if !n.has("cache.txt") || n.executions() != 0 {
		t.Fatal("a changed state was deleted")
	}
	// Control: approved on the current state, it runs.
	tok = token(t, callTool(t, cs, "delete_typed", args))
	wantExecuted(t, callTool(t, cs, "delete_typed", map[string]any{"path": "cache.txt", mcpsafe.TokenField: tok}))
	if n.has("cache.txt") {
		t.Fatal("approved, but the note is still there")
	}
}

// Arguments that pass the schema but do not decode into In are refused
// before anything resolves them; the same call spelt right runs.
func TestTypedArgumentsMustDecode(t *testing.T) {
	n := newNotes("a..b", "ab")
	tool := n.typedDelete(nil)
	var resolved atomic.Int32
	resolve := tool.Resolve
	tool.Resolve = func(ctx context.Context, c mcpsafe.Call, in noteArgs) (noteState, error) {
		resolved.Add(1)
		return resolve(ctx, c, in)
	}
	e := typedEnv(t, tool)
	cs := e.connect(client{elicit: accept})
	wantRefused(t, callTool(t, cs, "delete_typed", map[string]any{"path": "a..b"}), mcpsafe.ReasonArgumentsInvalid)
	if resolved.Load() != 0 || !n.has("a..b") {
		t.Fatal("undecodable arguments reached the tool")
	}
	wantExecuted(t, callTool(t, cs, "delete_typed", map[string]any{"path": "ab"}))
	if n.has("ab") {
		t.Fatal("control: not deleted")
	}
}

// Rules read a typed tool's State as a Resolved: its JSON object.
func TestTypedRulesReadState(t *testing.T) {
	n := newNotes("public.txt", "private.txt")
	n.set("private.txt", "SECRET")
	tool := n.typedDelete(nil)
	tool.Deny = []mcpsafe.Rule{{Name: "secret contents", Match: func(_ context.Context, _ mcpsafe.Call, r mcpsafe.Resolved) (bool, error) {
		return r["contents"] == "SECRET", nil
	}}}
	e := typedEnv(t, tool)
	cs := e.connect(client{elicit: accept})
	wantRefused(t, callTool(t, cs, "delete_typed", map[string]any{"path": "private.txt"}), mcpsafe.ReasonPolicyDenied)
	if !n.has("private.txt") {
		t.Fatal("denied, but deleted")
	}
	wantExecuted(t, callTool(t, cs, "delete_typed", map[string]any{"path": "public.txt"}))
}

// A JSON-RPC error from Execute reaches the client as that error, and the
// journal records the call as failed; any other error is the tool's
// failure, reported in a result.
func TestExecuteProtocolErrorPassedThrough(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		proto bool
	}{
		{"json-rpc error", &jsonrpc.Error{Code: -32042, Message: "upstream says no"}, true},
		{"wrapped json-rpc error", fmt.Errorf("relay: %w", &jsonrpc.Error{Code: -32042, Message: "upstream says no"}), true},
		{"plain error (control)", errors.New("disk on fire"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				(*tools)[1].Execute = func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
					return nil, tc.err
				}
			})
			cs := e.connect(client{elicit: accept})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rename_note", Arguments: map[string]any{"from": "a", "to": "b"}})
			var jerr *jsonrpc.Error
			if tc.proto {
				if !errors.As(err, &jerr) || jerr.Code != -32042 || jerr.Message != "upstream says no" {
					t.Fatalf("got %v, %v; want the JSON-RPC error itself", res, err)
				}
			} else if err != nil || !res.IsError || !strings.Contains(text(res), "disk on fire") {
				t.Fatalf("got %v, %v; want an error result", res, err)
			}
			if d := strings.Join(e.journal.decisions(), ","); !strings.HasSuffix(d, journal.Failed) {
				t.Fatalf("journal %s: want the call recorded as failed", d)
			}
		})
	}
}

func TestRegisterTypedRefuses(t *testing.T) {
	n := newNotes()
	for _, tc := range []struct {
		name   string
		change func(*mcpsafe.ToolFor[noteArgs, noteState])
		want   string
	}{
		{"untyped Resolve beside the typed one", func(t *mcpsafe.ToolFor[noteArgs, noteState]) {
			t.Tool.Resolve = func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) { return nil, nil }
		}, "not on its Tool"},
		{"no Preview", func(t *mcpsafe.ToolFor[noteArgs, noteState]) { t.Preview = nil }, "needs Preview and Execute"},
		{"no Execute", func(t *mcpsafe.ToolFor[noteArgs, noteState]) { t.Execute = nil }, "needs Preview and Execute"},
		{"schema not an object", func(t *mcpsafe.ToolFor[noteArgs, noteState]) { t.InputSchema = map[string]any{"type": "string"} }, "type"},
		{"control", func(*mcpsafe.ToolFor[noteArgs, noteState]) {}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: journal.Discard})
			if err != nil {
				t.Fatal(err)
			}
			tool := n.typedDelete(nil)
			tc.change(&tool)
			err = mcpsafe.Register(g, mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil), tool)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Register: %v, want %q", err, tc.want)
			}
		})
	}
}

// A pointer In takes its element's schema, as with mcp.AddTool, and is
// decoded like it.
func TestTypedPointerInput(t *testing.T) {
	n := newNotes("cache.txt")
	e := newEnv(t, nil)
	err := mcpsafe.Register(e.gate, e.server, mcpsafe.ToolFor[*noteArgs, noteState]{
		Tool: mcpsafe.Tool{Name: "delete_ptr"},
		Preview: func(_ context.Context, _ mcpsafe.Call, in *noteArgs, _ noteState) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "Delete " + string(in.Path)}, nil
		},
		Execute: func(_ context.Context, _ mcpsafe.Call, in *noteArgs, _ noteState, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			delete(n.m, string(in.Path))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	cs := e.connect(client{elicit: accept})
	wantRefused(t, callTool(t, cs, "delete_ptr", map[string]any{"path": "cache.txt", "extra": 1}), mcpsafe.ReasonArgumentsInvalid)
	wantExecuted(t, callTool(t, cs, "delete_ptr", map[string]any{"path": "cache.txt"}))
	if n.has("cache.txt") {
		t.Fatal("not deleted")
	}
}
