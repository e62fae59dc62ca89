package mcpsafe_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/grants/celscope"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeTool writes a note: reversible, so it offers standing grants without
// an opt-in. Its scopes: exactly these arguments, and paths under the
// directory of the approved path.
func (n *notes) writeTool(p *mcpsafe.GrantPolicy) mcpsafe.Tool {
	return mcpsafe.Tool{
		Name: "write_note",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path": map[string]any{"type": "string"},
				"text": map[string]any{"type": "string"},
			},
			"required": []string{"path", "text"},
		},
		Grants: p,
		Preview: func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
			var a struct{ Path, Text string }
			if err := c.Decode(&a); err != nil {
				return mcpsafe.Plan{}, err
			}
			return mcpsafe.Plan{Summary: fmt.Sprintf("Write %d bytes to note %q", len(a.Text), a.Path)}, nil
		},
		Execute: func(ctx context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			var a struct{ Path, Text string }
			if err := c.Decode(&a); err != nil {
				return nil, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			n.execs++
			n.m[a.Path] = a.Text
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
		},
	}
}

// dirScope is the scope "paths under DIR/" of the approved call.
func dirScope(c mcpsafe.Call, _ mcpsafe.Resolved) ([]grants.Scope, error) {
	var a struct{ Path string }
	if err := c.Decode(&a); err != nil {
		return nil, err
	}
	dir, _, ok := strings.Cut(a.Path, "/")
	if !ok {
		return nil, nil
	}
	return []grants.Scope{{
		Words: "paths under " + dir + "/",
		CEL:   fmt.Sprintf("args.path.startsWith(%q) && !args.path.contains('..')", dir+"/"),
	}}, nil
}

func grantPolicy() *mcpsafe.GrantPolicy {
	return &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: 3, ClientRelayed: true, Scopes: dirScope}
}

// asker answers every elicitation: the first with choice (a grant ID, or ""
// for no grant field), later ones decline. It counts how often it was asked.
type asker struct {
	asked  atomic.Int32
	choice string
	schema atomic.Value // the last requested schema
	msg    atomic.Value
}

func (a *asker) elicit(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	n := a.asked.Add(1)
	a.schema.Store(fmt.Sprint(r.Params.RequestedSchema))
	a.msg.Store(r.Params.Message)
	if n > 1 {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	content := map[string]any{"approve": true}
	if a.choice != "" {
		content["grant"] = a.choice
	}
	return &mcp.ElicitResult{Action: "accept", Content: content}, nil
}

type grantEnv struct {
	*env
	store  *ledger.Memory
	writes *notes // what write_note wrote
}

func newGrantEnv(t *testing.T, p *mcpsafe.GrantPolicy, adjust func(*mcpsafe.Options, *[]mcpsafe.Tool)) *grantEnv {
	store := ledger.NewMemory(0)
	t.Cleanup(func() { store.Close() })
	writes := newNotes()
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Ledger = store
		o.GrantCEL = celscope.New()
		o.Principal = func(req *mcp.CallToolRequest) string {
			return "client:" + req.Session.InitializeParams().ClientInfo.Name
		}
		*tools = append(*tools, writes.writeTool(p))
		if adjust != nil {
			adjust(o, tools)
		}
	})
	return &grantEnv{env: e, store: store, writes: writes}
}

func (e *grantEnv) write(cs *mcp.ClientSession, path string) *mcp.CallToolResult {
	e.t.Helper()
	return callTool(e.t, cs, "write_note", map[string]any{"path": path, "text": "x"})
}

// grantFirst approves tmp/a.txt with choice through a real client and
// returns the session and its asker.
func (e *grantEnv) grantFirst(name, choice string) (*mcp.ClientSession, *asker) {
	e.t.Helper()
	a := &asker{choice: choice}
	cs := e.connect(client{name: name, elicit: a.elicit})
	wantExecuted(e.t, e.write(cs, "tmp/a.txt"))
	if a.asked.Load() != 1 {
		e.t.Fatalf("asked %d times, want 1", a.asked.Load())
	}
	return cs, a
}

func countDecisions(e *env, d string) int {
	n := 0
	for _, x := range e.journal.decisions() {
		if x == d || strings.HasPrefix(x, d+":") {
			n++
		}
	}
	return n
}

// The offers: grant-1-* is "exactly these arguments", grant-2-* "paths
// under tmp/"; -1 is 15 minutes and 3 uses, -2 the ceiling (1 hour, 3 uses).
const tmpFor15m = "grant-2-1"

