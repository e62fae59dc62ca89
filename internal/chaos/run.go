//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
)

// faults counts what the run did to the system.
type faults struct {
	gateKills, approvalKills, redisRestarts, pgTerminations, diskFull atomic.Int64
}

// inject does one fault at a time, at random, until stop, and leaves
// everything running again.
func (s *system) inject(stop context.Context, r *rand.Rand, f *faults, verbose bool) {
	logf := func(format string, args ...any) {
		if verbose {
			log.Printf("chaos: "+format, args...)
		}
	}
	var supervised sync.WaitGroup
	defer supervised.Wait()
	restart := func(p *proc) {
		// In the background, with backoff, as a supervisor does: a gate
		// whose journal's disk is full cannot start until it is freed.
		supervised.Add(1)
		go func() {
			defer supervised.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := p.supervise(ctx); err != nil {
				log.Printf("chaos: restarting %s: %v", p.name, err)
			}
		}()
	}
	var freeDisk func()
	for stop.Err() == nil {
		select {
		case <-stop.Done():
		case <-time.After(time.Duration(500+r.IntN(1500)) * time.Millisecond):
		}
		if stop.Err() != nil {
			break
		}
		switch r.IntN(5) {
		case 0:
			p := s.gates[r.IntN(len(s.gates))]
			logf("kill -9 %s", p.name)
			p.kill()
			f.gateKills.Add(1)
			time.Sleep(time.Duration(200+r.IntN(800)) * time.Millisecond)
			restart(p)
		case 1:
			p := s.approvals[r.IntN(len(s.approvals))]
			logf("kill -9 %s", p.name)
			p.kill()
			f.approvalKills.Add(1)
			time.Sleep(time.Duration(200+r.IntN(800)) * time.Millisecond)
			restart(p)
		case 2:
			n, err := s.terminateConnections(context.Background())
			logf("pg_terminate_backend: %d connections (%v)", n, err)
			if s.pgDB != "" {
				f.pgTerminations.Add(1)
			}
		case 3:
			logf("restart redis")
			s.redis.kill()
			f.redisRestarts.Add(1)
			time.Sleep(time.Duration(100+r.IntN(400)) * time.Millisecond)
			restart(s.redis)
		case 4:
			if s.diskDir == "" {
				continue
			}
			if freeDisk != nil {
				logf("free the disk under %s", s.diskDir)
				freeDisk()
				freeDisk = nil
				continue
			}
			var err error
			if freeDisk, err = fill(s.diskDir); err == nil {
				logf("fill the disk under %s", s.diskDir)
				f.diskFull.Add(1)
			}
		}
	}
	if freeDisk != nil {
		freeDisk()
	}
	for _, p := range append(append([]*proc{s.redis}, s.approvals...), s.gates...) {
		if !p.running() {
			restart(p)
		}
	}
}

// summary is what the run counted.
type summary struct {
	c                 config
	seed              int64
	calls             int
	paths             int
	approved, denied  int
	executed          int // paths whose client saw the call run
	journalExecuted   int // executed records, all journals
	maxPerCall        int // most executed records of one call
	maxPerPath        int // most executed records of one path
	lost              []string
	unapprovedRan     []string
	deniedRan         []string
	twice             []string
	orphans, abandon  int
	verified, results int
	verifyErrs        []string
	ambiguous         int
	// executedUnconfirmed: ran for the client, approval journaled, outcome
	// lost with the gate (counted in ambiguous).
	executedUnconfirmed int
	// ambiguousApproved: approved, journaled, the gate killed before the
	// outcome; the client's retry finds the grant spent.
	ambiguousApproved int
	// approvedUnanswered: ran after an approval whose API answer was lost
	// (the replica died after committing it).
	approvedUnanswered int
	// spentByKill: approved, the client's gate killed under its call
	// between the redemption and the approval record: spent, nothing ran,
	// and the journal records the interrupted redemption.
	spentByKill int
	// spentByLedgerFailure: approved, the redemption refused
	// ledger_unavailable (journaled), the retry found the grant spent.
	spentByLedgerFailure int
	// ranUnseen: ran (journaled executed) while its client lost the answer.
	ranUnseen int
	f         *faults
	elapsed   time.Duration
}

func (s *summary) line() string {
	return fmt.Sprintf("chaos: seed=%d sessions=%d minutes=%.1f approval-replicas=%d gate-replicas=%d | calls=%d files=%d approved=%d denied=%d executed=%d "+
		"journal-executed=%d executions-per-approval<=%d decisions-lost=%d spent-by-a-killed-gate=%d spent-by-a-failed-ledger-redemption=%d ran-answer-lost=%d journals-verified=%d/%d ambiguous=%d (approved then cut by a kill: %d) | kills: gate=%d approvals=%d; redis-restarts=%d pg-terminations=%d disk-full=%d | orphaned-by-kills=%d elapsed=%s",
		s.seed, s.c.sessions, s.c.duration.Minutes(), s.c.approvals, s.c.gates, s.calls, s.paths, s.approved, s.denied, s.executed, s.journalExecuted,
		max(s.maxPerCall, s.maxPerPath), len(s.lost), s.spentByKill, s.spentByLedgerFailure, s.ranUnseen, s.verified, s.results, s.ambiguous, s.ambiguousApproved,
		s.f.gateKills.Load(), s.f.approvalKills.Load(), s.f.redisRestarts.Load(), s.f.pgTerminations.Load(), s.f.diskFull.Load(),
		s.orphans, s.elapsed.Round(time.Second))
}

