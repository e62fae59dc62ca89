package mcpsafe_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// flaky is a resumable approver that says "pending" until approved, and
// fails in the way the test sets while fail is set.
type flaky struct {
	approved atomic.Bool
	mu       sync.Mutex
	err      error
}

func (f *flaky) failWith(err error) {
	f.mu.Lock()
	f.err = err
	f.mu.Unlock()
}

func (f *flaky) approver() approver.Approver {
	return resumableFunc{
		approverFunc: func(context.Context, approver.Request) (approver.Decision, error) {
			return approver.Decision{}, approver.ErrNoDecision
		},
		await: func(context.Context, approver.Request, time.Duration) (approver.Decision, error) {
			f.mu.Lock()
			err := f.err
			f.mu.Unlock()
			if err != nil {
				return approver.Decision{}, err
			}
			if f.approved.Load() {
				return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
			}
			return approver.Decision{}, approver.ErrPending
		},
	}
}

// A call back with its approval_pending handle that finds the channel
// unreachable (a service replica died under it) keeps its handle: nothing
// runs, and once the person's approval arrives the same handle runs the
// call once. Control: any other channel failure on the way still ends the
// handle, as before.
func TestChannelHandleOutlivesAnUnreachableChannel(t *testing.T) {
	f := &flaky{}
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Approver = f.approver()
	})
	cs := e.connect(client{})
	args := map[string]any{"path": "cache.txt"}
	h := pendingHandle(t, callTool(t, cs, "delete_note", args))
	withHandle := map[string]any{"path": "cache.txt", "approval_token": h}

	f.failWith(fmt.Errorf("webhook: %w: dial tcp: connection refused", approver.ErrUnreachable))
	wantRefused(t, callTool(t, cs, "delete_note", withHandle), mcpsafe.ReasonChannelUnavailable)
	if e.notes.executions() != 0 {
		t.Fatal("ran while the channel was unreachable")
	}
	f.failWith(nil)
	f.approved.Store(true)
	wantExecuted(t, callTool(t, cs, "delete_note", withHandle))
	e.notes.set("cache.txt", "contents of cache.txt")
	wantRefused(t, callTool(t, cs, "delete_note", withHandle), mcpsafe.ReasonTokenSpent)
	if e.notes.executions() != 1 {
		t.Fatalf("%d executions, want 1", e.notes.executions())
	}

	// Control: a channel that answers something invalid ends the handle.
	g := &flaky{}
	e2 := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Approver = g.approver()
	})
	cs2 := e2.connect(client{})
	h2 := pendingHandle(t, callTool(t, cs2, "delete_note", args))
	g.failWith(errors.New("webhook: bad response"))
	wantRefused(t, callTool(t, cs2, "delete_note", map[string]any{"path": "cache.txt", "approval_token": h2}), mcpsafe.ReasonChannelUnavailable)
	g.failWith(nil)
	g.approved.Store(true)
	wantRefused(t, callTool(t, cs2, "delete_note", map[string]any{"path": "cache.txt", "approval_token": h2}), mcpsafe.ReasonTokenSpent)
	if e2.notes.executions() != 0 {
		t.Fatal("a handle the channel failed on ran after all")
	}
}

// A handle whose approved call could not run because the journal could not
// record the approval gets its grant back: nothing ran, and when the
// journal works again the same handle runs the call once. Control: the
// call never runs while the journal fails.
func TestApprovedHandleGivenBackWhenNothingRan(t *testing.T) {
	f := &flaky{}
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Approver = f.approver()
	})
	cs := e.connect(client{})
	h := pendingHandle(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	withHandle := map[string]any{"path": "cache.txt", "approval_token": h}
	f.approved.Store(true)
	e.journal.mu.Lock()
	// The redemption's record is written, then the disk is full: the
	// grant is spent when the approval record fails.
	e.journal.fail = errors.New("no space left on device")
	e.journal.spare = map[string]bool{journal.Redeeming: true}
	e.journal.mu.Unlock()
	wantRefused(t, callTool(t, cs, "delete_note", withHandle), mcpsafe.ReasonJournalUnavailable)
	if e.notes.executions() != 0 {
		t.Fatal("ran without its approval journaled")
	}
	e.journal.mu.Lock()
	e.journal.fail = nil
	e.journal.mu.Unlock()
	wantExecuted(t, callTool(t, cs, "delete_note", withHandle))
	e.notes.set("cache.txt", "contents of cache.txt")
	wantRefused(t, callTool(t, cs, "delete_note", withHandle), mcpsafe.ReasonTokenSpent)
	if e.notes.executions() != 1 {
		t.Fatalf("%d executions, want 1", e.notes.executions())
	}
}

// failingRedeem is a shared ledger whose Redeem, for one gate, fails
// without reaching the store (a connection dropped before the command was
// sent), after running during() (another replica's call).
type failingRedeem struct {
	ledger.Ledger
	during func()
}

func (f *failingRedeem) Redeem(context.Context, string) (bool, error) {
	f.during()
	return false, fmt.Errorf("%w: connection reset", ledger.ErrUnavailable)
}

// A redemption that failed in the ledger does not give the grant back: the
// gate cannot tell whether it reached the store, or whether another replica
// redeemed the grant meanwhile and ran the call, and giving it back would
// let the handle run the call again. Here the client presents its handle to
// two replicas at once; B runs the call, A's redemption fails, and a third
// presentation is refused token_spent: the call ran once. Control: B alone
// runs it, and the journal-full case still gives the grant back
// (TestApprovedHandleGivenBackWhenNothingRan).
func TestLedgerErrorOnRedeemGivesNothingBack(t *testing.T) {
	keys, err := mcpsafe.NewKeys(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	shared := ledger.NewMemory(0)
	f := &flaky{}
	store := newNotes("cache.txt")
	gateOn := func(l ledger.Ledger) *env {
		e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.Mode, o.Approver, o.Keys, o.Ledger = mcpsafe.ModeChannel, f.approver(), keys, l
			*tools = []mcpsafe.Tool{store.deleteTool()}
		})
		return e
	}
	b := gateOn(shared)
	csB := b.connect(client{})
	args := map[string]any{"path": "cache.txt"}
	h := pendingHandle(t, callTool(t, csB, "delete_note", args))
	f.approved.Store(true)
	withHandle := map[string]any{"path": "cache.txt", "approval_token": h}
	a := gateOn(&failingRedeem{Ledger: shared, during: func() {
		wantExecuted(t, callTool(t, csB, "delete_note", withHandle))
	}})
	res, err := a.connect(client{}).CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: withHandle})
	if err != nil {
		t.Fatal(err)
	}
	wantRefused(t, res, mcpsafe.ReasonLedgerUnavailable)
	store.set("cache.txt", "contents of cache.txt")
	wantRefused(t, callTool(t, csB, "delete_note", withHandle), mcpsafe.ReasonTokenSpent)
	if store.executions() != 1 {
		t.Fatalf("%d executions of one approval, want 1", store.executions())
	}
}