func TestStandingGrantFitsThenUsedUp(t *testing.T) {
	e := newGrantEnv(t, grantPolicy(), nil)
	cs, a := e.grantFirst("alice", tmpFor15m)
	if s, _ := a.schema.Load().(string); !strings.Contains(s, tmpFor15m) || !strings.Contains(s, "once") {
		t.Fatalf("the form does not offer the grant: %s", s)
	}
	if m, _ := a.msg.Load().(string); !strings.Contains(m, "paths under tmp/") || !strings.Contains(m, "startsWith") {
		t.Fatalf("the prompt does not show the scope in words and CEL: %s", m)
	}
	// Uses 2 and 3 run without asking.
	wantExecuted(t, e.write(cs, "tmp/b.txt"))
	wantExecuted(t, e.write(cs, "tmp/c.txt"))
	if a.asked.Load() != 1 || e.writes.executions() != 3 {
		t.Fatalf("asked %d, executed %d; want 1, 3", a.asked.Load(), e.writes.executions())
	}
	// Use 4 asks (and the asker declines).
	wantRefused(t, e.write(cs, "tmp/d.txt"), mcpsafe.ReasonDeclined)
	if a.asked.Load() != 2 || e.writes.executions() != 3 {
		t.Fatalf("after the last use: asked %d, executed %d; want 2, 3", a.asked.Load(), e.writes.executions())
	}
	for d, want := range map[string]int{journal.GrantCreated: 1, journal.GrantUsed: 2, journal.GrantEnded + ":used-up": 1, journal.Executed: 3} {
		if got := countDecisions(e.env, d); got != want {
			t.Errorf("journal has %d %s records, want %d: %v", got, d, want, e.journal.decisions())
		}
	}
	e.journal.mu.Lock()
	defer e.journal.mu.Unlock()
	var grantID string
	for _, r := range e.journal.recs {
		switch r.Decision {
		case journal.GrantCreated:
			grantID = r.Grant
			if r.By != "client" || !strings.Contains(r.Summary, "paths under tmp/") || !strings.Contains(r.Summary, "startsWith") || !strings.Contains(r.Summary, "3 uses") {
				t.Errorf("grant record lacks who, scope or limits: %+v", r)
			}
		case journal.GrantUsed:
			if r.Grant == "" || r.Grant != grantID {
				t.Errorf("use record names grant %q, want %q", r.Grant, grantID)
			}
		}
	}
}

func TestStandingGrantDoesNotFit(t *testing.T) {
	cases := []struct {
		name, path, client string
	}{
		{"outside the scope", "home/x.txt", "alice"},
		{"escape attempt", "tmp/../home/x.txt", "alice"},
		{"another principal", "tmp/b.txt", "mallory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newGrantEnv(t, grantPolicy(), nil)
			cs, a := e.grantFirst("alice", tmpFor15m)
			if tc.client != "alice" {
				b := &asker{}
				other := e.connect(client{name: tc.client, elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					b.asked.Add(1)
					return &mcp.ElicitResult{Action: "decline"}, nil
				}})
				wantRefused(t, e.write(other, tc.path), mcpsafe.ReasonDeclined)
				if b.asked.Load() != 1 {
					t.Fatalf("the other principal was asked %d times, want 1", b.asked.Load())
				}
			} else {
				wantRefused(t, e.write(cs, tc.path), mcpsafe.ReasonDeclined)
				if a.asked.Load() != 2 {
					t.Fatalf("asked %d times, want 2 (the call did not fit)", a.asked.Load())
				}
			}
			// Control: a fitting call by alice runs without asking.
			wantExecuted(t, e.write(cs, "tmp/ok.txt"))
			if e.writes.executions() != 2 {
				t.Fatalf("executed %d, want 2", e.writes.executions())
			}
		})
	}
}

func TestStandingGrantExpiryBoundary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration
		runs  bool
	}{
		{"one millisecond before", 15*time.Minute - time.Millisecond, true},
		{"at expiry", 15 * time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGrantEnv(t, grantPolicy(), nil)
			// Expiry is kept in milliseconds: start on one, so that "at
			// expiry" is exactly the instant the grant ends.
			start := e.clock.Now().Truncate(time.Millisecond)
			e.clock.Set(start)
			cs, a := e.grantFirst("alice", tmpFor15m)
			e.clock.Set(start.Add(tc.after))
			res := e.write(cs, "tmp/b.txt")
			if tc.runs {
				wantExecuted(t, res)
			} else {
				wantRefused(t, res, mcpsafe.ReasonDeclined)
			}
			if (a.asked.Load() == 1) != tc.runs {
				t.Fatalf("asked %d times; runs without asking = %v", a.asked.Load(), tc.runs)
			}
		})
	}
}

