package mcpsafe_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const legacy = "2025-11-25"

// The elicitation path, for an MRTR client and a legacy client, with every
// kind of answer. Only an exact accept + true runs the tool.
func TestElicitation(t *testing.T) {
	broke := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return nil, errClientBroke
	}
	cases := []struct {
		name       string
		elicit     func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		reason     string // "" = executed
		decision   string
		sdkRejects bool // the SDK's own schema check refuses it first
	}{
		{"accept", accept, "", journal.ClientAccepted, false},
		{"decline", answer("decline", nil), mcpsafe.ReasonDeclined, journal.Declined, false},
		{"cancel", answer("cancel", nil), mcpsafe.ReasonCancelled, journal.Cancelled, false},
		{"accept but false", answer("accept", map[string]any{"approve": false}), mcpsafe.ReasonDeclined, journal.Declined, false},
		{"accept with string true", answer("accept", map[string]any{"approve": "true"}), mcpsafe.ReasonDeclined, journal.Declined, true},
		{"accept with 1", answer("accept", map[string]any{"approve": 1}), mcpsafe.ReasonDeclined, journal.Declined, true},
		{"accept with yes", answer("accept", map[string]any{"approve": "yes"}), mcpsafe.ReasonDeclined, journal.Declined, true},
		{"accept without field", answer("accept", map[string]any{}), mcpsafe.ReasonDeclined, journal.Declined, true},
		{"accept in capitals", answer("ACCEPT", map[string]any{"approve": true}), mcpsafe.ReasonDeclined, journal.Declined, false},
	}
	for _, proto := range []string{"", legacy} {
		for _, tc := range cases {
			name := "mrtr/" + tc.name
			if proto == legacy {
				name = "legacy/" + tc.name
			}
			t.Run(name, func(t *testing.T) {
				e := newEnv(t, nil)
				var asked atomic.Int32
				cs := e.connect(client{protocol: proto, elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					if !strings.Contains(r.Params.Message, `Delete note "cache.txt"`) || !strings.Contains(r.Params.Message, "irreversible") {
						t.Errorf("prompt does not show the plan: %q", r.Params.Message)
					}
					return tc.elicit(ctx, r)
				}})
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"path": "cache.txt"}})
				if asked.Load() != 1 {
					t.Fatalf("asked %d times, want 1", asked.Load())
				}
				if tc.sdkRejects {
					// The SDK validates the answer against the form's schema
					// on its own; either way nothing may run.
					// TestAnswerVariantsRaw sends these past the SDK.
					if err == nil && !res.IsError {
						t.Fatalf("ambiguous answer not refused: %v", text(res))
					}
					if !e.notes.has("cache.txt") || e.notes.executions() != 0 {
						t.Fatal("not approved, but the tool ran")
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if tc.reason == "" {
					wantExecuted(t, res)
					if e.notes.has("cache.txt") {
						t.Fatal("approved, but cache.txt is still there")
					}
				} else {
					wantRefused(t, res, tc.reason)
					if !e.notes.has("cache.txt") || e.notes.executions() != 0 {
						t.Fatal("not approved, but the tool ran")
					}
				}
				if d := e.journal.decisions(); !slices.ContainsFunc(d, func(s string) bool { return strings.HasPrefix(s, tc.decision) }) {
					t.Fatalf("journal %v has no %s record", d, tc.decision)
				}
			})
		}
	}
	_ = broke
}

