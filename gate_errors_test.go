package mcpsafe_test

// Tests for the gate's less travelled paths: construction and registration
// errors, tool errors and refusals from Resolve/Preview/Execute, grants that
// authenticate but are malformed, long plans, and the key helpers. Each
// failure case checks that nothing ran.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/seal"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestNewRefuses(t *testing.T) {
	j := journal.Discard
	for _, tc := range []struct {
		name string
		o    mcpsafe.Options
	}{
		{"no audience", mcpsafe.Options{Journal: j}},
		{"no journal", mcpsafe.Options{Audience: "a"}},
		{"unknown mode", mcpsafe.Options{Audience: "a", Journal: j, Mode: "yolo"}},
		{"channel without approver", mcpsafe.Options{Audience: "a", Journal: j, Mode: mcpsafe.ModeChannel}},
		{"empty opt-in", mcpsafe.Options{Audience: "a", Journal: j, AllowTokenFor: []mcpsafe.OptIn{{}}}},
		{"opt-in twice", mcpsafe.Options{Audience: "a", Journal: j, AllowTokenFor: []mcpsafe.OptIn{{Tool: "x"}, {Tool: "x"}}}},
		{"opt-in with a tab", mcpsafe.Options{Audience: "a", Journal: j, AllowTokenFor: []mcpsafe.OptIn{{Tool: "x\ty"}}}},
	} {
		if _, err := mcpsafe.New(tc.o); err == nil {
			t.Errorf("%s: New accepted %+v", tc.name, tc.o)
		}
	}
	// Control.
	if _, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: j, AllowTokenFor: []mcpsafe.OptIn{{Tool: "x"}}}); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterRefuses(t *testing.T) {
	g, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: journal.Discard})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	good := func() mcpsafe.Tool { return newNotes().renameTool() }
	for _, tc := range []struct {
		name   string
		change func(*mcpsafe.Tool)
	}{
		{"no name", func(t *mcpsafe.Tool) { t.Name = "" }},
		{"no preview", func(t *mcpsafe.Tool) { t.Preview = nil }},
		{"no execute", func(t *mcpsafe.Tool) { t.Execute = nil }},
		{"unknown mode", func(t *mcpsafe.Tool) { t.Mode = "sometimes" }},
		{"channel without approver", func(t *mcpsafe.Tool) { t.Mode = mcpsafe.ModeChannel }},
		{"unknown assurance", func(t *mcpsafe.Tool) { t.MinAssurance = 7 }},
		{"negative assurance", func(t *mcpsafe.Tool) { t.MinAssurance = -1 }},
		{"channel assurance outside channel mode", func(t *mcpsafe.Tool) { t.MinAssurance = mcpsafe.AssuranceChannel }},
		{"nil schema", func(t *mcpsafe.Tool) { t.InputSchema = nil }},
		{"schema not an object", func(t *mcpsafe.Tool) { t.InputSchema = []int{1} }},
		{"schema unmarshalable", func(t *mcpsafe.Tool) { t.InputSchema = map[string]any{"f": func() {}} }},
		{"schema type not object", func(t *mcpsafe.Tool) { t.InputSchema = map[string]any{"type": "string"} }},
		{"properties not an object", func(t *mcpsafe.Tool) { t.InputSchema = map[string]any{"type": "object", "properties": 3} }},
		{"schema that does not resolve", func(t *mcpsafe.Tool) {
			t.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"p": map[string]any{"$ref": "#/nowhere"}}}
		}},
		{"schema with a bad keyword type", func(t *mcpsafe.Tool) {
			t.InputSchema = map[string]any{"type": "object", "required": "p"}
		}},
	} {
		tool := good()
		tool.Name = "t_" + strings.ReplaceAll(tc.name, " ", "_")
		tc.change(&tool)
		if err := g.Register(server, tool); err == nil {
			t.Errorf("%s: Register accepted the tool", tc.name)
		}
	}
	// Control: a tool with no properties at all gets approval_token added.
	tool := good()
	tool.InputSchema = map[string]any{"type": "object"}
	if err := g.Register(server, tool); err != nil {
		t.Fatal(err)
	}
	if got := g.Tools(); len(got) != 1 || got[0] != "rename_note" {
		t.Fatalf("Tools() = %v", got)
	}
}

