package mcpsafe_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Shutdown withdraws every approval still pending, on every path, and
// nothing approved afterwards runs; each path has its control, where the
// same approval given before shutdown runs.

func tokenEnv(t *testing.T) *env {
	return newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeToken
		o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_note"}}
	})
}

func hasDecision(e *env, want string) bool {
	return slices.Contains(e.journal.decisions(), want)
}

func TestShutdownWithdrawsToken(t *testing.T) {
	for _, shut := range []bool{false, true} {
		name := "control: redeemed before shutdown"
		if shut {
			name = "redeemed after shutdown"
		}
		t.Run(name, func(t *testing.T) {
			e := tokenEnv(t)
			cs := e.connect(client{})
			tok := token(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
			if shut {
				rep := e.gate.StopAccepting()
				if !slices.Equal(rep.Withdrawn, []string{"delete_note (token)"}) || rep.Running != 0 {
					t.Fatalf("report %+v", rep)
				}
				if err := e.gate.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": tok})
			if !shut {
				wantExecuted(t, res)
				if e.notes.has("cache.txt") {
					t.Fatal("the control did not run")
				}
				return
			}
			wantRefused(t, res, mcpsafe.ReasonShuttingDown)
			if !e.notes.has("cache.txt") || e.notes.executions() != 0 {
				t.Fatal("a token redeemed after shutdown ran")
			}
			// The withdrawn approval, then the late call.
			if d := e.journal.decisions(); !slices.Equal(d, []string{"refused:shutting_down", "refused:shutting_down"}) {
				t.Fatalf("journal %v", d)
			}
		})
	}
}

// An MRTR client gets the request state before shutdown and retries with
// an exact approval after it: refused, and the state was spent in the
// ledger, so another gate on the same keys and ledger refuses it too.
func TestShutdownWithdrawsRequestState(t *testing.T) {
	for _, shut := range []bool{false, true} {
		t.Run(map[bool]string{false: "control", true: "after shutdown"}[shut], func(t *testing.T) {
			e := newEnv(t, nil)
			cs := e.connect(client{manual: true, elicit: accept})
			first := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
			if first.RequestState == "" {
				t.Fatalf("no request state: %v", text(first))
			}
			if shut {
				if rep := e.gate.StopAccepting(); !slices.Equal(rep.Withdrawn, []string{"delete_note (elicitation)"}) {
					t.Fatalf("report %+v", rep)
				}
				if err := e.gate.Shutdown(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
				Name: "delete_note", Arguments: map[string]any{"path": "cache.txt"}, RequestState: first.RequestState,
				InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !shut {
				wantExecuted(t, res)
				return
			}
			wantRefused(t, res, mcpsafe.ReasonShuttingDown)
			if !e.notes.has("cache.txt") || !hasDecision(e, "refused:shutting_down") {
				t.Fatalf("ran, or journal %v", e.journal.decisions())
			}
		})
	}
}

// A legacy client is asked in-call and answers "accept" only after
// shutdown began: refused, nothing runs, and Shutdown waits for the call.
func TestShutdownEndsInCallElicitation(t *testing.T) {
	e := newEnv(t, nil)
	asked := make(chan struct{})
	release := make(chan struct{})
	cs := e.connect(client{protocol: legacy, elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(asked)
		<-release // the human is slow; the answer comes after the signal
		return accept(ctx, r)
	}})
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}) }()
	<-asked
	rep := e.gate.StopAccepting()
	if !slices.Equal(rep.Withdrawn, []string{"delete_note (elicitation)"}) {
		t.Fatalf("report %+v", rep)
	}
	close(release)
	if err := e.gate.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, <-done, mcpsafe.ReasonShuttingDown)
	if !e.notes.has("cache.txt") || e.notes.executions() != 0 {
		t.Fatal("an answer given after shutdown ran the call")
	}
	if d := e.journal.decisions(); !slices.Equal(d, []string{"refused:shutting_down"}) {
		t.Fatalf("journal %v", d)
	}
}