func TestStandingGrantRevoked(t *testing.T) {
	for _, revoke := range []bool{true, false} {
		t.Run(fmt.Sprintf("revoke=%v", revoke), func(t *testing.T) {
			e := newGrantEnv(t, grantPolicy(), nil)
			cs, a := e.grantFirst("alice", tmpFor15m)
			list, err := grants.List(context.Background(), e.store)
			if err != nil || len(list) != 1 || list[0].Tool != "write_note" || list[0].Principal != "client:alice" || list[0].UsesLeft != 2 || list[0].Uses != 3 {
				t.Fatalf("Grants = %+v, %v", list, err)
			}
			if revoke {
				ended, err := grants.Revoke(context.Background(), e.store, "admin via the test", func(g grants.Info) bool { return g.Principal == "client:alice" })
				if err != nil || len(ended) != 1 {
					t.Fatalf("RevokeGrants = %+v, %v", ended, err)
				}
			}
			res := e.write(cs, "tmp/b.txt")
			if revoke {
				wantRefused(t, res, mcpsafe.ReasonDeclined)
				if a.asked.Load() != 2 {
					t.Fatalf("asked %d, want 2", a.asked.Load())
				}
			} else {
				wantExecuted(t, res)
			}
		})
	}
}

func TestStandingGrantVoidAfterPolicyChange(t *testing.T) {
	for _, change := range []bool{true, false} {
		t.Run(fmt.Sprintf("change=%v", change), func(t *testing.T) {
			e := newGrantEnv(t, grantPolicy(), nil)
			cs, a := e.grantFirst("alice", tmpFor15m)
			p := grantPolicy()
			if change {
				p.MaxUses = 2 // a lower ceiling
			}
			e.gate.Remove(e.server, "write_note")
			if err := e.gate.Register(e.server, e.writes.writeTool(p)); err != nil {
				t.Fatal(err)
			}
			res := e.write(cs, "tmp/b.txt")
			if !change {
				wantExecuted(t, res)
				return
			}
			wantRefused(t, res, mcpsafe.ReasonDeclined)
			if a.asked.Load() != 2 || countDecisions(e.env, journal.GrantEnded+":policy-changed") != 1 {
				t.Fatalf("asked %d; journal %v", a.asked.Load(), e.journal.decisions())
			}
		})
	}
}

func TestStandingGrantAnswerMustBeListed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		choice any
		ran    bool
	}{
		{"listed grant", tmpFor15m, true},
		{"once", "once", true},
		{"unlisted id", "grant-9-9", false},
		{"case variant", "GRANT-2-1", false},
		{"label instead of id", "paths under tmp/", false},
		{"not a string", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGrantEnv(t, grantPolicy(), nil)
			// Past the SDK's own schema check, as a hostile client would.
			cs := e.connect(client{name: "alice", manual: true, elicit: accept})
			first := e.write(cs, "tmp/a.txt")
			if first.RequestState == "" {
				t.Fatalf("want input_required, got %v", text(first))
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "write_note", Arguments: map[string]any{"path": "tmp/a.txt", "text": "x"},
				RequestState: first.RequestState,
				InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{
					Action: "accept", Content: map[string]any{"approve": true, "grant": tc.choice},
				}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.ran {
				wantExecuted(t, res)
			} else {
				wantRefused(t, res, mcpsafe.ReasonDeclined)
				if e.writes.executions() != 0 || countDecisions(e.env, journal.GrantCreated) != 0 {
					t.Fatalf("an unlisted answer ran or made a grant: %v", e.journal.decisions())
				}
			}
		})
	}
}