func (s *summary) violations() []string {
	var v []string
	if s.maxPerCall > 1 || s.maxPerPath > 1 {
		v = append(v, fmt.Sprintf("a call ran more than once (per call %d, per file %d)", s.maxPerCall, s.maxPerPath))
	}
	for _, l := range s.lost {
		v = append(v, "decision lost: "+l)
	}
	for _, x := range s.unapprovedRan {
		v = append(v, "ran without an approval: "+x)
	}
	for _, x := range s.deniedRan {
		v = append(v, "ran although denied: "+x)
	}
	for _, x := range s.twice {
		v = append(v, "decided twice: "+x)
	}
	v = append(v, s.verifyErrs...)

	if s.paths == 0 || s.approved == 0 || s.executed == 0 {
		v = append(v, "the run decided nothing: it proves nothing")
	}
	return v
}

func run(ctx context.Context, c config) (*summary, error) {
	start := time.Now()
	sys, err := startSystem(ctx, c)
	if err != nil {
		return nil, err
	}
	defer sys.close()
	c = sys.c
	base := rand.New(rand.NewPCG(uint64(c.seed), 0))
	var rngMu sync.Mutex
	w := &workload{s: sys, decisions: map[string]string{}, maybe: map[string]string{}, rng: func() *rand.Rand {
		rngMu.Lock()
		defer rngMu.Unlock()
		return rand.New(rand.NewPCG(base.Uint64(), base.Uint64()))
	}}
	f := &faults{}

	stop, stopNow := context.WithTimeout(ctx, c.duration)
	defer stopNow()
	drain, drainNow := context.WithTimeout(ctx, c.duration+2*time.Minute)
	defer drainNow()
	var clients sync.WaitGroup
	for i := range c.sessions {
		clients.Add(1)
		go func() { defer clients.Done(); w.client(ctx, stop, drain, i) }()
	}
	approversDone := make(chan struct{})
	var approvers sync.WaitGroup
	for range 4 {
		approvers.Add(1)
		go func() { defer approvers.Done(); w.approver(ctx, approversDone) }()
	}
	injected := make(chan struct{})
	go func() {
		defer close(injected)
		if c.faults {
			sys.inject(stop, w.rng(), f, c.verbose)
		}
	}()
	<-injected // faults end with the run's time, everything running again
	clients.Wait()
	close(approversDone)
	approvers.Wait()
	// Stop the gates as an orchestrator would, so their journals are whole.
	for _, g := range sys.gates {
		g.stop()
	}
	s := &summary{c: c, seed: c.seed, calls: w.calls, f: f, twice: w.twice}
	s.account(sys, w)
	s.elapsed = time.Since(start)
	return s, nil
}

