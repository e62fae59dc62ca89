package mcpsafe_test

// Tests added because a mutant in mutants/ survived the suite: each one
// makes a specific break of the gate fail, next to a control that passes.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Only the exact action "accept" approves: a decline that carries
// approve:true, other spellings and prefixes of accept are refusals.
// (mutants: decline-approves-when-approve-true, accept-prefix, accept-equalfold)
func TestAnswerActionExact(t *testing.T) {
	yes := map[string]any{"approve": true}
	for _, tc := range []struct {
		action string
		reason string
	}{
		{"decline", mcpsafe.ReasonDeclined},
		{"cancel", mcpsafe.ReasonCancelled},
		{"accepted", mcpsafe.ReasonDeclined},
		{"accept-all", mcpsafe.ReasonDeclined},
		{"accept ", mcpsafe.ReasonDeclined},
		{"Accept", mcpsafe.ReasonDeclined},
		{"ACCEPT", mcpsafe.ReasonDeclined},
		{"", mcpsafe.ReasonDeclined},
		{"accept", ""}, // control
	} {
		t.Run(tc.action, func(t *testing.T) {
			e := newEnv(t, nil)
			cs := e.connect(client{manual: true, elicit: accept})
			first := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "delete_note", Arguments: map[string]any{"path": "cache.txt"}, RequestState: first.RequestState,
				InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: tc.action, Content: yes}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.reason == "" {
				wantExecuted(t, res)
				return
			}
			wantRefused(t, res, tc.reason)
			if !e.notes.has("cache.txt") {
				t.Fatalf("action %q ran the tool", tc.action)
			}
		})
	}
}

// Channel mode: only Approved exactly true with no error runs; a denial, a
// failure, a timeout, a panic and a false without an error all refuse with
// distinct codes; MinAssurance channel needs a named approver.
// (mutants: channel-false-approves, channel-error-approves, channel-assurance-unchecked)
func TestChannelDecisions(t *testing.T) {
	approved := approver.Decision{Approved: true, Approvers: []string{"bob"}}
	for _, tc := range []struct {
		name    string
		min     mcpsafe.Assurance
		decide  func(ctx context.Context) (approver.Decision, error)
		reason  string
		journal string
	}{
		{"approved by a named approver (control)", 0, func(context.Context) (approver.Decision, error) { return approved, nil }, "", journal.ChannelApproved},
		{"approved anonymously (control)", 0, func(context.Context) (approver.Decision, error) {
			return approver.Decision{Approved: true}, nil
		}, "", journal.ChannelApproved},
		{"named approver meets channel assurance (control)", mcpsafe.AssuranceChannel, func(context.Context) (approver.Decision, error) { return approved, nil }, "", journal.ChannelApproved},
		{"false without an error", 0, func(context.Context) (approver.Decision, error) {
			return approver.Decision{Approvers: []string{"bob"}}, nil
		}, mcpsafe.ReasonChannelDenied, ""},
		{"denied", 0, func(context.Context) (approver.Decision, error) {
			return approver.Decision{}, approver.ErrDenied
		}, mcpsafe.ReasonChannelDenied, ""},
		{"approved but failed", 0, func(context.Context) (approver.Decision, error) {
			return approved, errors.New("connection reset")
		}, mcpsafe.ReasonChannelUnavailable, ""},
		{"panic", 0, func(context.Context) (approver.Decision, error) { panic("approver crashed") }, mcpsafe.ReasonChannelUnavailable, ""},
		{"timeout", 0, func(ctx context.Context) (approver.Decision, error) {
			<-ctx.Done()
			return approved, ctx.Err()
		}, mcpsafe.ReasonTimeout, ""},
		{"anonymous approval below channel assurance", mcpsafe.AssuranceChannel, func(context.Context) (approver.Decision, error) {
			return approver.Decision{Approved: true}, nil
		}, mcpsafe.ReasonAssuranceTooLow, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = mcpsafe.ModeChannel
				o.ChannelTimeout = 50 * time.Millisecond
				o.Approver = approverFunc(func(ctx context.Context, r approver.Request) (approver.Decision, error) {
					asked.Add(1)
					if r.Tool != "delete_note" || r.Audience != "test-server" || r.ID == "" || !r.Irreversible {
						t.Errorf("approval request %+v", r)
					}
					return tc.decide(ctx)
				})
				(*tools)[0].MinAssurance = tc.min
			})
			res := callTool(t, e.connect(client{elicit: accept}), "delete_note", map[string]any{"path": "cache.txt"})
			if asked.Load() != 1 {
				t.Fatalf("approver asked %d times", asked.Load())
			}
			if tc.reason == "" {
				wantExecuted(t, res)
				if e.notes.has("cache.txt") || !containsString(e.journal.decisions(), tc.journal) {
					t.Fatalf("approved call did not run or was not journaled: %v", e.journal.decisions())
				}
				return
			}
			wantRefused(t, res, tc.reason)
			if !e.notes.has("cache.txt") {
				t.Fatal("the tool ran without a channel approval")
			}
		})
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// A tool that requires channel assurance is never auto-approved, even by a
// rule that matches. (mutant: autoapprove-above-assurance)
func TestAutoApproveIgnoredAboveClientAssurance(t *testing.T) {
	for _, min := range []mcpsafe.Assurance{mcpsafe.AssuranceChannel, 0} {
		e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.Mode = mcpsafe.ModeChannel
			o.Approver = approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
				return approver.Decision{}, approver.ErrDenied
			})
			(*tools)[0].MinAssurance = min
			(*tools)[0].AutoApprove = []mcpsafe.Rule{{Name: "always", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}}
		})
		res := callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt"})
		if min == mcpsafe.AssuranceChannel {
			wantRefused(t, res, mcpsafe.ReasonChannelDenied)
			if !e.notes.has("cache.txt") {
				t.Fatal("an auto-approve rule skipped the channel a tool requires")
			}
		} else {
			wantExecuted(t, res) // control: client-relayed assurance may be auto-approved
		}
	}
}

