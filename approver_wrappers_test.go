package mcpsafe_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
)

// timedApprover wraps an Approver the way a metrics or tracing wrapper
// does: it overrides Approve and embeds the rest. Before the capabilities
// were part of the Approver type, the gate found them by type assertion,
// which such a wrapper silently defeated: no "pending" answers, no
// withdrawals.
type timedApprover struct {
	approver.Approver
	approves atomic.Int32
}

func (a *timedApprover) Approve(ctx context.Context, r approver.Request) (approver.Decision, error) {
	a.approves.Add(1)
	return a.Approver.Approve(ctx, r)
}

// hidingApprover is a wrapper that decides to offer neither capability.
type hidingApprover struct{ timedApprover }

func (*hidingApprover) Awaiter() approver.Awaiter       { return nil }
func (*hidingApprover) Withdrawer() approver.Withdrawer { return nil }

// A wrapped approver keeps what the wrapped one can do: the gate answers
// "pending" through its Awaiter and withdraws through its Withdrawer at
// shutdown. The control, a wrapper that hides both, gets neither: the call
// waits on Approve, and nothing is withdrawn.
func TestWrappedApproverKeepsCapabilities(t *testing.T) {
	for _, hide := range []bool{false, true} {
		name := "wrapped"
		if hide {
			name = "hidden (control)"
		}
		t.Run(name, func(t *testing.T) {
			w := &withdrawals{}
			inner := withdrawingApprover{resumableFunc: resumableFunc{
				approverFunc: func(context.Context, approver.Request) (approver.Decision, error) {
					return approver.Decision{}, approver.ErrDenied
				},
				await: func(context.Context, approver.Request, time.Duration) (approver.Decision, error) {
					return approver.Decision{}, approver.ErrPending
				},
			}, withdrawals: w}
			timed := &timedApprover{Approver: inner}
			var appr approver.Approver = timed
			if hide {
				h := &hidingApprover{timedApprover{Approver: inner}}
				appr, timed = h, &h.timedApprover
			}
			e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
				o.Mode = mcpsafe.ModeChannel
				o.Approver = appr
			})
			res := callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt"})
			if hide {
				wantRefused(t, res, mcpsafe.ReasonChannelDenied)
			} else {
				pendingHandle(t, res)
			}
			if n, want := timed.approves.Load(), map[bool]int32{false: 0, true: 1}[hide]; n != want {
				t.Fatalf("Approve called %d times, want %d", n, want)
			}
			if err := e.gate.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			var want []string
			if !hide {
				want = []string{approver.WithdrawShuttingDown}
			}
			if got := w.got(); !slices.Equal(got, want) {
				t.Fatalf("withdrawn %v, want %v", got, want)
			}
			if !e.notes.has("cache.txt") {
				t.Fatal("nobody approved, but the note is gone")
			}
		})
	}
}
