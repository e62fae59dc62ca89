package mcpsafe_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stoppingLedger stands for a process killed inside its ledger's
// redemption: Redeem reaches the inner ledger or not (reached), then never
// returns to the gate while the test runs, as a dead process would not.
// (A real kill -9 of the binary in this window is what internal/chaos
// does; here the window is hit every time.)
type stoppingLedger struct {
	ledger.Ledger
	reached bool
	stopped chan struct{} // closed when the "process" stops
	end     chan struct{} // closed at cleanup; the gate's goroutine returns
}

func (s *stoppingLedger) Redeem(ctx context.Context, nonce string) (bool, error) {
	if s.reached {
		if ok, err := s.Ledger.Redeem(ctx, nonce); !ok || err != nil {
			panic("the test's redemption did not go through")
		}
	}
	close(s.stopped)
	<-s.end
	return false, context.Canceled
}

// A gate killed while it spends an approval, between the ledger's
// redemption and the approval record, leaves the journal saying so: its
// reopen closes the redemption with a refusal that says nothing ran and the
// approval may be spent. Killed after the redemption reached the ledger,
// the retry on the restarted gate is refused token_spent, and nothing ever
// runs; killed before, the retry runs the call once. Control: a gate that is
// not killed runs the call once, and its journal holds the redemption
// closed by its approval.
func TestRedemptionCutByAKillIsJournaled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reached bool
	}{
		{"after the ledger spent it", true},
		{"before the ledger heard of it", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := bytes.Repeat([]byte{3}, 32)
			keys, err := mcpsafe.NewKeys(key)
			if err != nil {
				t.Fatal(err)
			}
			shared := ledger.NewMemory(0)
			path := filepath.Join(t.TempDir(), "journal.jsonl")
			f := &flaky{}
			gateOn := func(l ledger.Ledger, j journal.Appender) *env {
				return newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
					o.Mode, o.Approver, o.Keys, o.Ledger, o.Journal = mcpsafe.ModeChannel, f.approver(), keys, l, j
				})
			}
			j1, err := journal.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			stop := &stoppingLedger{Ledger: shared, reached: tc.reached, stopped: make(chan struct{}), end: make(chan struct{})}
			var wg sync.WaitGroup
			a := gateOn(stop, j1)
			args := map[string]any{"path": "cache.txt"}
			h := pendingHandle(t, callTool(t, a.connect(client{}), "delete_note", args))
			f.approved.Store(true)
			withHandle := map[string]any{"path": "cache.txt", "approval_token": h}
			cs := a.connect(client{})
			// The stopped call's goroutine returns only at the end, after
			// everything it could touch is gone (registered after the
			// sessions, so it runs before their Close waits for it).
			t.Cleanup(func() { close(stop.end); wg.Wait() })
			ctx, cancel := context.WithCancel(context.Background())
			wg.Add(1)
			go func() {
				defer wg.Done()
				cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_note", Arguments: withHandle})
			}()
			<-stop.stopped
			// The process is gone: its journal file is closed where it
			// stood (the test's Close only releases the lock; no record
			// is appended by it), and a new process opens it.
			cancel()
			if err := j1.Close(); err != nil {
				t.Fatal(err)
			}
			j2, err := journal.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { j2.Close() })
			recs := readJournal(t, path)
			last := recs[len(recs)-1]
			if last.Decision != journal.Refused || last.By != "journal" || !strings.HasPrefix(last.Reason, journal.RedemptionInterrupted) ||
				last.Tool != "delete_note" || last.Call == "" || !strings.Contains(last.Reason, "nothing ran") {
				t.Fatalf("the reopened journal ends with %+v, want the redemption refused as interrupted", last)
			}
			if recs[len(recs)-2].Decision != journal.Redeeming || recs[len(recs)-2].Call != last.Call {
				t.Fatalf("the record before the interruption is %+v, want the redemption of %s", recs[len(recs)-2], last.Call)
			}
			if a.notes.executions() != 0 {
				t.Fatal("the killed gate ran the call")
			}

			b := gateOn(shared, j2)
			res := callTool(t, b.connect(client{}), "delete_note", withHandle)
			if tc.reached {
				wantRefused(t, res, mcpsafe.ReasonTokenSpent)
				if b.notes.executions() != 0 {
					t.Fatal("a spent approval ran")
				}
			} else {
				wantExecuted(t, res)
				if b.notes.executions() != 1 {
					t.Fatalf("%d executions on the restarted gate, want 1", b.notes.executions())
				}
			}
			// Once more, the note back as it was: never twice.
			b.notes.set("cache.txt", "contents of cache.txt")
			wantRefused(t, callTool(t, b.connect(client{}), "delete_note", withHandle), mcpsafe.ReasonTokenSpent)
			if b.notes.executions() > 1 {
				t.Fatal("ran twice")
			}
			if s, err := journal.VerifyFile(path); err != nil || s.Unresolved != 0 {
				t.Fatalf("verify: %v, %d unresolved (%s)", err, s.Unresolved, s)
			}
		})
	}
}