// withdrawals is an approver that records what it is told to withdraw.
type withdrawals struct {
	mu      sync.Mutex
	reasons []string
}

func (w *withdrawals) Withdraw(_ context.Context, _ approver.Request, reason string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.reasons = append(w.reasons, reason)
	return nil
}

func (w *withdrawals) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.reasons)
}

type withdrawingApprover struct {
	resumableFunc
	*withdrawals
}

func (a withdrawingApprover) Withdrawer() approver.Withdrawer { return a.withdrawals }

// A channel call waiting for a human, and one parked with an
// approval_pending handle: shutdown withdraws both at the channel with
// shutting_down, and an approval given afterwards runs neither.
func TestShutdownWithdrawsChannelRequests(t *testing.T) {
	var approved atomic.Bool
	waiting := make(chan struct{}, 1)
	w := &withdrawals{}
	appr := withdrawingApprover{resumableFunc: resumableFunc{
		approverFunc: func(context.Context, approver.Request) (approver.Decision, error) {
			return approver.Decision{}, approver.ErrNoDecision
		},
		await: func(ctx context.Context, r approver.Request, wait time.Duration) (approver.Decision, error) {
			if approved.Load() {
				return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
			}
			if r.Summary == `Delete note "cache.txt"` {
				return approver.Decision{}, approver.ErrPending
			}
			waiting <- struct{}{}
			<-ctx.Done()
			// The human approves just as the wait ends.
			return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
		},
	}, withdrawals: w}
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Approver = appr
	})
	cs := e.connect(client{})
	handle := pendingHandle(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"path": "thesis.txt"}}
		p.SetProgressToken("p1") // waits the whole time
		res, err := cs.CallTool(context.Background(), p)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-waiting
	rep := e.gate.StopAccepting()
	if !slices.Equal(rep.Withdrawn, []string{"delete_note (channel)", "delete_note (channel)"}) {
		t.Fatalf("report %+v", rep)
	}
	if err := e.gate.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, <-done, mcpsafe.ReasonShuttingDown)
	approved.Store(true)
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": handle}), mcpsafe.ReasonShuttingDown)
	if !e.notes.has("cache.txt") || !e.notes.has("thesis.txt") || e.notes.executions() != 0 {
		t.Fatal("a withdrawn channel request ran")
	}
	if got := w.got(); !slices.Equal(got, []string{approver.WithdrawShuttingDown, approver.WithdrawShuttingDown}) {
		t.Fatalf("withdrawn with %v", got)
	}
	if n := strings.Count(strings.Join(e.journal.decisions(), " "), "refused:shutting_down"); n != 3 {
		t.Fatalf("journal %v: want the two withdrawn requests and the late call", e.journal.decisions())
	}
}

// Control for the channel: approved before shutdown, the parked handle runs.
func TestChannelHandleRunsBeforeShutdown(t *testing.T) {
	d := &decided{}
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Approver = d.approver()
	})
	cs := e.connect(client{})
	handle := pendingHandle(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	d.approved.Store(true)
	wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": handle}))
	if rep := e.gate.StopAccepting(); len(rep.Withdrawn) != 0 {
		t.Fatalf("a redeemed handle is still listed as pending: %+v", rep)
	}
}