// Remove takes a tool off the server; registering it again with another
// policy voids the tokens issued before.
func TestRemoveAndReregister(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{})
	args := map[string]any{"from": "todo.txt", "to": "done.txt"}
	tok := token(t, callTool(t, cs, "rename_note", args))
	e.gate.Remove(e.server, "rename_note")
	if got := e.gate.Tools(); len(got) != 1 || got[0] != "delete_note" {
		t.Fatalf("Tools() after Remove = %v", got)
	}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rename_note", Arguments: args}); err == nil && !res.IsError {
		t.Fatal("a removed tool still ran")
	}
	tool := e.notes.renameTool()
	tool.Deny = []mcpsafe.Rule{{Name: "new-rule", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return false, nil }}}
	if err := e.gate.Register(e.server, tool); err != nil {
		t.Fatal(err)
	}
	args["approval_token"] = tok
	wantRefused(t, callTool(t, cs, "rename_note", args), mcpsafe.ReasonTokenInvalid)
	if e.notes.executions() != 0 {
		t.Fatal("a token issued under the old policy ran")
	}
}

func TestCheckOptInsReversible(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "rename_note"}}
	})
	if err := e.gate.CheckOptIns(); err == nil {
		t.Fatal("CheckOptIns accepted an opt-in for a reversible tool")
	}
}

// Errors and refusals from the tool's own functions: a *Refusal keeps its
// code, any other error maps to the step's code, and nothing runs.
func TestToolFunctionErrors(t *testing.T) {
	boom := errors.New("boom")
	autoYes := []mcpsafe.Rule{{Name: "yes", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}}
	for _, tc := range []struct {
		name   string
		change func(*mcpsafe.Tool)
		reason string
		isErr  bool // executed, but the tool failed
	}{
		{"resolver refuses with its own code", func(t *mcpsafe.Tool) {
			t.Resolve = func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) {
				return nil, mcpsafe.Refuse("outside_roots", "no")
			}
		}, "outside_roots", false},
		{"resolver error", func(t *mcpsafe.Tool) {
			t.Resolve = func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) { return nil, boom }
		}, mcpsafe.ReasonResolverFailed, false},
		{"resolver panics", func(t *mcpsafe.Tool) {
			t.Resolve = func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) { panic("x") }
		}, mcpsafe.ReasonResolverFailed, false},
		{"resolver finds nothing", func(t *mcpsafe.Tool) {
			t.Resolve = func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) { return mcpsafe.Resolved{}, nil }
		}, mcpsafe.ReasonResolverFailed, false},
		{"resolver returns something unencodable", func(t *mcpsafe.Tool) {
			t.Resolve = func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) {
				return mcpsafe.Resolved{"c": make(chan int)}, nil
			}
		}, mcpsafe.ReasonResolverFailed, false},
		{"preview error", func(t *mcpsafe.Tool) {
			t.Preview = func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
				return mcpsafe.Plan{}, boom
			}
		}, mcpsafe.ReasonPreviewFailed, false},
		{"preview without summary", func(t *mcpsafe.Tool) {
			t.Preview = func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
				return mcpsafe.Plan{Summary: "  "}, nil
			}
		}, mcpsafe.ReasonPreviewFailed, false},
		{"execute refuses", func(t *mcpsafe.Tool) {
			t.Execute = func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
				return nil, mcpsafe.Refuse("not_a_regular_file", "a directory")
			}
		}, "not_a_regular_file", false},
		{"execute error", func(t *mcpsafe.Tool) {
			t.Execute = func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) { return nil, boom }
		}, "", true},
		{"execute panics", func(t *mcpsafe.Tool) {
			t.Execute = func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) { panic("x") }
		}, "", true},
		{"execute returns nothing", func(t *mcpsafe.Tool) {
			t.Execute = func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) { return nil, nil }
		}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				(*tools)[1].AutoApprove = autoYes
				tc.change(&(*tools)[1])
			})
			res := callTool(t, e.connect(client{}), "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt"})
			if tc.isErr {
				if !res.IsError || !strings.Contains(text(res), "rename_note failed") {
					t.Fatalf("want a failed tool result, got %v", text(res))
				}
				if !containsString(e.journal.decisions(), "failed") {
					t.Fatalf("outcome not journaled as failed: %v", e.journal.decisions())
				}
				return
			}
			wantRefused(t, res, tc.reason)
			if !e.notes.has("todo.txt") {
				t.Fatal("the tool ran")
			}
		})
	}
}