// Control: a gate that is not killed journals the redemption, then the
// approval, then the outcome, all with one call id, and runs once.
func TestRedemptionJournaledBeforeTheApproval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f := &flaky{}
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode, o.Approver, o.Journal = mcpsafe.ModeChannel, f.approver(), j
	})
	cs := e.connect(client{})
	h := pendingHandle(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	f.approved.Store(true)
	withHandle := map[string]any{"path": "cache.txt", "approval_token": h}
	wantExecuted(t, callTool(t, cs, "delete_note", withHandle))
	e.notes.set("cache.txt", "contents of cache.txt")
	wantRefused(t, callTool(t, cs, "delete_note", withHandle), mcpsafe.ReasonTokenSpent)
	j.Close()
	var got []string
	call := ""
	for _, r := range readJournal(t, path) {
		if r.Call == "" {
			continue
		}
		if call == "" {
			call = r.Call
		}
		if r.Call != call {
			t.Fatalf("record %+v has another call id than %s", r, call)
		}
		got = append(got, r.Decision)
	}
	// (The replay's refusal carries no call id: this gate saw the grant
	// spent and refused it before any redemption record.)
	want := []string{journal.Redeeming, journal.ChannelApproved, journal.Executed}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("the call's records: %v, want %v", got, want)
	}
	if e.notes.executions() != 1 {
		t.Fatalf("%d executions", e.notes.executions())
	}
	if s, err := journal.VerifyFile(path); err != nil || s.Unresolved != 0 {
		t.Fatalf("verify: %v, %d unresolved", err, s.Unresolved)
	}
}

// A replayed handle costs no redemption record on the gate that saw its
// grant spent: the redemption record and the refusal closing it are not
// capped as refusals are, and replays must not be a way around the cap.
// The refusal is token_spent, as from the ledger. Control: the first
// redemption is recorded; and a replica that never saw the grant spent
// records its redemption, closed by the refusal (never left open).
func TestReplayedHandleCostsNoRedemptionRecordWhereItWasSpent(t *testing.T) {
	keys, err := mcpsafe.NewKeys(bytes.Repeat([]byte{4}, 32))
	if err != nil {
		t.Fatal(err)
	}
	shared := ledger.NewMemory(0)
	f := &flaky{}
	gateOn := func() *env {
		return newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
			o.Mode, o.Approver, o.Keys, o.Ledger = mcpsafe.ModeChannel, f.approver(), keys, shared
		})
	}
	a, b := gateOn(), gateOn()
	cs := a.connect(client{})
	h := pendingHandle(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	f.approved.Store(true)
	withHandle := map[string]any{"path": "cache.txt", "approval_token": h}
	wantExecuted(t, callTool(t, cs, "delete_note", withHandle))
	count := func(e *env, decision string) int {
		n := 0
		for _, d := range e.journal.decisions() {
			if d == decision {
				n++
			}
		}
		return n
	}
	if count(a, journal.Redeeming) != 1 {
		t.Fatalf("the first redemption left %d records, want 1: %v", count(a, journal.Redeeming), a.journal.decisions())
	}
	a.notes.set("cache.txt", "contents of cache.txt")
	for range 3 {
		wantRefused(t, callTool(t, cs, "delete_note", withHandle), mcpsafe.ReasonTokenSpent)
	}
	if count(a, journal.Redeeming) != 1 || count(a, journal.Refused+":"+mcpsafe.ReasonTokenSpent) != 3 {
		t.Fatalf("replays on the gate that spent it: %v", a.journal.decisions())
	}
	b.notes.set("cache.txt", "contents of cache.txt")
	wantRefused(t, callTool(t, b.connect(client{}), "delete_note", withHandle), mcpsafe.ReasonTokenSpent)
	recs := b.journal.records()
	if len(recs) != 2 || recs[0].Decision != journal.Redeeming || recs[1].Decision != journal.Refused || recs[1].Call != recs[0].Call {
		t.Fatalf("the other replica's journal: %v", b.journal.decisions())
	}
	if a.notes.executions()+b.notes.executions() != 1 {
		t.Fatal("a replay ran")
	}
}
