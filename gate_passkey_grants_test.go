package mcpsafe_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
)

// A passkey signs one call. A tool that requires passkeys is offered no
// standing grant, an approval that chooses one anyway is refused, and each
// call asks again (control: the same passkey approval without a grant runs).
func TestPasskeyToolGetsNoStandingGrants(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grant string
		runs  bool
	}{
		{"approval chooses a grant", tmpFor15m, false},
		{"control: this call alone", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked atomic.Int32
			var offered []approver.GrantOffer
			p := grantPolicy()
			p.ClientRelayed = false
			e := newGrantEnv(t, p, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = mcpsafe.ModeChannel
				o.Approver = approverFunc(func(_ context.Context, r approver.Request) (approver.Decision, error) {
					asked.Add(1)
					offered = r.Grants
					if r.MinAssurance != mcpsafe.AssurancePasskey {
						t.Errorf("the request does not say the tool requires passkeys: %v", r.MinAssurance)
					}
					return approver.Decision{Approved: true, Approvers: []string{"alice@example.com"},
						Assurance: mcpsafe.AssurancePasskey, Grant: tc.grant}, nil
				})
				(*tools)[2].MinAssurance = mcpsafe.AssurancePasskey
			})
			cs := e.connect(client{name: "bob"})
			first := e.write(cs, "tmp/a.txt")
			if len(offered) != 0 {
				t.Fatalf("a passkey tool was offered standing grants: %+v", offered)
			}
			if !tc.runs {
				wantRefused(t, first, mcpsafe.ReasonAssuranceTooLow)
				return
			}
			wantExecuted(t, first)
			wantExecuted(t, e.write(cs, "tmp/b.txt"))
			if asked.Load() != 2 {
				t.Fatalf("the approver was asked %d times for two calls, want 2", asked.Load())
			}
		})
	}
}