// TestAnswerVariantsRaw sends answers past the SDK's schema check, as a
// hostile client would: only action "accept" with approve exactly true runs.
func TestAnswerVariantsRaw(t *testing.T) {
	cases := []struct {
		name   string
		answer mcp.InputResponseMap
		reason string
	}{
		{"string true", mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": "true"}}}, mcpsafe.ReasonDeclined},
		{"number 1", mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": 1}}}, mcpsafe.ReasonDeclined},
		{"yes", mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": "yes"}}}, mcpsafe.ReasonDeclined},
		{"missing field", mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}}, mcpsafe.ReasonDeclined},
		{"no content", mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept"}}, mcpsafe.ReasonDeclined},
		{"unknown action", mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "approve", Content: map[string]any{"approve": true}}}, mcpsafe.ReasonDeclined},
		{"wrong id", mcp.InputResponseMap{"other": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}, mcpsafe.ReasonDeclined},
		{"two answers", mcp.InputResponseMap{
			"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}},
			"other":            &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}},
		}, mcpsafe.ReasonDeclined},
		{"no answer", mcp.InputResponseMap{}, mcpsafe.ReasonDeclined},
		{"exact approval (control)", mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			cs := e.connect(client{manual: true, elicit: accept})
			first := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "delete_note", Arguments: map[string]any{"path": "cache.txt"},
				RequestState: first.RequestState, InputResponses: tc.answer,
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.reason == "" {
				wantExecuted(t, res)
				if e.notes.has("cache.txt") {
					t.Fatal("exact approval did not run")
				}
				return
			}
			wantRefused(t, res, tc.reason)
			if !e.notes.has("cache.txt") {
				t.Fatal("ambiguous answer ran the tool")
			}
		})
	}
}

// A client whose elicitation handler fails: nothing runs, on both protocols.
func TestElicitationClientError(t *testing.T) {
	for _, proto := range []string{"", legacy} {
		e := newEnv(t, nil)
		cs := e.connect(client{protocol: proto, elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errClientBroke
		}})
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"path": "cache.txt"}})
		if err == nil {
			wantRefused(t, res, mcpsafe.ReasonElicitationFailed)
		}
		if !e.notes.has("cache.txt") || e.notes.executions() != 0 {
			t.Fatalf("protocol %q: the client failed, but the tool ran", proto)
		}
	}
}

// A legacy client that never answers: the gate gives up at ElicitTimeout.
func TestElicitationTimeout(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.ElicitTimeout = 100 * time.Millisecond })
	release := make(chan struct{})
	defer close(release)
	cs := e.connect(client{protocol: legacy, elicit: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})
	res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
	wantRefused(t, res, mcpsafe.ReasonTimeout)
	if !e.notes.has("cache.txt") {
		t.Fatal("timed out, but the tool ran")
	}
}

// The MRTR request state is a sealed, single-use grant: replay, tampering,
// another call's state and a late accept of a declined state are refused.
func TestRequestStateAttacks(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{manual: true, elicit: accept})
	first := func(path string) *mcp.CallToolResult {
		res := callTool(t, cs, "delete_note", map[string]any{"path": path})
		if !res.NeedsInput() || res.RequestState == "" {
			t.Fatalf("want input required, got %v", text(res))
		}
		return res
	}
	retry := func(path, state string, r *mcp.ElicitResult) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "delete_note", Arguments: map[string]any{"path": path},
			InputResponses: mcp.InputResponseMap{"mcpsafe_approval": r}, RequestState: state,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	yes := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	no := &mcp.ElicitResult{Action: "decline"}

	// Declined, then the same state presented again with accept: spent.
	r1 := first("cache.txt")
	wantRefused(t, retry("cache.txt", r1.RequestState, no), mcpsafe.ReasonDeclined)
	wantRefused(t, retry("cache.txt", r1.RequestState, yes), mcpsafe.ReasonTokenSpent)

	// A state approved for cache.txt does not delete thesis.txt.
	r2 := first("cache.txt")
	wantRefused(t, retry("thesis.txt", r2.RequestState, yes), mcpsafe.ReasonArgumentsChanged)
	if !e.notes.has("thesis.txt") {
		t.Fatal("thesis.txt was deleted with cache.txt's approval")
	}

	// Tampered state: one character changed.
	r3 := first("cache.txt")
	tampered := []byte(r3.RequestState)
	tampered[len(tampered)/2] ^= 1
	wantRefused(t, retry("cache.txt", string(tampered), yes), mcpsafe.ReasonTokenInvalid)
	wantRefused(t, retry("cache.txt", "", yes), mcpsafe.ReasonTokenInvalid)
	wantRefused(t, retry("cache.txt", "not-a-state", yes), mcpsafe.ReasonTokenInvalid)

	// The state is not a token.
	res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": r3.RequestState})
	wantRefused(t, res, mcpsafe.ReasonPolicyDenied) // irreversible, not opted in to tokens

	// Control: the untouched state with an exact accept runs once, then is spent.
	wantExecuted(t, retry("cache.txt", r3.RequestState, yes))
	if e.notes.has("cache.txt") {
		t.Fatal("approved state did not delete cache.txt")
	}
	e.notes.set("cache.txt", "contents of cache.txt")
	wantRefused(t, retry("cache.txt", r3.RequestState, yes), mcpsafe.ReasonTokenSpent)
	if e.notes.executions() != 1 {
		t.Fatalf("executions = %d, want 1", e.notes.executions())
	}
}