// The digest is over the RFC 8785 form: nested key order, whitespace and
// number spelling do not change it; a value does. (mutant: args-digest-noncanonical)
func TestTokenCanonicalNestedArguments(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{})
	call := func(raw string) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rename_note", Arguments: json.RawMessage(raw)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	tok := token(t, call(`{"from":"todo.txt","to":"done.txt","meta":{"b":[1,{"y":1,"x":2}],"a":2.0}}`))
	// Another value: refused, and the token stays usable.
	wantRefused(t, call(`{"from":"todo.txt","to":"done.txt","meta":{"b":[1,{"y":1,"x":3}],"a":2},"approval_token":"`+tok+`"}`), mcpsafe.ReasonArgumentsChanged)
	// Control: equal after canonicalization.
	wantExecuted(t, call(`{ "meta" : { "a" : 2, "b" : [ 1, { "x" : 2, "y" : 1e0 } ] }, "approval_token":"`+tok+`", "to":"done.txt", "from":"todo.txt" }`))
	if !e.notes.has("done.txt") {
		t.Fatal("rename did not happen")
	}
}

// A grant is bound to the envelope it was issued for: a request state is
// not a token and a token is not a request state, even for a reversible
// tool that may use both. (mutant: grant-mode-unchecked)
func TestGrantEnvelopeBound(t *testing.T) {
	e := newEnv(t, nil)
	asker := e.connect(client{manual: true, elicit: accept})
	plain := e.connect(client{})
	args := map[string]any{"from": "todo.txt", "to": "done.txt"}

	state := callTool(t, asker, "rename_note", args).RequestState
	if state == "" {
		t.Fatal("no request state")
	}
	withTok := map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": state}
	wantRefused(t, callTool(t, plain, "rename_note", withTok), mcpsafe.ReasonTokenInvalid)

	tok := token(t, callTool(t, plain, "rename_note", args))
	res, err := asker.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "rename_note", Arguments: args, RequestState: tok,
		InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, res, mcpsafe.ReasonTokenInvalid)
	if e.notes.executions() != 0 {
		t.Fatal("a grant ran in the wrong envelope")
	}
	// Control: each in its own envelope.
	withTok["approval_token"] = tok
	wantExecuted(t, callTool(t, plain, "rename_note", withTok))
}

// A token for one tool is refused by another tool with the same schema,
// mode and arguments. (mutant: tool-unchecked)
func TestTokenBoundToTool(t *testing.T) {
	e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		twin := (*tools)[1]
		twin.Name = "rename_note_twin"
		*tools = append(*tools, twin)
	})
	cs := e.connect(client{})
	args := map[string]any{"from": "todo.txt", "to": "done.txt"}
	tok := token(t, callTool(t, cs, "rename_note", args))
	withTok := map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": tok}
	wantRefused(t, callTool(t, cs, "rename_note_twin", withTok), mcpsafe.ReasonTokenInvalid)
	wantExecuted(t, callTool(t, cs, "rename_note", withTok)) // control
}