// When the target stops previewing between approval and execution, the call
// is refused as target_changed.
func TestPreviewFailsAtExecute(t *testing.T) {
	var calls int
	e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		prev := (*tools)[1].Preview
		(*tools)[1].Preview = func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
			calls++
			if calls > 1 {
				return mcpsafe.Plan{}, errors.New("gone")
			}
			return prev(ctx, c, r)
		}
		(*tools)[1].AutoApprove = []mcpsafe.Rule{{Name: "yes", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}}
	})
	wantRefused(t, callTool(t, e.connect(client{}), "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt"}), mcpsafe.ReasonTargetChanged)
	if e.notes.executions() != 0 {
		t.Fatal("ran after the preview failed")
	}
}

// Grants sealed with the server's own key and audience, but whose content
// is not a grant this server would issue: refused as token_invalid.
func TestMalformedGrantsRefused(t *testing.T) {
	key := bytesOf(7, 32)
	keys, err := mcpsafe.NewKeys(key)
	if err != nil {
		t.Fatal(err)
	}
	ring, err := seal.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Keys = keys })
	cs := e.connect(client{})
	args := map[string]any{"from": "todo.txt", "to": "done.txt"}
	genuine := token(t, callTool(t, cs, "rename_note", args))
	plain, err := ring.Open("test-server", genuine)
	if err != nil {
		t.Fatal(err)
	}
	// The plaintext layout is grant_wire.go's: version, mode, issued,
	// expires, nonce, three digests, then the tool and the principal, each
	// after its length.
	variant := func(change func(b []byte) []byte) []byte {
		return change(append([]byte(nil), plain...))
	}
	const toolAt = 2 + 8 + 8 + 16 + 3*32
	for name, body := range map[string][]byte{
		"not a grant":          []byte("not a grant"),
		"trailing data":        variant(func(b []byte) []byte { return append(b, 0) }),
		"truncated":            variant(func(b []byte) []byte { return b[:len(b)-1] }),
		"fixed part only":      variant(func(b []byte) []byte { return b[:toolAt] }),
		"wrong version":        variant(func(b []byte) []byte { b[0] = 3; return b }),
		"no mode":              variant(func(b []byte) []byte { b[1] = 0; return b }),
		"unknown mode":         variant(func(b []byte) []byte { b[1] = 9; return b }),
		"tool length too long": variant(func(b []byte) []byte { b[toolAt]++; return b }),
		"long length form": variant(func(b []byte) []byte {
			return append(append(append([]byte(nil), b[:toolAt]...), b[toolAt]|0x80, 0), b[toolAt+1:]...)
		}),
		"version 1 (JSON)": []byte(`{"v":1,"tool":"rename_note","aud":"test-server","mode":"token","nonce":"00"}`),
		"empty":            {},
	} {
		sealed, err := ring.Seal("test-server", body)
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": sealed}
		res := callTool(t, cs, "rename_note", a)
		wantRefused(t, res, mcpsafe.ReasonTokenInvalid)
		if name == "version 1 (JSON)" && !strings.Contains(text(res), "earlier version") {
			t.Errorf("a version 1 grant is refused without saying why: %s", text(res))
		}
		if e.notes.executions() != 0 {
			t.Fatalf("%s: a malformed grant ran the tool", name)
		}
	}
	// Sealed for another audience under the same key: the associated data
	// binds the audience, so it does not open here.
	other, err := ring.Seal("other-server", plain)
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": other}), mcpsafe.ReasonTokenInvalid)
	// Control of the variants: the genuine plaintext sealed again opens
	// (a fresh seal of the same grant is the same approval, spent once).
	again, err := ring.Seal("test-server", plain)
	if err != nil {
		t.Fatal(err)
	}
	// A non-string token is an invalid argument, not a token.
	wantRefused(t, callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": 5}), mcpsafe.ReasonArgumentsInvalid)
	// Control: the genuine plaintext, sealed again.
	args["approval_token"] = again
	wantExecuted(t, callTool(t, cs, "rename_note", args))
	// And the original token of the same grant is now spent.
	args["approval_token"] = genuine
	wantRefused(t, callTool(t, cs, "rename_note", args), mcpsafe.ReasonTokenSpent)
}