// Token mode: issue, redeem once, replay refused, swapped argument refused.
func TestTokenFlow(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_note"}}
	})
	cs := e.connect(client{}) // no elicitation capability
	res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
	tok := token(t, res)
	m := structured(t, res)
	plan := m["plan"].(map[string]any)
	if plan["summary"] != `Delete note "cache.txt"` {
		t.Fatalf("plan summary %q", plan["summary"])
	}
	if _, err := time.Parse(time.RFC3339, m["expires_at"].(string)); err != nil {
		t.Fatalf("expires_at: %v", err)
	}
	if !strings.Contains(text(res), "approval_token") || !strings.Contains(text(res), "Show this plan") {
		t.Fatalf("text does not tell the assistant what to do: %q", text(res))
	}
	if !e.notes.has("cache.txt") {
		t.Fatal("the first call must not run the tool")
	}

	// Attack: the same token for thesis.txt.
	res = callTool(t, cs, "delete_note", map[string]any{"path": "thesis.txt", "approval_token": tok})
	wantRefused(t, res, mcpsafe.ReasonArgumentsChanged)
	if !e.notes.has("thesis.txt") {
		t.Fatal("thesis.txt deleted with cache.txt's token")
	}
	if strings.Contains(text(res), tok) {
		t.Fatal("a refusal leaked the token")
	}
	// Attack: a token with a character appended.
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": tok + "A"}), mcpsafe.ReasonTokenInvalid)
	// Attack: a token for the wrong tool.
	wantRefused(t, callTool(t, cs, "rename_note", map[string]any{"from": "cache.txt", "to": "x", "approval_token": tok}), mcpsafe.ReasonTokenInvalid)

	// Control: the right arguments redeem it, once.
	wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": tok}))
	if e.notes.has("cache.txt") {
		t.Fatal("redeemed token did not delete")
	}
	e.notes.set("cache.txt", "contents of cache.txt")
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": tok}), mcpsafe.ReasonTokenSpent)
	if !e.notes.has("cache.txt") || e.notes.executions() != 1 {
		t.Fatal("replayed token ran the tool again")
	}
	d := e.journal.decisions()
	if !slices.Contains(d, journal.TokenRedeemed) || !slices.Contains(d, journal.Executed) {
		t.Fatalf("journal %v", d)
	}
}

// Reordered but equal arguments are the same call.
func TestTokenReorderedArguments(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{})
	tok := token(t, callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt"}))
	raw := json.RawMessage(`{"to":"done.txt","approval_token":"` + tok + `","from":"todo.txt"}`)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rename_note", Arguments: raw})
	if err != nil {
		t.Fatal(err)
	}
	wantExecuted(t, res)
	if !e.notes.has("done.txt") || e.notes.has("todo.txt") {
		t.Fatal("rename did not happen")
	}
}

// Expiry is exclusive: valid while now < expires.
func TestTokenExpiry(t *testing.T) {
	for _, tc := range []struct {
		name   string
		after  time.Duration
		reason string
	}{
		{"one millisecond before", 5*time.Minute - time.Millisecond, ""},
		{"exactly at expiry", 5 * time.Minute, mcpsafe.ReasonTokenExpired},
		{"an hour later", time.Hour, mcpsafe.ReasonTokenExpired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			start := time.Now().Truncate(time.Millisecond)
			e.clock.Set(start)
			cs := e.connect(client{})
			args := map[string]any{"from": "todo.txt", "to": "done.txt"}
			tok := token(t, callTool(t, cs, "rename_note", args))
			e.clock.Set(start.Add(tc.after))
			args["approval_token"] = tok
			res := callTool(t, cs, "rename_note", args)
			if tc.reason == "" {
				wantExecuted(t, res)
			} else {
				wantRefused(t, res, tc.reason)
				if e.notes.executions() != 0 {
					t.Fatal("expired token ran the tool")
				}
			}
		})
	}
}

