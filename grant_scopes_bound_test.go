package mcpsafe_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/journal"
)

// A standing grant's scopes are bound into the tool's policy hash through
// GrantPolicy.ScopesBinding: a change voids the grants made under the old
// scopes, and a channel decision made on the old offers (whose IDs name
// scopes by position) is refused rather than applied to the new list.

// anywhere offers the wide scope "any path".
func anywhere(mcpsafe.Call, mcpsafe.Resolved) ([]grants.Scope, error) {
	return []grants.Scope{{Words: "any path", CEL: "true"}}, nil
}

func scopedPolicy(scopes func(mcpsafe.Call, mcpsafe.Resolved) ([]grants.Scope, error), binding string) *mcpsafe.GrantPolicy {
	p := grantPolicy()
	p.Scopes, p.ScopesBinding = scopes, binding
	return p
}

// Attack: a grant made under "any path" still covered home/x.txt after the
// tool was registered again with the narrower "paths under tmp/". Control:
// registered again with the same scopes, the grant still covers calls.
func TestStandingGrantVoidAfterScopesChange(t *testing.T) {
	for _, narrowed := range []bool{true, false} {
		t.Run(fmt.Sprintf("narrowed=%v", narrowed), func(t *testing.T) {
			e := newGrantEnv(t, scopedPolicy(anywhere, "any path"), nil)
			cs, a := e.grantFirst("alice", tmpFor15m)
			next := scopedPolicy(anywhere, "any path")
			if narrowed {
				next = scopedPolicy(dirScope, "paths under the approved call's directory")
			}
			e.gate.Remove(e.server, "write_note")
			if err := e.gate.Register(e.server, e.writes.writeTool(next)); err != nil {
				t.Fatal(err)
			}
			res := e.write(cs, "home/x.txt")
			if !narrowed {
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

// Attack: while the approver looks at offers under "any path", the tool's
// scopes are narrowed; the approver's choice (grant-2-1, "any path" when
// shown) must not be applied: nothing runs and no grant is made. Control:
// registered again unchanged meanwhile, the decision applies.
func TestChannelGrantChoiceAfterScopesChange(t *testing.T) {
	for _, narrowed := range []bool{true, false} {
		t.Run(fmt.Sprintf("narrowed=%v", narrowed), func(t *testing.T) {
			var asked atomic.Int32
			var e *grantEnv
			p := scopedPolicy(anywhere, "any path")
			p.ClientRelayed = false
			e = newGrantEnv(t, p, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = mcpsafe.ModeChannel
				o.Approver = approverFunc(func(_ context.Context, r approver.Request) (approver.Decision, error) {
					if asked.Add(1) > 1 {
						return approver.Decision{}, approver.ErrDenied
					}
					if len(r.Grants) < 3 || r.Grants[2].ID != tmpFor15m || r.Grants[2].Words != `"any path"` {
						t.Errorf("offers shown: %+v", r.Grants)
					}
					// A reload while the approver decides.
					next := scopedPolicy(anywhere, "any path")
					if narrowed {
						next = scopedPolicy(dirScope, "paths under the approved call's directory")
					}
					next.ClientRelayed = false
					e.gate.Remove(e.server, "write_note")
					if err := e.gate.Register(e.server, e.writes.writeTool(next)); err != nil {
						t.Error(err)
					}
					return approver.Decision{Approved: true, Approvers: []string{"alice@example.com"}, Grant: tmpFor15m}, nil
				})
			})
			cs := e.connect(client{name: "alice"})
			first := e.write(cs, "home/a.txt")
			if !narrowed {
				wantExecuted(t, first)
				wantExecuted(t, e.write(cs, "home/b.txt")) // covered by "any path"
				if asked.Load() != 1 {
					t.Fatalf("asked %d times, want 1", asked.Load())
				}
				return
			}
			wantRefused(t, first, mcpsafe.ReasonTokenInvalid)
			if n := countDecisions(e.env, journal.GrantCreated); n != 0 || execs(e) != 0 {
				t.Fatalf("a decision on the old offers made %d grants and ran %d times", n, execs(e))
			}
			// And nothing covers the next call: it asks (and is denied).
			wantRefused(t, e.write(cs, "home/b.txt"), mcpsafe.ReasonChannelDenied)
			if execs(e) != 0 {
				t.Fatalf("ran %d times", execs(e))
			}
		})
	}
}

func execs(e *grantEnv) int {
	e.writes.mu.Lock()
	defer e.writes.mu.Unlock()
	return e.writes.execs
}