// The signal arrives after the approval was checked and before Execute
// starts (here: while the target is looked at again, right before it
// runs). The Execute must not start.
func TestNoExecuteStartsAfterShutdownBegan(t *testing.T) {
	for _, signal := range []bool{false, true} {
		t.Run(map[bool]string{false: "control", true: "signal during recheck"}[signal], func(t *testing.T) {
			var resolves atomic.Int32
			var e *env
			e = newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = mcpsafe.ModeToken
				o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_note"}}
				del := &(*tools)[0]
				resolve := del.Resolve
				del.Resolve = func(ctx context.Context, c mcpsafe.Call) (mcpsafe.Resolved, error) {
					// 1: the first call; 2: the redeeming call's rules;
					// 3: the recheck right before Execute.
					if resolves.Add(1) == 3 && signal {
						e.gate.StopAccepting()
					}
					return resolve(ctx, c)
				}
			})
			cs := e.connect(client{})
			tok := token(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
			res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": tok})
			if resolves.Load() != 3 {
				t.Fatalf("resolved %d times; the test's hook is off", resolves.Load())
			}
			if !signal {
				wantExecuted(t, res)
				return
			}
			wantRefused(t, res, mcpsafe.ReasonShuttingDown)
			if !e.notes.has("cache.txt") || e.notes.executions() != 0 {
				t.Fatal("Execute started after shutdown began")
			}
			for _, d := range e.journal.decisions() {
				if d == journal.TokenRedeemed || d == journal.Executed {
					t.Fatalf("journal %v records an approval or a run", e.journal.decisions())
				}
			}
		})
	}
}

// slowTool's Execute runs until release is closed, or (cooperative) until
// its context ends.
func slowTool(started chan<- struct{}, release <-chan struct{}, cooperative bool, ran *atomic.Bool) mcpsafe.Tool {
	return mcpsafe.Tool{
		Name: "slow", InputSchema: map[string]any{"type": "object"},
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "a slow change"}, nil
		},
		AutoApprove: []mcpsafe.Rule{{Name: "always", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}},
		Execute: func(ctx context.Context, _ mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			close(started)
			if cooperative {
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			} else {
				<-release
			}
			ran.Store(true)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		},
	}
}

// An Execute already running when shutdown begins gets the grace: one that
// ends within it is journaled executed; one that outlives it is cancelled
// and journaled ambiguous, by itself when it stops on cancellation and by
// Shutdown when it does not.
func TestShutdownGraceForRunningExecute(t *testing.T) {
	cases := []struct {
		name        string
		cooperative bool
		finish      bool // it ends within the grace
		want        []string
		err         error
	}{
		{"ends within the grace (control)", true, true, []string{"policy-auto-approved", "executed"}, nil},
		{"cut, stops when cancelled", true, false, []string{"policy-auto-approved", "ambiguous"}, context.DeadlineExceeded},
		{"cut, ignores cancellation", false, false, []string{"policy-auto-approved", "ambiguous"}, context.DeadlineExceeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				started, release := make(chan struct{}), make(chan struct{})
				var ran atomic.Bool
				e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
					o.Clock = nil
					*tools = append(*tools, slowTool(started, release, tc.cooperative, &ran))
				})
				defer e.gate.Close()
				cs := e.connect(client{})
				done := make(chan *mcp.CallToolResult, 1)
				go func() { done <- callTool(t, cs, "slow", map[string]any{}) }()
				<-started
				if rep := e.gate.StopAccepting(); rep.Running != 1 {
					t.Fatalf("report %+v", rep)
				}
				// A call after the signal is refused at once, even while
				// the running one has its grace.
				wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonShuttingDown)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if tc.finish {
					go func() {
						time.Sleep(time.Second)
						close(release)
					}()
				}
				if err := e.gate.Shutdown(ctx); !errors.Is(err, tc.err) {
					t.Fatalf("Shutdown: %v, want %v", err, tc.err)
				}
				if !tc.finish {
					close(release) // the stubborn one ends after Shutdown gave up on it
				}
				<-done
				synctest.Wait()
				var got []string
				for _, r := range e.journal.recs {
					if r.Tool == "slow" {
						got = append(got, r.Decision)
						if r.Decision == journal.Ambiguous && !strings.Contains(r.Reason, "shut down") {
							t.Errorf("ambiguous record says %q", r.Reason)
						}
					}
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("journal for slow: %v, want %v (all: %v)", got, tc.want, e.journal.decisions())
				}
			})
		})
	}
}