// An irreversible tool never gets a token unless named in the opt-in, in
// every mode; the opt-in names exactly one tool and may expire.
func TestIrreversibleOptIn(t *testing.T) {
	second := func(n *notes) mcpsafe.Tool {
		tool := n.deleteTool()
		tool.Name = "delete_note_forever"
		return tool
	}
	for _, mode := range []mcpsafe.Mode{mcpsafe.ModeAuto, mcpsafe.ModeToken} {
		t.Run(string(mode), func(t *testing.T) {
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = mode
				*tools = append(*tools, second(newNotes()))
			})
			cs := e.connect(client{})
			res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
			if mode == mcpsafe.ModeAuto {
				wantRefused(t, res, mcpsafe.ReasonElicitationUnsupported)
			} else {
				wantRefused(t, res, mcpsafe.ReasonPolicyDenied)
			}
			// Control: a reversible tool gets a token in the same setup.
			token(t, callTool(t, cs, "rename_note", map[string]any{"from": "a", "to": "b"}))
		})
	}
	t.Run("named opt-in", func(t *testing.T) {
		e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_note"}}
			*tools = append(*tools, second(newNotes("cache.txt")))
		})
		cs := e.connect(client{})
		token(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
		wantRefused(t, callTool(t, cs, "delete_note_forever", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonElicitationUnsupported)
		if err := e.gate.CheckOptIns(); err != nil {
			t.Fatalf("CheckOptIns: %v", err)
		}
	})
	t.Run("expired opt-in", func(t *testing.T) {
		e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
			o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_note", Until: time.Now().Add(time.Hour)}}
		})
		cs := e.connect(client{})
		tok := token(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
		e.clock.Set(time.Now().Add(time.Hour))
		wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": tok}), mcpsafe.ReasonPolicyDenied)
		wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonElicitationUnsupported)
	})
	t.Run("patterns are not names", func(t *testing.T) {
		for _, bad := range []string{"delete_*", "*", " delete_note", "delete_note "} {
			_, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: journal.Discard, AllowTokenFor: []mcpsafe.OptIn{{Tool: bad}}})
			if err == nil {
				t.Errorf("opt-in %q accepted", bad)
			}
		}
		// A prefix of a real tool name is not that tool.
		e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
			o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete"}}
		})
		if err := e.gate.CheckOptIns(); err == nil {
			t.Fatal("CheckOptIns accepted an opt-in naming no tool")
		}
		wantRefused(t, callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonElicitationUnsupported)
	})
}

// The resolver runs again right before execute: drift refuses.
func TestResolverDrift(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{manual: true, elicit: accept})
	res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
	e.notes.set("cache.txt", "someone replaced the contents")
	retry := func() *mcp.CallToolResult {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
			Name: "delete_note", Arguments: map[string]any{"path": "cache.txt"}, RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	wantRefused(t, retry(), mcpsafe.ReasonTargetChanged)
	if !e.notes.has("cache.txt") {
		t.Fatal("drifted target was deleted")
	}
	// Control: approve the current state; it runs.
	res = callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
	wantExecuted(t, retry())

	// A resolver that fails or finds nothing refuses before anyone is asked.
	e2 := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		(*tools)[0].Resolve = func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) { return nil, nil }
	})
	var asked atomic.Int32
	cs2 := e2.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return accept(ctx, r)
	}})
	wantRefused(t, callTool(t, cs2, "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonResolverFailed)
	wantRefused(t, callTool(t, cs2, "delete_note", map[string]any{"path": "missing.txt"}), mcpsafe.ReasonResolverFailed)
	if asked.Load() != 0 {
		t.Fatal("asked the human about a call the resolver could not resolve")
	}
}

// Principal, audience, process and policy bindings.
func TestGrantBindings(t *testing.T) {
	byClientName := func(req *mcp.CallToolRequest) string {
		return "client:" + req.Session.InitializeParams().ClientInfo.Name
	}
	keys, err := mcpsafe.NewKeys(bytesOf(1, 32))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Principal = byClientName; o.Keys = keys })
	alice := e.connect(client{name: "alice"})
	mallory := e.connect(client{name: "mallory"})
	args := map[string]any{"from": "todo.txt", "to": "done.txt"}
	tok := token(t, callTool(t, alice, "rename_note", args))
	withTok := map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": tok}

	t.Run("another principal", func(t *testing.T) {
		wantRefused(t, callTool(t, mallory, "rename_note", withTok), mcpsafe.ReasonTokenInvalid)
	})
	t.Run("another process", func(t *testing.T) {
		other := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Principal = byClientName })
		wantRefused(t, callTool(t, other.connect(client{name: "alice"}), "rename_note", withTok), mcpsafe.ReasonTokenInvalid)
	})
	t.Run("another audience with the same key", func(t *testing.T) {
		other := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
			o.Principal = byClientName
			o.Keys = keys
			o.Audience = "another-server"
		})
		wantRefused(t, callTool(t, other.connect(client{name: "alice"}), "rename_note", withTok), mcpsafe.ReasonTokenInvalid)
	})
	t.Run("policy changed", func(t *testing.T) {
		other := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.Principal = byClientName
			o.Keys = keys
			(*tools)[1].Deny = []mcpsafe.Rule{{Name: "never-on-sunday", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return false, nil }}}
		})
		wantRefused(t, callTool(t, other.connect(client{name: "alice"}), "rename_note", withTok), mcpsafe.ReasonTokenInvalid)
	})
	t.Run("control: same principal, same server", func(t *testing.T) {
		wantExecuted(t, callTool(t, alice, "rename_note", withTok))
	})
}