// A long plan is shown whole: every detail line, every target, a long
// summary without a cut (plans_shown_whole_test.go has the attacks).
func TestLongPlanShownWhole(t *testing.T) {
	var msg string
	e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		(*tools)[1].Preview = func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			p := mcpsafe.Plan{Summary: strings.Repeat("s", 500) + "\u202e" + strings.Repeat("e", 500) + "END"}
			for i := range 25 {
				p.Details = append(p.Details, fmt.Sprintf("detail %d", i))
				p.Targets = append(p.Targets, mcpsafe.Target{Name: fmt.Sprintf("t%d", i), State: "ok"})
			}
			return p, nil
		}
	})
	cs := e.connect(client{elicit: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}})
	wantRefused(t, callTool(t, cs, "rename_note", map[string]any{"from": "a", "to": "b"}), mcpsafe.ReasonCancelled)
	for _, want := range []string{"detail 0", "detail 24", `"t24": ok`, `\u202e`, `eeeeEND"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q", want)
		}
	}
	for _, bad := range []string{"not shown", "sha256:", "…"} {
		if strings.Contains(msg, bad) {
			t.Errorf("message was cut (%q):\n%s", bad, msg)
		}
	}
}

// The global cap refuses new grants; expired grants are swept to make room,
// live ones never.
func TestPendingGlobalCapSweeps(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.MaxPending = 2; o.TTL = time.Minute })
	cs := e.connect(client{})
	args := func(to string) map[string]any { return map[string]any{"from": "todo.txt", "to": to} }
	token(t, callTool(t, cs, "rename_note", args("a")))
	token(t, callTool(t, cs, "rename_note", args("b")))
	res := callTool(t, cs, "rename_note", args("c"))
	if m := structured(t, res); m["reason"] != mcpsafe.ReasonTooManyPending && m["reason"] != mcpsafe.ReasonLedgerUnavailable {
		t.Fatalf("over the global cap: %v", m)
	}
	e.clock.Set(e.clock.Now().Add(2 * time.Minute))
	// The gate's own count is swept; the in-memory ledger (real clock) may
	// still hold the two, so either the grant is issued or the ledger says
	// it is full: never an old grant dropped silently.
	res = callTool(t, cs, "rename_note", args("d"))
	if res.IsError {
		wantRefused(t, res, mcpsafe.ReasonLedgerUnavailable)
	}
}

// Key helpers, and a shared key file between two gates.
func TestKeysHelpers(t *testing.T) {
	if _, err := mcpsafe.NewKeys(make([]byte, 16)); err == nil {
		t.Fatal("a 16-byte key was accepted")
	}
	if _, err := mcpsafe.NewKeys(make([]byte, 32)); err == nil {
		t.Fatal("an all-zero key was accepted")
	}
	path := filepath.Join(t.TempDir(), "keys")
	if err := seal.WriteKeyFile(path); err != nil {
		t.Fatal(err)
	}
	if err := seal.WriteKeyFile(path); err == nil {
		t.Fatal("WriteKeyFile overwrote a key file")
	}
	k, err := mcpsafe.LoadKeys(path)
	if err != nil || k == (mcpsafe.Keys{}) {
		t.Fatalf("LoadKeys = %v, %v", k, err)
	}
	if _, err := mcpsafe.LoadKeys(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("LoadKeys of a missing file succeeded")
	}
	// Two gates sharing a loaded key file redeem each other's tokens (the
	// replica case); the control for "another process" in TestGrantBindings.
	share := func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Keys = k }
	a, b := newEnv(t, share), newEnv(t, share)
	args := map[string]any{"from": "todo.txt", "to": "done.txt"}
	tok := token(t, callTool(t, a.connect(client{}), "rename_note", args))
	args["approval_token"] = tok
	// b has its own in-memory ledger, which never saw the nonce: spent.
	wantRefused(t, callTool(t, b.connect(client{}), "rename_note", args), mcpsafe.ReasonTokenSpent)
}

func TestRefusalError(t *testing.T) {
	err := mcpsafe.Refuse("outside_roots", "path %q", "/etc")
	if err.Error() != `outside_roots: path "/etc"` {
		t.Fatalf("Error() = %q", err.Error())
	}
}

// A call that carries an approval but whose target no longer resolves is
// refused as target_changed (not as the resolver's own code), and so is
// one whose resolver fails only at the re-check before Execute.
func TestApprovedTargetGone(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_note"}} })
	cs := e.connect(client{})
	tok := token(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	e.notes.mu.Lock()
	delete(e.notes.m, "cache.txt")
	e.notes.mu.Unlock()
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": tok}), mcpsafe.ReasonTargetChanged)

	calls := 0
	e = newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		inner := (*tools)[0].Resolve
		(*tools)[0].Resolve = func(ctx context.Context, c mcpsafe.Call) (mcpsafe.Resolved, error) {
			calls++
			if calls > 1 {
				return nil, errors.New("lookup failed")
			}
			return inner(ctx, c)
		}
		(*tools)[0].AutoApprove = []mcpsafe.Rule{{Name: "yes", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}}
	})
	wantRefused(t, callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonTargetChanged)
	if !e.notes.has("cache.txt") {
		t.Fatal("ran although the re-check failed")
	}
}

// A tool in token mode takes no request state, and a tool in elicit mode
// no token.
func TestApprovalPathBoundToMode(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Mode = mcpsafe.ModeToken })
	cs := e.connect(client{manual: true, elicit: accept})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "rename_note", Arguments: map[string]any{"from": "todo.txt", "to": "done.txt"}, RequestState: "x",
		InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, res, mcpsafe.ReasonPolicyDenied)
	if e.notes.executions() != 0 {
		t.Fatal("ran")
	}
}

// Over plain HTTP without auth the principal is "anonymous": a token
// issued there is bound to it.
func TestPrincipalOverHTTP(t *testing.T) {
	var seen []string
	e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		inner := (*tools)[1].Preview
		(*tools)[1].Preview = func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
			seen = append(seen, c.Principal)
			return inner(ctx, c, r)
		}
	})
	// Options.Principal was not set, so the default applies.
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return e.server }, nil))
	defer hs.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	token(t, callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt"}))
	token(t, callTool(t, e.connect(client{}), "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt"}))
	if len(seen) != 2 || seen[0] != "anonymous" || seen[1] != "stdio" {
		t.Fatalf("principals %v, want [anonymous stdio]", seen)
	}
}