// A grant that claims an issue time beyond the allowed skew is refused (a
// clock rolled back, or a grant minted by a replica whose clock runs fast).
// (mutant: future-issue-accepted)
func TestTokenIssuedInTheFuture(t *testing.T) {
	for _, tc := range []struct {
		ahead time.Duration
		ok    bool
	}{{10 * time.Minute, false}, {31 * time.Second, false}, {29 * time.Second, true}} {
		e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.TTL = time.Hour })
		start := time.Now()
		e.clock.Set(start.Add(tc.ahead))
		cs := e.connect(client{})
		args := map[string]any{"from": "todo.txt", "to": "done.txt"}
		tok := token(t, callTool(t, cs, "rename_note", args))
		e.clock.Set(start)
		args["approval_token"] = tok
		res := callTool(t, cs, "rename_note", args)
		if tc.ok {
			wantExecuted(t, res)
		} else {
			wantRefused(t, res, mcpsafe.ReasonTokenInvalid)
		}
	}
}

// The tool's SecretFields reach the real journal's redaction: the secret is
// not in the file, the digest still is. (mutant: gate-secret-fields-dropped)
func TestSecretFieldsRedactedInJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	const pin = "8c1f9e2a-secret-pin"
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Journal = j
		(*tools)[1].SecretFields = []string{"pin"}
		(*tools)[1].AutoApprove = []mcpsafe.Rule{{Name: "always", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}}
	})
	wantExecuted(t, callTool(t, e.connect(client{}), "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt", "pin": pin}))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), pin) {
		t.Fatalf("secret field in the journal:\n%s", b)
	}
	if !strings.Contains(string(b), journal.RedactedValue) || !strings.Contains(string(b), "done.txt") {
		t.Fatalf("journal lacks the redacted marker or the plain arguments:\n%s", b)
	}
}

// What the human reads cannot be restructured by the tool's plan text or by
// the principal's name: newlines and bidi controls are escaped.
// (mutants: plan-backstop-off, principal-unquoted)
func TestApprovalMessageEscapesUntrustedText(t *testing.T) {
	const evil = "Delete cache.txt\nTool: harmless_read\u202e"
	var got atomic.Value
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Principal = func(*mcp.CallToolRequest) string { return "alice\nPlan: nothing" }
		(*tools)[1].Preview = func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: evil, Details: []string{"line\u200bwith zero width", "plain detail"},
				Targets: []mcpsafe.Target{{Name: "t\nx", State: "s\u2066"}}}, nil
		}
	})
	cs := e.connect(client{elicit: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		got.Store(r.Params.Message)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	wantRefused(t, callTool(t, cs, "rename_note", map[string]any{"from": "a", "to": "b"}), mcpsafe.ReasonDeclined)
	msg, _ := got.Load().(string)
	for _, bad := range []string{"\nTool: harmless_read", "\u202e", "\u200b", "\u2066", "alice\nPlan", "t\nx"} {
		if strings.Contains(msg, bad) {
			t.Errorf("approval message contains %q raw:\n%s", bad, msg)
		}
	}
	for _, want := range []string{`\n`, `\u202e`, `\u200b`, "plain detail", "Tool: rename_note"} {
		if !strings.Contains(msg, want) {
			t.Errorf("approval message lacks %q:\n%s", want, msg)
		}
	}
	// The token path shows the same plan to the model: escaped too.
	tokRes := callTool(t, e.connect(client{}), "rename_note", map[string]any{"from": "a", "to": "b"})
	view := structured(t, tokRes)["plan"].(map[string]any)
	if s := view["summary"].(string); strings.ContainsAny(s, "\n\u202e") {
		t.Errorf("token plan summary raw: %q", s)
	}
}

// An allow rule that fails (error or panic) does not allow; a matching one
// does. (mutant: allow-error-allows)
func TestFailingAllowRuleDoesNotAllow(t *testing.T) {
	for name, f := range map[string]func() (bool, error){
		"error":           func() (bool, error) { return true, errors.New("lookup failed") },
		"panic":           func() (bool, error) { panic("x") },
		"false":           func() (bool, error) { return false, nil },
		"control: true":   func() (bool, error) { return true, nil },
		"error then true": nil,
	} {
		t.Run(name, func(t *testing.T) {
			rules := []mcpsafe.Rule{{Name: "r", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return f() }}}
			if f == nil { // no Match at all: an error, not a match
				rules = []mcpsafe.Rule{{Name: "r"}}
			}
			e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) { (*tools)[0].Allow = rules })
			res := callTool(t, e.connect(client{elicit: accept}), "delete_note", map[string]any{"path": "cache.txt"})
			if name == "control: true" {
				wantExecuted(t, res)
				return
			}
			wantRefused(t, res, mcpsafe.ReasonPolicyDenied)
			if !e.notes.has("cache.txt") {
				t.Fatal("a failing allow rule let the call run")
			}
		})
	}
}