func bytesOf(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b + byte(i)
	}
	return out
}

// Arguments are checked before anything else.
func TestArgumentsInvalid(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{elicit: accept})
	for _, raw := range []string{
		`{"path":"cache.txt","path":"thesis.txt"}`,
		`{"path":"cache.txt","extra":1}`,
		`{"path":7}`,
		`{}`,
		`{"path":"cache.txt","approval_token":5}`,
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: json.RawMessage(raw)})
		if err != nil {
			continue // the SDK itself may reject some; nothing ran either way
		}
		wantRefused(t, res, mcpsafe.ReasonArgumentsInvalid)
	}
	if e.notes.executions() != 0 || !e.notes.has("cache.txt") || !e.notes.has("thesis.txt") {
		t.Fatal("invalid arguments ran the tool")
	}
	// Control.
	wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
}

// Rules: deny first, allow lists, auto-approve only on an exact true.
func TestRules(t *testing.T) {
	rule := func(name string, f func() (bool, error)) mcpsafe.Rule {
		return mcpsafe.Rule{Name: name, Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return f() }}
	}
	isTodo := func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (bool, error) {
		return r["path"] == "todo.txt", nil
	}
	t.Run("deny beats an accepting client", func(t *testing.T) {
		e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			(*tools)[0].Deny = []mcpsafe.Rule{{Name: "keep-thesis", Match: func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (bool, error) {
				return r["path"] == "thesis.txt", nil
			}}}
		})
		cs := e.connect(client{elicit: accept})
		wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "thesis.txt"}), mcpsafe.ReasonPolicyDenied)
		wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
		if !e.notes.has("thesis.txt") || e.notes.has("cache.txt") {
			t.Fatal("deny rule did not hold, or blocked the control")
		}
	})
	t.Run("failing deny rule denies", func(t *testing.T) {
		for _, f := range []func() (bool, error){
			func() (bool, error) { return false, errors.New("boom") },
			func() (bool, error) { panic("boom") },
		} {
			e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) { (*tools)[0].Deny = []mcpsafe.Rule{rule("flaky", f)} })
			wantRefused(t, callTool(t, e.connect(client{elicit: accept}), "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonPolicyDenied)
		}
	})
	t.Run("allow list", func(t *testing.T) {
		e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			(*tools)[0].Allow = []mcpsafe.Rule{{Name: "only-todo", Match: isTodo}}
		})
		cs := e.connect(client{elicit: accept})
		wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonPolicyDenied)
		wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "todo.txt"}))
	})
	t.Run("auto-approve", func(t *testing.T) {
		cases := []struct {
			name string
			f    func() (bool, error)
			auto bool
		}{
			{"exact true", func() (bool, error) { return true, nil }, true},
			{"false", func() (bool, error) { return false, nil }, false},
			{"true with error", func() (bool, error) { return true, errors.New("x") }, false},
			{"panic", func() (bool, error) { panic("x") }, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
					(*tools)[0].AutoApprove = []mcpsafe.Rule{rule("r", tc.f)}
				})
				var asked atomic.Int32
				cs := e.connect(client{elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					return &mcp.ElicitResult{Action: "decline"}, nil
				}})
				res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
				if tc.auto {
					wantExecuted(t, res)
					if asked.Load() != 0 || !slices.Contains(e.journal.decisions(), journal.PolicyAutoApproved) {
						t.Fatal("auto-approved call asked a human or was not journaled as policy-auto-approved")
					}
				} else {
					wantRefused(t, res, mcpsafe.ReasonDeclined)
					if asked.Load() != 1 {
						t.Fatal("a rule that did not return exactly true skipped the human")
					}
				}
			})
		}
	})
	t.Run("elicit mode ignores auto-approve", func(t *testing.T) {
		e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.Mode = mcpsafe.ModeElicit
			(*tools)[0].AutoApprove = []mcpsafe.Rule{rule("always", func() (bool, error) { return true, nil })}
		})
		wantRefused(t, callTool(t, e.connect(client{elicit: answer("decline", nil)}), "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonDeclined)
		wantRefused(t, callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonElicitationUnsupported)
	})
}

