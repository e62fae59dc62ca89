package mcpsafe_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
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
	e.journal.fail = errors.New("no space left on device")
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