func TestStandingGrantForIrreversibleOnlyWhenNamed(t *testing.T) {
	for _, named := range []bool{false, true} {
		t.Run(fmt.Sprintf("named=%v", named), func(t *testing.T) {
			e := newGrantEnv(t, grantPolicy(), func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				(*tools)[0].Grants = &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: 5, ClientRelayed: true}
				if named {
					o.AllowGrantsFor = []string{"delete_note"}
				}
			})
			a := &asker{choice: "grant-1-1"}
			cs := e.connect(client{name: "alice", elicit: a.elicit})
			res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
			schema, _ := a.schema.Load().(string)
			if named {
				wantExecuted(t, res)
				if !strings.Contains(schema, "grant-1-1") || countDecisions(e.env, journal.GrantCreated) != 1 {
					t.Fatalf("named irreversible tool: schema %s, journal %v", schema, e.journal.decisions())
				}
				return
			}
			if strings.Contains(schema, "grant") {
				t.Fatalf("unnamed irreversible tool offers grants: %s", schema)
			}
			wantRefused(t, res, mcpsafe.ReasonDeclined)
			if !e.notes.has("cache.txt") {
				t.Fatal("ran although the answer chose a grant that was never offered")
			}
		})
	}
}

// A scope that errors or yields a non-bool covers nothing: the call asks.
func TestStandingGrantScopeFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name, cel string
		fits      bool
	}{
		{"missing key errors", `args.nothing == "x"`, false},
		{"string true", `"true"`, false},
		{"number", `1`, false},
		{"map", `{"a": true}`, false},
		{"false", `false`, false},
		{"exact true", `true`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := grantPolicy()
			p.Scopes = func(mcpsafe.Call, mcpsafe.Resolved) ([]grants.Scope, error) {
				return []grants.Scope{{Words: "anything (test)", CEL: tc.cel}}, nil
			}
			e := newGrantEnv(t, p, nil)
			cs, a := e.grantFirst("alice", "grant-2-1")
			res := e.write(cs, "tmp/b.txt")
			if tc.fits {
				wantExecuted(t, res)
			} else {
				wantRefused(t, res, mcpsafe.ReasonDeclined)
			}
			if (a.asked.Load() == 1) != tc.fits {
				t.Fatalf("asked %d times, fits = %v", a.asked.Load(), tc.fits)
			}
		})
	}
}

func TestStandingGrantClientRelayedOnlyWhenAllowed(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		t.Run(fmt.Sprintf("allowed=%v", allowed), func(t *testing.T) {
			p := grantPolicy()
			p.ClientRelayed = allowed
			e := newGrantEnv(t, p, nil)
			a := &asker{choice: tmpFor15m}
			cs := e.connect(client{name: "alice", elicit: a.elicit})
			res := e.write(cs, "tmp/a.txt")
			if allowed {
				wantExecuted(t, res)
				return
			}
			wantRefused(t, res, mcpsafe.ReasonDeclined)
			if s, _ := a.schema.Load().(string); strings.Contains(s, "grant") {
				t.Fatalf("a client-relayed form offers grants the policy does not allow: %s", s)
			}
		})
	}
}

// Through the channel, an authenticated approver's grant carries channel
// assurance, and a tool requiring it runs under the grant; a channel answer
// without approvers cannot create one unless client-relayed grants are on.
func TestStandingGrantThroughChannel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		approvers []string
		minA      mcpsafe.Assurance
		runs      bool
	}{
		{"authenticated approver", []string{"alice@example.com"}, mcpsafe.AssuranceChannel, true},
		{"no approver named", nil, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			var offered []approver.GrantOffer
			p := grantPolicy()
			p.ClientRelayed = false
			e := newGrantEnv(t, p, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = mcpsafe.ModeChannel
				o.Approver = approverFunc(func(_ context.Context, r approver.Request) (approver.Decision, error) {
					if asked.Add(1) > 1 {
						return approver.Decision{}, approver.ErrDenied
					}
					offered = r.Grants
					return approver.Decision{Approved: true, Approvers: tc.approvers, Grant: tmpFor15m}, nil
				})
				(*tools)[2].MinAssurance = tc.minA
			})
			cs := e.connect(client{name: "alice"})
			first := e.write(cs, "tmp/a.txt")
			if !slices.ContainsFunc(offered, func(o approver.GrantOffer) bool { return o.ID == tmpFor15m && o.Uses == 3 && o.TTL == 15*time.Minute }) {
				t.Fatalf("the channel request does not offer %s: %+v", tmpFor15m, offered)
			}
			if !tc.runs {
				wantRefused(t, first, mcpsafe.ReasonDeclined)
				return
			}
			wantExecuted(t, first)
			wantExecuted(t, e.write(cs, "tmp/b.txt"))
			if asked.Load() != 1 {
				t.Fatalf("the approver was asked %d times, want 1", asked.Load())
			}
		})
	}
}