// Outstanding grants are capped; over the cap new requests are refused and
// the old grants still work.
func TestPendingCap(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.MaxPendingPerPrincipal = 2 })
	cs := e.connect(client{})
	args := func(to string) map[string]any { return map[string]any{"from": "todo.txt", "to": to} }
	t1 := token(t, callTool(t, cs, "rename_note", args("a")))
	token(t, callTool(t, cs, "rename_note", args("b")))
	wantRefused(t, callTool(t, cs, "rename_note", args("c")), mcpsafe.ReasonTooManyPending)
	a := args("a")
	a["approval_token"] = t1
	wantExecuted(t, callTool(t, cs, "rename_note", a))
	token(t, callTool(t, cs, "rename_note", args("c"))) // room again
}

// Journal and ledger failures refuse; nothing runs.
func TestFailClosedStores(t *testing.T) {
	t.Run("journal", func(t *testing.T) {
		e := newEnv(t, nil)
		e.journal.fail = errors.New("disk full")
		res := callTool(t, e.connect(client{elicit: accept}), "delete_note", map[string]any{"path": "cache.txt"})
		wantRefused(t, res, mcpsafe.ReasonJournalUnavailable)
		if !e.notes.has("cache.txt") {
			t.Fatal("ran without a journal record")
		}
	})
	t.Run("ledger", func(t *testing.T) {
		e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Ledger = brokenLedger{} })
		wantRefused(t, callTool(t, e.connect(client{elicit: accept}), "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonLedgerUnavailable)
		if !e.notes.has("cache.txt") {
			t.Fatal("ran without a ledger")
		}
	})
}

// brokenLedger stands in for a store that is down; ledger/ tests the real
// stores going down.
type brokenLedger struct{}

func (brokenLedger) Issue(context.Context, string, time.Time) error {
	return errors.New("connection refused")
}
func (brokenLedger) Standing() ledger.StandingStore { return nil }
func (brokenLedger) Outcomes() ledger.OutcomeStore  { return nil }

func (brokenLedger) Redeem(context.Context, string) (bool, error) {
	return false, errors.New("connection refused")
}

// Registration: annotations and the approval_token property.
func TestRegistration(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{})
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, tool := range lt.Tools {
		schema, _ := json.Marshal(tool.InputSchema)
		if !strings.Contains(string(schema), `"approval_token"`) {
			t.Errorf("%s schema lacks approval_token: %s", tool.Name, schema)
		}
		a := tool.Annotations
		switch tool.Name {
		case "delete_note":
			found++
			if a == nil || a.DestructiveHint == nil || !*a.DestructiveHint || a.ReadOnlyHint {
				t.Errorf("delete_note annotations %+v", a)
			}
		case "rename_note":
			found++
			if a == nil || a.DestructiveHint == nil || *a.DestructiveHint || a.ReadOnlyHint {
				t.Errorf("rename_note annotations %+v", a)
			}
		}
	}
	if found != 2 {
		t.Fatalf("listed %d gated tools, want 2", found)
	}
	if err := e.gate.Register(e.server, newNotes().deleteTool()); err == nil {
		t.Fatal("registered the same tool twice")
	}
	bad := newNotes().renameTool()
	bad.Name = "x"
	bad.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"approval_token": map[string]any{"type": "string"}}}
	if err := e.gate.Register(e.server, bad); err == nil {
		t.Fatal("accepted a schema that already has approval_token")
	}
	if _, err := mcpsafe.New(mcpsafe.Options{Audience: "x"}); err == nil {
		t.Fatal("New accepted a nil journal")
	}
}

