package mcpsafe

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
)

// cutWait is how long Shutdown waits, after cutting the Executes that
// outlived the grace, for them to return and journal their outcome.
const cutWait = 2 * time.Second

// errGraceOver is the cause an Execute's context is cancelled with when
// the shutdown grace ends while it runs.
var errGraceOver = errors.New("mcpsafe: the server shut down while the call was running")

// ShutdownReport says what StopAccepting found when shutdown began.
type ShutdownReport struct {
	// Withdrawn are the approvals that were pending (asked and not yet
	// decided or redeemed), by tool and approval path ("channel",
	// "elicitation", "token"), sorted. Each is withdrawn: nothing will run
	// on it, and it is journaled as refused with shutting_down.
	Withdrawn []string
	// Running is the number of Executes that had started (their approval
	// admitted before the signal); they get the shutdown grace.
	Running int
	// Again is true when shutdown had begun already.
	Again bool
}

// String is the report in words, for one log line.
func (r ShutdownReport) String() string {
	w := "no pending approvals to withdraw"
	if n := len(r.Withdrawn); n > 0 {
		counts := map[string]int{}
		var names []string
		for _, s := range r.Withdrawn {
			if counts[s] == 0 {
				names = append(names, s)
			}
			counts[s]++
		}
		parts := make([]string, len(names))
		for i, s := range names {
			parts[i] = s
			if c := counts[s]; c > 1 {
				parts[i] = fmt.Sprintf("%d× %s", c, s)
			}
		}
		w = fmt.Sprintf("withdrawing %d pending approval(s): %s", n, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("%s; %d call(s) running", w, r.Running)
}

// stopState is the gate's shutdown state. Its zero value is a gate that
// serves; StopAccepting flips began once, under mu, and from then on no
// call is accepted, no approval is parked and no Execute is admitted.
type stopState struct {
	mu       sync.Mutex
	began    bool
	inflight int           // handlers running
	idle     chan struct{} // made when shutdown begins; closed when inflight is 0
	wake     chan struct{} // closed when shutdown begins; made lazily
	parked   map[string]*parkedApproval
	sweepAt  int // park sweeps expired entries when the map reaches this size
	running  map[*runningExec]struct{}
	waiting  map[string]string // nonce -> "tool (path)" of calls waiting for a human
}

// parkedApproval is an approval handed to the client (token, MRTR request
// state) or left open at the channel (approval_pending handle) that no
// handler is waiting on. Shutdown withdraws it.
type parkedApproval struct {
	path    string // channel, page, elicitation or token
	rec     journal.Record
	req     *approver.Request // channel requests, to withdraw at the approver
	expires time.Time
}

// runningExec is one admitted Execute (admit). rec and ectx are set
// before it is shared and only read after; claimed is under stop.mu.
type runningExec struct {
	ectx    context.Context // what Execute runs under
	cut     context.CancelCauseFunc
	rec     journal.Record // the outcome record, for Shutdown to finish if Execute never returns
	stop    *stopState
	claimed bool // its outcome is being written by one side
}

func (s *stopState) wakeCh() chan struct{} {
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	return s.wake
}

// stopping reports whether shutdown began.
func (g *Gate) stopping() bool {
	g.stop.mu.Lock()
	defer g.stop.mu.Unlock()
	return g.stop.began
}

// onStop cancels cancel when shutdown begins (at once if it has). The
// returned function stops watching.
func (g *Gate) onStop(cancel func()) (stop func()) {
	g.stop.mu.Lock()
	ch := g.stop.wakeCh()
	g.stop.mu.Unlock()
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// enterCall counts a handler in; false once shutdown began (the call is
// refused and not counted).
func (g *Gate) enterCall() bool {
	g.stop.mu.Lock()
	defer g.stop.mu.Unlock()
	if g.stop.began {
		return false
	}
	g.stop.inflight++
	return true
}

func (g *Gate) exitCall() {
	g.stop.mu.Lock()
	defer g.stop.mu.Unlock()
	g.stop.inflight--
	if g.stop.began && g.stop.inflight == 0 {
		close(g.stop.idle)
	}
}

func shuttingDown(what string) *Refusal {
	return refusal(ReasonShuttingDown, "the server is shutting down, so %s; nothing ran. Ask again once it is back", what)
}

// park records an approval that leaves this handler pending. It fails once
// shutdown began: the caller then spends the grant and refuses the call.
func (g *Gate) park(nonce, path string, k *call, req *approver.Request, expires time.Time) bool {
	rec := g.record(k, journal.Refused)
	rec.Call, rec.Summary, rec.Reason = nonce, k.plan.Summary, ReasonShuttingDown
	s := &g.stop
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.began {
		return false
	}
	if s.parked == nil {
		s.parked = map[string]*parkedApproval{}
	}
	if len(s.parked) >= max(s.sweepAt, 64) {
		now := g.opts.Clock()
		for n, p := range s.parked {
			if !now.Before(p.expires) {
				delete(s.parked, n)
			}
		}
		s.sweepAt = 2 * len(s.parked)
	}
	s.parked[nonce] = &parkedApproval{path: path, rec: rec, req: req, expires: expires}
	return true
}

// unpark forgets a parked approval: it was redeemed, spent, or a handler
// waits on it again.
func (g *Gate) unpark(nonce string) {
	g.stop.mu.Lock()
	delete(g.stop.parked, nonce)
	g.stop.mu.Unlock()
}

// waitOn records that this handler waits for a human on nonce (taking it
// out of the parked approvals if it was there). It fails once shutdown
// began; otherwise done must be called when the wait ends.
func (g *Gate) waitOn(nonce, tool, path string) (done func(), ok bool) {
	s := &g.stop
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.parked, nonce)
	if s.began {
		return nil, false
	}
	if s.waiting == nil {
		s.waiting = map[string]string{}
	}
	s.waiting[nonce] = tool + " (" + path + ")"
	return func() {
		s.mu.Lock()
		delete(s.waiting, nonce)
		s.mu.Unlock()
	}, true
}

// admit lets an approved call's Execute start, unless shutdown began. The
// check and the count are one step under the lock that StopAccepting
// flips, so no Execute starts after shutdown began, and every one that
// started is waited for. The admitted call's ectx is what Execute runs
// under: Shutdown cancels it when the grace ends. done must be called once
// the outcome is handled; claim reports whether this side writes the
// outcome. (Methods, not closures: one allocation per call, not three.)
func (g *Gate) admit(ctx context.Context, outcome journal.Record) (*runningExec, bool) {
	s := &g.stop
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.began {
		return nil, false
	}
	e := &runningExec{rec: outcome, stop: s}
	e.ectx, e.cut = context.WithCancelCause(ctx)
	if s.running == nil {
		s.running = map[*runningExec]struct{}{}
	}
	s.running[e] = struct{}{}
	return e, true
}

// claim reports whether this side (not Shutdown) writes the outcome.
func (e *runningExec) claim() bool {
	e.stop.mu.Lock()
	defer e.stop.mu.Unlock()
	if e.claimed {
		return false
	}
	e.claimed = true
	return true
}

// done ends the admission: Shutdown no longer waits for it.
func (e *runningExec) done() {
	e.stop.mu.Lock()
	delete(e.stop.running, e)
	e.stop.mu.Unlock()
	e.cut(nil)
}

// StopAccepting begins shutdown: from its return on no call is accepted
// (new calls are refused with shutting_down), no Execute starts, and every
// call waiting for a human (channel, in-call elicitation) stops waiting
// and is refused with shutting_down. It does not wait; Shutdown does the
// rest. It is safe to call more than once; only the first call's report
// lists what was withdrawn.
func (g *Gate) StopAccepting() ShutdownReport {
	s := &g.stop
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.began {
		return ShutdownReport{Again: true, Running: len(s.running)}
	}
	s.began = true
	s.idle = make(chan struct{})
	if s.inflight == 0 {
		close(s.idle)
	}
	close(s.wakeCh())
	var rep ShutdownReport
	now := g.opts.Clock()
	for _, p := range s.parked {
		if now.Before(p.expires) {
			rep.Withdrawn = append(rep.Withdrawn, p.rec.Tool+" ("+p.path+")")
		}
	}
	for _, w := range s.waiting {
		rep.Withdrawn = append(rep.Withdrawn, w)
	}
	sort.Strings(rep.Withdrawn)
	rep.Running = len(s.running)
	return rep
}

// Shutdown stops the gate for good. It begins shutdown (StopAccepting),
// withdraws the approvals still pending that no call waits on (tokens and
// MRTR request states handed out, channel requests answered
// approval_pending): each is spent in the ledger, so that no replica can
// redeem it either, withdrawn at the approval channel, and journaled as
// refused with shutting_down. It then waits until every call in progress
// has returned or ctx ends (the grace for Executes already running). When
// ctx ends first, the Executes still running have their context
// cancelled; their outcome is journaled ambiguous, by them if they return
// within a short while, else by Shutdown. It returns ctx's error in that
// case. Shutdown does not stop the MCP server or close the journal and
// ledger: the caller does that once it returns.
func (g *Gate) Shutdown(ctx context.Context) error {
	g.StopAccepting()
	s := &g.stop
	s.mu.Lock()
	parked := s.parked
	s.parked = nil
	idle := s.idle
	s.mu.Unlock()
	g.withdrawParked(ctx, parked)
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	cut := make([]*runningExec, 0, len(s.running))
	for e := range s.running {
		cut = append(cut, e)
	}
	s.mu.Unlock()
	if len(cut) > 0 {
		g.opts.Logger.Warn("shutdown: the grace ended with calls still running; cancelling them (journaled ambiguous)", "calls", len(cut))
	}
	for _, e := range cut {
		e.cut(errGraceOver)
	}
	t := time.NewTimer(cutWait)
	defer t.Stop()
	select {
	case <-idle:
		return ctx.Err()
	case <-t.C:
	}
	// Executes that ignore their context: their outcome is unknown, and
	// it must be on record before the process goes.
	s.mu.Lock()
	var late []journal.Record
	for e := range s.running {
		if !e.claimed {
			e.claimed = true
			late = append(late, e.rec)
		}
	}
	s.mu.Unlock()
	for _, rec := range late {
		rec.Decision = journal.Ambiguous
		rec.Reason = "the server shut down while the call was running and it did not stop when cancelled; it may or may not have taken effect: check by hand"
		g.appendBounded(context.Background(), rec)
	}
	return ctx.Err()
}

// withdrawParked spends, withdraws and journals the parked approvals.
func (g *Gate) withdrawParked(ctx context.Context, parked map[string]*parkedApproval) {
	now := g.opts.Clock()
	var wg sync.WaitGroup
	for nonce, p := range parked {
		if !now.Before(p.expires) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.pending.done(nonce)
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalGrace)
			ok, err := g.ledger.Redeem(sctx, nonce)
			cancel()
			if err != nil {
				// Not spent: it stays redeemable elsewhere until it
				// expires, and this server no longer takes calls.
				g.opts.Logger.Warn("shutdown: could not spend a pending approval in the ledger", "tool", p.rec.Tool, "err", err)
			}
			if err == nil && !ok {
				return // redeemed meanwhile (another replica) or expired
			}
			if p.req != nil {
				g.withdraw(ctx, g.via(p.path), *p.req, approver.WithdrawShuttingDown)
			}
			g.appendBounded(ctx, p.rec)
		}()
	}
	wg.Wait()
}