// account compares what clients saw, what approvers decided and what the
// journals recorded.
func (s *summary) account(sys *system, w *workload) {
	for _, d := range w.decisions {
		if d == "approve" {
			s.approved++
		} else {
			s.denied++
		}
	}
	perCall, perPath := map[string]int{}, map[string]int{}
	approvedCall := map[string]string{} // call -> path, from approval records
	outcomeOf := map[string]bool{}      // calls with an outcome record
	journaledPath := map[string]bool{}  // paths with an approval record
	ambiguousPath := map[string]bool{}  // paths whose outcome the journal calls ambiguous
	// interruptedPath: paths with a redemption the journal says was cut
	// (closed as redemption_interrupted at reopen, or still open).
	interruptedPath := map[string]bool{}
	redeeming := map[string]string{} // open redemptions: call -> path
	redeemed := map[string]string{}  // every redemption: call -> path
	// ledgerFailedPath: paths with a redemption refused ledger_unavailable.
	ledgerFailedPath := map[string]bool{}
	for _, j := range sys.journals {
		s.results++
		if err := sys.journalVerify(j); err != nil {
			s.verifyErrs = append(s.verifyErrs, err.Error())
		} else {
			s.verified++
		}
		journal.ReadFile(j, func(r *journal.Record) {
			if r.Call != "" && r.Decision != journal.Redeeming {
				delete(redeeming, r.Call)
			}
			switch r.Decision {
			case journal.Redeeming:
				redeeming[r.Call], redeemed[r.Call] = pathOf(r), pathOf(r)
			case journal.Refused:
				if r.Call != "" && strings.HasPrefix(r.Reason, journal.RedemptionInterrupted) {
					interruptedPath[redeemed[r.Call]] = true // (the record has no arguments)
				}
				if r.Call != "" && r.Reason == "ledger_unavailable" {
					// The ledger failed under the redemption: it may have
					// spent the grant (a reply lost with a Redis restart);
					// the gate cannot tell, and gives nothing back.
					ledgerFailedPath[pathOf(r)] = true
				}
			case journal.ChannelApproved:
				approvedCall[r.Call] = pathOf(r)
				journaledPath[pathOf(r)] = true
			case journal.Executed:
				s.journalExecuted++
				perCall[r.Call]++
				perPath[pathOf(r)]++
				outcomeOf[r.Call] = true
			case journal.Ambiguous, journal.Failed:
				outcomeOf[r.Call] = true
				if r.Decision == journal.Ambiguous {
					s.ambiguous++
					// The record Open writes for a cut call names it by its
					// call id only (no arguments): its path is its approval's.
					ambiguousPath[approvedCall[r.Call]] = true
					ambiguousPath[pathOf(r)] = true
				}
			}
		})
	}
	for _, path := range redeeming {
		interruptedPath[path] = true // (its gate's journal not reopened since)
	}
	// An approval record without an outcome: the gate died (kill -9) or its
	// disk filled between the approval's fsync and the outcome's. The
	// journal says the call may have run: that is an ambiguous record too.
	unconfirmed := map[string]bool{}
	for call, path := range approvedCall {
		if !outcomeOf[call] {
			s.ambiguous++
			unconfirmed[path] = true
		}
	}
	for _, n := range perCall {
		s.maxPerCall = max(s.maxPerCall, n)
	}
	for p, n := range perPath {
		s.maxPerPath = max(s.maxPerPath, n)
		switch {
		case w.decisions[p] == "approve":
		case w.decisions[p] == "deny":
			s.deniedRan = append(s.deniedRan, p)
		case w.maybe[p] == "approve":
			s.approvedUnanswered++ // approved, the API's answer lost with a replica
		default:
			s.unapprovedRan = append(s.unapprovedRan, p)
		}
	}
	for _, o := range w.outcomes {
		s.paths++
		switch {
		case o.result == "executed":
			s.executed++
		case o.result == "orphan":
			s.orphans++
		case o.result == "abandoned":
			s.abandon++
		}
		if o.handle && o.result != "executed" && perPath[o.path] > 0 {
			// It ran (its journal says executed) and the client missed the
			// answer: its gate was killed after the outcome. Not lost.
			s.ranUnseen++
			continue
		}
		explained := unconfirmed[o.path] || ambiguousPath[o.path]
		if o.handle && w.decisions[o.path] == "approve" && o.result != "executed" && explained {
			// The gate journaled the approval and was killed before the
			// outcome: the journal says ambiguous (check by hand), and
			// the grant is spent. Counted, with the kills, not lost.
			s.ambiguousApproved++
		}
		if o.handle && w.decisions[o.path] == "approve" && o.result == "refused:token_spent" && !explained && o.transport > 0 && interruptedPath[o.path] {
			// A gate was killed under this client's call after it had
			// redeemed the grant and before its approval record: nothing
			// ran, the grant is spent, and that gate's journal says so
			// (redemption_interrupted). Counted on its own; without that
			// record it is a lost decision.
			s.spentByKill++
			explained = true
		}
		if o.handle && w.decisions[o.path] == "approve" && o.result == "refused:token_spent" && !explained && ledgerFailedPath[o.path] {
			// The ledger failed under this handle's redemption (its
			// reply lost with a restart): the grant may be spent, and
			// giving it back could let another replica's concurrent
			// redemption run the call twice. Journaled; counted apart.
			s.spentByLedgerFailure++
			explained = true
		}
		if o.handle && w.decisions[o.path] == "approve" && o.result != "executed" && !explained {
			s.lost = append(s.lost, fmt.Sprintf("%s approved, client held the handle to the end, got %s (%d transport errors on the way, last answer %s)", o.path, o.result, o.transport, o.last))
		}
		if o.result == "executed" && perPath[o.path] == 0 && !journaledPath[o.path] {
			s.verifyErrs = append(s.verifyErrs, fmt.Sprintf("%s ran for its client but no journal records its approval", o.path))
		}
		if o.result == "executed" && perPath[o.path] == 0 && journaledPath[o.path] {
			// The approval is journaled; the outcome record was lost
			// with a kill or a full disk (the journal's reopen calls it
			// ambiguous).
			s.executedUnconfirmed++
		}
	}
}

func pathOf(r *journal.Record) string {
	var a struct{ Path string }
	if err := json.Unmarshal(r.Args, &a); err != nil {
		return ""
	}
	return strings.TrimSpace(a.Path)
}