// The approval record is durable in the real journal before Execute runs,
// with words that do not overclaim, and the outcome follows it.
func TestJournalWriteAhead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var atExecute []journal.Record
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Journal = j
		del := &(*tools)[0]
		inner := del.Execute
		del.Execute = func(ctx context.Context, c mcpsafe.Call, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			atExecute = readJournal(t, path) // what a crash right now would leave
			return inner(ctx, c, a)
		}
	})
	cs := e.connect(client{elicit: accept})
	wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	if len(atExecute) == 0 {
		t.Fatal("nothing was in the journal when Execute ran")
	}
	last := atExecute[len(atExecute)-1]
	if last.Decision != journal.ClientAccepted || last.Tool != "delete_note" || last.Call == "" || last.ArgsDigest == "" {
		t.Fatalf("last record before execute: %+v", last)
	}
	all := readJournal(t, path)
	out := all[len(all)-1]
	if out.Decision != journal.Executed || out.Call != last.Call {
		t.Fatalf("outcome record %+v does not follow approval %s", out, last.Call)
	}
	if _, err := journal.VerifyFile(path); err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		if strings.Contains(string(r.Args), "approval_token") {
			t.Fatal("the journal holds an approval token")
		}
	}
	// Control for the ordering: a refused call writes no approval record.
	n := len(all)
	wantRefused(t, callTool(t, e.connect(client{elicit: answer("decline", nil)}), "delete_note", map[string]any{"path": "thesis.txt"}), mcpsafe.ReasonDeclined)
	all = readJournal(t, path)
	if len(all) != n+1 || all[n].Decision != journal.Declined {
		t.Fatalf("decline recorded as %+v", all[n:])
	}
}

func readJournal(t *testing.T, path string) []journal.Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []journal.Record
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r journal.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// A legacy client's answer that arrives after the approval expired does not
// run the tool, even though the call started in time.
func TestLegacyAnswerAfterExpiry(t *testing.T) {
	var e *env
	e = newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.TTL = time.Minute })
	cs := e.connect(client{protocol: legacy, elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		e.clock.Set(e.clock.Now().Add(time.Minute)) // the human took a minute
		return accept(ctx, r)
	}})
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonTokenExpired)
	if !e.notes.has("cache.txt") {
		t.Fatal("an expired approval ran the tool")
	}
	// Control: answered in time.
	cs = e.connect(client{protocol: legacy, elicit: accept})
	wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
}

// An output schema is advertised only where no approval_required result
// (which does not follow it) can be returned.
func TestOutputSchemaOnlyWithoutTokens(t *testing.T) {
	out := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}
	for _, tc := range []struct {
		mode mcpsafe.Mode
		want bool
	}{{mcpsafe.ModeAuto, false}, {mcpsafe.ModeToken, false}, {mcpsafe.ModeElicit, true}} {
		e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.Mode = tc.mode
			(*tools)[1].OutputSchema = out
		})
		lt, err := e.connect(client{}).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range lt.Tools {
			if tool.Name == "rename_note" && (tool.OutputSchema != nil) != tc.want {
				t.Errorf("mode %s: output schema advertised = %v, want %v", tc.mode, tool.OutputSchema != nil, tc.want)
			}
		}
	}
}

// A call whose approved target stopped resolving reports target_changed; a
// forged token on an unresolvable target reports the plain reason instead.
func TestTargetGoneAfterApproval(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_note"}}
	})
	cs := e.connect(client{})
	tok := token(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	e.notes.mu.Lock()
	delete(e.notes.m, "cache.txt")
	e.notes.mu.Unlock()
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": tok}), mcpsafe.ReasonTargetChanged)
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": "forged"}), "not_found")
}
