package mcpsafe_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approvalpage"
	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
)

// The page says what happens at the moment it says it. A call that is
// still waiting runs at the click, and the page says so; a call that
// already answered approval_pending (no progress token, ChannelWait over)
// runs when the assistant calls again, and the page says that instead (the
// pending answer told the model where the person decides and to call
// again; a retry still pending repeats the plan).
func TestPageSaysWhenTheApprovedCallRuns(t *testing.T) {
	t.Run("the client still waits", func(t *testing.T) {
		pe := newPageEnv(t, nil)
		cs := pe.pageClient(t, "2025-11-25", false, false, "", nil, nil)
		res := callAsync(t, cs, "todo.txt")
		link := receive(t, pe.opened, "browser opening the page")
		_, form, err := pagetest.Open(link)
		if err != nil {
			t.Fatal(err)
		}
		code, body, err := pagetest.Click(link, form, "approve")
		if err != nil || code != 200 || !strings.Contains(body, "runs now") || strings.Contains(body, "calls again") {
			t.Fatalf("approved while the call waits: %d %v %s", code, err, body)
		}
		wantExecuted(t, receive2(t, res))
	})
	t.Run("the client was answered pending", func(t *testing.T) {
		pe := newPageEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
			o.ChannelWait = 20 * time.Millisecond // an injectable wait, not 45 s
		})
		cs := pe.pageClient(t, "2025-11-25", false, false, "", nil, nil)
		first := callTool(t, cs, "delete_note", map[string]any{"path": "todo.txt"})
		handle := pendingHandle(t, first)
		for _, want := range []string{"approval page in their browser", "call delete_note again", `Delete note "todo.txt"`, "nothing has run yet"} {
			if !strings.Contains(text(first), want) {
				t.Errorf("the pending answer does not say %q: %s", want, text(first))
			}
		}
		link := receive(t, pe.opened, "browser opening the page")
		// A retry before the decision: pending again, with the plan again.
		again := callTool(t, cs, "delete_note", map[string]any{"path": "todo.txt", "approval_token": handle})
		if pendingHandle(t, again); !strings.Contains(text(again), `Delete note "todo.txt"`) {
			t.Fatalf("the retry's pending answer does not repeat the plan: %s", text(again))
		}
		if !pe.notes.has("todo.txt") {
			t.Fatal("ran before any decision")
		}
		_, form, err := pagetest.Open(link)
		if err != nil {
			t.Fatal(err)
		}
		code, body, err := pagetest.Click(link, form, "approve")
		if err != nil || code != 200 || strings.Contains(body, "runs now") || !strings.Contains(body, "when the assistant calls again") {
			t.Fatalf("approved after the call answered pending: %d %v %s", code, err, body)
		}
		if !pe.notes.has("todo.txt") || pe.notes.executions() != 0 {
			t.Fatal("the page said the call runs when the assistant calls again, but it ran already")
		}
		wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "todo.txt", "approval_token": handle}))
		if pe.notes.has("todo.txt") || pe.notes.executions() != 1 {
			t.Fatalf("the retry after the approval: executions %d", pe.notes.executions())
		}
	})
}

// A page whose browser did not open says so in the pending answer, so
// that the model can tell the person where to look; control: an opened
// page's pending answer does not.
func TestPendingAnswerSaysTheBrowserDidNotOpen(t *testing.T) {
	for _, fails := range []bool{true, false} {
		pe := newPageEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
			p, err := approvalpage.Listen(approvalpage.Options{Addr: "127.0.0.1:0", Clock: o.Clock, Open: func(string) error {
				if fails {
					return errors.New("no browser here")
				}
				return nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			o.Page = p
			o.ChannelWait = 100 * time.Millisecond
		})
		cs := pe.pageClient(t, "2025-11-25", false, false, "", nil, nil)
		res := callTool(t, cs, "delete_note", map[string]any{"path": "todo.txt"})
		handle := pendingHandle(t, res)
		// The opener runs beside the wait; the retry's answer knows.
		res = callTool(t, cs, "delete_note", map[string]any{"path": "todo.txt", "approval_token": handle})
		pendingHandle(t, res)
		said := strings.Contains(text(res), "could not open the approval page") && strings.Contains(text(res), "server's log")
		if said != fails {
			t.Fatalf("browser fails %v, the pending answer: %s", fails, text(res))
		}
	}
}