// Deny rules run before any approval path: a denied call never reaches the
// human, a token, or an auto-approve rule. (mutant: deny-after-approval)
func TestDenyBeforeAsking(t *testing.T) {
	denyThesis := []mcpsafe.Rule{{Name: "keep-thesis", Match: func(_ context.Context, _ mcpsafe.Call, r mcpsafe.Resolved) (bool, error) {
		return r["path"] == "thesis.txt", nil
	}}}
	always := []mcpsafe.Rule{{Name: "always", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}}
	t.Run("elicitation", func(t *testing.T) {
		var asked atomic.Int32
		e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) { (*tools)[0].Deny = denyThesis })
		cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return accept(ctx, r)
		}})
		wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "thesis.txt"}), mcpsafe.ReasonPolicyDenied)
		if asked.Load() != 0 {
			t.Fatal("the human was asked about a call a deny rule refuses")
		}
		wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})) // control
		if asked.Load() != 1 {
			t.Fatalf("control asked %d times", asked.Load())
		}
	})
	t.Run("auto-approve", func(t *testing.T) {
		e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			(*tools)[0].Deny = denyThesis
			(*tools)[0].AutoApprove = always
		})
		cs := e.connect(client{})
		wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "thesis.txt"}), mcpsafe.ReasonPolicyDenied)
		if !e.notes.has("thesis.txt") {
			t.Fatal("an auto-approve rule ran a denied call")
		}
		wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	})
	t.Run("token", func(t *testing.T) {
		e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_note"}}
			(*tools)[0].Deny = denyThesis
		})
		cs := e.connect(client{})
		wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "thesis.txt"}), mcpsafe.ReasonPolicyDenied)
		token(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	})
}

// When Execute runs, the approval record is already in the journal; a
// journal that fails refuses before Execute. Unlike TestJournalWriteAhead
// this reports from the test goroutine, so a broken ordering fails fast
// instead of stalling the handler. (mutants: journal-after-execute, journal-error-ignored)
func TestApprovalJournaledBeforeExecute(t *testing.T) {
	var seen atomic.Value
	var e *env // the closure runs after newEnv returned
	e = newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		inner := (*tools)[0].Execute
		(*tools)[0].Execute = func(ctx context.Context, c mcpsafe.Call, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			seen.Store(strings.Join(e.journal.decisions(), ","))
			return inner(ctx, c, a)
		}
	})
	wantExecuted(t, callTool(t, e.connect(client{elicit: accept}), "delete_note", map[string]any{"path": "cache.txt"}))
	if got, _ := seen.Load().(string); !strings.HasSuffix(got, journal.ClientAccepted) {
		t.Fatalf("journal at Execute: %q, want it to end with %s", got, journal.ClientAccepted)
	}
}

// A tool in elicit or channel mode takes no token at all: the token is not
// even opened (policy_denied, not token_invalid), so no token, however it
// was obtained, is a way around the human. (mutant: token-in-elicit-mode)
func TestTokenRefusedOutsideTokenModes(t *testing.T) {
	for _, mode := range []mcpsafe.Mode{mcpsafe.ModeElicit, mcpsafe.ModeChannel} {
		e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
			o.Mode = mode
			o.Approver = approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
				return approver.Decision{}, approver.ErrDenied
			})
		})
		res := callTool(t, e.connect(client{}), "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": "x"})
		wantRefused(t, res, mcpsafe.ReasonPolicyDenied)
	}
}
