package mcpsafe_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resumableFunc is an in-process approver with an Awaiter. The real webhook and
// approval service behind the same interface are tested end to end in
// channel/ and cmd/mcpsafe; here the gate's side of the pending handle is.
type resumableFunc struct {
	approverFunc
	await func(ctx context.Context, r approver.Request, wait time.Duration) (approver.Decision, error)
}

func (f resumableFunc) Await(ctx context.Context, r approver.Request, wait time.Duration) (approver.Decision, error) {
	return f.await(ctx, r, wait)
}

func (f resumableFunc) Awaiter() approver.Awaiter { return f }

// decided is a resumable approver that says "pending" until the test
// decides, and counts how often it was asked.
type decided struct {
	approved atomic.Bool
	asks     atomic.Int32
	lastID   atomic.Value
}

func (d *decided) approver() approver.Approver {
	return resumableFunc{
		approverFunc: func(context.Context, approver.Request) (approver.Decision, error) {
			return approver.Decision{}, approver.ErrNoDecision
		},
		await: func(_ context.Context, r approver.Request, _ time.Duration) (approver.Decision, error) {
			d.asks.Add(1)
			d.lastID.Store(r.ID)
			if d.approved.Load() {
				return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
			}
			return approver.Decision{}, approver.ErrPending
		},
	}
}

func pendingHandle(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	m := structured(t, res)
	h, _ := m["approval_token"].(string)
	if res.IsError || m["status"] != "approval_pending" || h == "" || !strings.Contains(text(res), "not an approval") {
		t.Fatalf("want approval_pending with a handle, got %v %v", m, text(res))
	}
	return h
}

// The handle binds the resolved target like a grant: a note changed while
// the request was pending is refused (target_changed) and not re-asked;
// the unchanged twin runs once after the approval.
func TestChannelHandleBindsTarget(t *testing.T) {
	d := &decided{}
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Approver = d.approver()
	})
	cs := e.connect(client{})
	changed := pendingHandle(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}))
	kept := pendingHandle(t, callTool(t, cs, "delete_note", map[string]any{"path": "thesis.txt"}))
	e.notes.set("cache.txt", "something else now")
	d.approved.Store(true)
	asks := d.asks.Load()
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": changed}), mcpsafe.ReasonTargetChanged)
	if d.asks.Load() != asks || !e.notes.has("cache.txt") {
		t.Fatal("a handle for a changed target reached the approver or ran")
	}
	wantExecuted(t, callTool(t, cs, "delete_note", map[string]any{"path": "thesis.txt", "approval_token": kept}))
	// The same note again, so that only single use stands in the way of a
	// replay (the approver here would say yes again).
	e.notes.set("thesis.txt", "contents of thesis.txt")
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "thesis.txt", "approval_token": kept}), mcpsafe.ReasonTokenSpent)
	if e.notes.executions() != 1 {
		t.Fatalf("%d executions, want 1", e.notes.executions())
	}
}

// A channel tool whose approver cannot resume refuses every
// approval_token: there is no handle to pick up, and a token is never an
// approval in channel mode.
func TestChannelTokenWithoutAwaiter(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Approver = approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
			return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
		})
	})
	wantRefused(t, callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt", "approval_token": "anything"}), mcpsafe.ReasonPolicyDenied)
	if !e.notes.has("cache.txt") {
		t.Fatal("an approval_token ran a channel call whose approver cannot resume")
	}
}

// ChannelTimeout may not exceed TTL (the request expires with its grant),
// nor ChannelWait ChannelTimeout; negative values are refused. The
// defaults fit together.
func TestChannelTimesAtNew(t *testing.T) {
	ap := approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
		return approver.Decision{}, approver.ErrDenied
	})
	for _, tc := range []struct {
		name string
		o    mcpsafe.Options
		msg  string // "" = accepted
	}{
		{"defaults", mcpsafe.Options{}, ""},
		{"timeout equal to TTL", mcpsafe.Options{TTL: time.Minute, ChannelTimeout: time.Minute}, ""},
		{"short TTL, default timeout", mcpsafe.Options{TTL: 10 * time.Second}, ""},
		{"timeout longer than TTL", mcpsafe.Options{TTL: 5 * time.Minute, ChannelTimeout: 10 * time.Minute}, "longer than TTL"},
		{"wait longer than timeout", mcpsafe.Options{ChannelTimeout: time.Minute, ChannelWait: 2 * time.Minute}, "longer than ChannelTimeout"},
		{"negative wait", mcpsafe.Options{ChannelWait: -time.Second}, "negative"},
		{"negative progress interval", mcpsafe.Options{ProgressInterval: -time.Second}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Audience, o.Journal, o.Mode, o.Approver = "a", journal.Discard, mcpsafe.ModeChannel, ap
			_, err := mcpsafe.New(o)
			if (err == nil) != (tc.msg == "") || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
				t.Fatalf("New = %v, want %q", err, tc.msg)
			}
		})
	}
}

// A channel tool whose approver can answer "pending" does not advertise
// its output schema (a pending result cannot follow it); with an approver
// that always decides in-call it does.
func TestChannelOutputSchemaWithPending(t *testing.T) {
	out := map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}
	for _, tc := range []struct {
		name     string
		approver approver.Approver
		want     bool
	}{
		{"resumable", (&decided{}).approver(), false},
		{"in-call only", approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
			return approver.Decision{}, approver.ErrDenied
		}), true},
	} {
		e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.Mode, o.Approver = mcpsafe.ModeChannel, tc.approver
			(*tools)[1].OutputSchema = out
		})
		lt, err := e.connect(client{}).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range lt.Tools {
			if tool.Name == "rename_note" && (tool.OutputSchema != nil) != tc.want {
				t.Errorf("%s: output schema advertised = %v, want %v", tc.name, tool.OutputSchema != nil, tc.want)
			}
		}
	}
}

// A caller that leaves while Execute runs does not take the outcome out of
// the journal: what ran is recorded (the real journal drops a record whose
// writer's context was cancelled).
func TestOutcomeJournaledAfterCallerLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.jsonl")
		j, err := journal.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		started := make(chan struct{})
		e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.Journal = j
			o.Mode = mcpsafe.ModeChannel
			o.Approver = approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
				return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
			})
			(*tools)[0].Execute = func(ctx context.Context, _ mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
				close(started)
				<-ctx.Done() // a long operation that stops when its caller leaves
				return nil, ctx.Err()
			}
		})
		defer e.gate.Close() // its sweep of ended grants runs in the bubble
		cs := e.connect(client{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"path": "cache.txt"}})
			done <- err
		}()
		<-started
		cancel()
		<-done
		synctest.Wait() // the gate has finished with the call: its outcome is appended
		var got []string
		raw, _ := os.ReadFile(path)
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var r journal.Record
			if json.Unmarshal([]byte(line), &r) == nil {
				got = append(got, r.Decision)
			}
		}
		if strings.Join(got, " ") != journal.ChannelApproved+" "+journal.Ambiguous {
			t.Fatalf("journal %v, want the approval and the ambiguous outcome (the caller left while it ran; a grant that never left the call has no redemption record)", got)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

// Only a resumable approver can leave a request pending: a plain Approver
// that answers ErrPending gets no handle back for it (there is nothing to
// resume), and the call is refused.
func TestPendingFromPlainApproverRefused(t *testing.T) {
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Approver = approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
			return approver.Decision{}, approver.ErrPending
		})
	})
	wantRefused(t, callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt"}), mcpsafe.ReasonChannelUnavailable)
}