func TestCheckOptInsGrants(t *testing.T) {
	for _, tc := range []struct {
		name  string
		allow []string
		grant bool // delete_note has a grant policy
		want  string
	}{
		{"not a tool", []string{"delete_notes"}, true, "not a gated tool"},
		{"reversible", []string{"rename_note"}, true, "reversible"},
		{"no grant policy", []string{"delete_note"}, false, "no grant policy"},
		{"control", []string{"delete_note"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGrantEnv(t, grantPolicy(), func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.AllowGrantsFor = tc.allow
				if tc.grant {
					(*tools)[0].Grants = grantPolicy()
				}
			})
			err := e.gate.CheckOptIns()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("CheckOptIns = %v, want %q", err, tc.want)
			}
		})
	}
}

// A client on an older protocol is asked in-call; its answer creates the
// grant the same way.
func TestStandingGrantLegacyClient(t *testing.T) {
	e := newGrantEnv(t, grantPolicy(), nil)
	a := &asker{choice: tmpFor15m}
	cs := e.connect(client{name: "alice", protocol: legacy, elicit: a.elicit})
	wantExecuted(t, e.write(cs, "tmp/a.txt"))
	wantExecuted(t, e.write(cs, "tmp/b.txt"))
	if a.asked.Load() != 1 || e.writes.executions() != 2 || countDecisions(e.env, journal.GrantUsed) != 1 {
		t.Fatalf("asked %d, executed %d, journal %v", a.asked.Load(), e.writes.executions(), e.journal.decisions())
	}
}

// The ledger holds grants sealed; an entry someone wrote into it without
// the key, or a real sealed grant copied under another ID (to get fresh
// uses), covers nothing.
func TestStandingGrantForgedInLedger(t *testing.T) {
	ctx := context.Background()
	for _, forge := range []string{"garbage seal", "copied under another id", "none (control)"} {
		t.Run(forge, func(t *testing.T) {
			e := newGrantEnv(t, grantPolicy(), nil)
			cs, a := e.grantFirst("alice", tmpFor15m)
			real, err := e.store.StandingFor(ctx, "")
			if err != nil || len(real) != 1 {
				t.Fatalf("ledger: %+v, %v", real, err)
			}
			s := real[0]
			if forge != "none (control)" {
				if ok, err := e.store.RevokeStanding(ctx, s.ID, ledger.Revocation{By: "the test"}); !ok || err != nil {
					t.Fatal(err)
				}
				fake := ledger.Standing{ID: "0000000000000000000000000000beef", Scope: s.Scope, Expires: s.Expires, Uses: 100, Data: s.Data}
				if forge == "garbage seal" {
					fake.Data = []byte(`{"info":{"id":"0000000000000000000000000000beef","tool":"write_note"},"sealed":"AAAA"}`)
				}
				if err := e.store.PutStanding(ctx, fake); err != nil {
					t.Fatal(err)
				}
			}
			res := e.write(cs, "tmp/b.txt")
			if forge == "none (control)" {
				wantExecuted(t, res)
				return
			}
			wantRefused(t, res, mcpsafe.ReasonDeclined)
			if a.asked.Load() != 2 || e.writes.executions() != 1 {
				t.Fatalf("a forged grant covered the call: asked %d, executed %d", a.asked.Load(), e.writes.executions())
			}
		})
	}
}

// A grant is made only for the state the approver saw: if the target
// changes while the human decides, no grant is created and nothing runs.
func TestStandingGrantNotMadeOnChangedTarget(t *testing.T) {
	for _, change := range []bool{true, false} {
		t.Run(fmt.Sprintf("change=%v", change), func(t *testing.T) {
			e := newGrantEnv(t, grantPolicy(), func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				(*tools)[0].Grants = &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: 3, ClientRelayed: true}
				o.AllowGrantsFor = []string{"delete_note"}
			})
			cs := e.connect(client{name: "alice", protocol: legacy, elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if change {
					e.notes.set("cache.txt", "swapped while the human read the plan")
				}
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-1-1"}}, nil
			}})
			res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
			if !change {
				wantExecuted(t, res)
				return
			}
			wantRefused(t, res, mcpsafe.ReasonTargetChanged)
			if !e.notes.has("cache.txt") || countDecisions(e.env, journal.GrantCreated) != 0 {
				t.Fatalf("ran or made a grant on a changed target: %v", e.journal.decisions())
			}
			if list, _ := grants.List(context.Background(), e.store); len(list) != 0 {
				t.Fatalf("a grant was stored: %+v", list)
			}
		})
	}
}
