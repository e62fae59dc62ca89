package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitGate is a gated delete_file server in channel mode wired to a real
// approval service, and a real SDK client connected to it in memory.
type waitGate struct {
	t       *testing.T
	e       *env
	files   *fileStore
	jr      *memJournal
	cs      *mcp.ClientSession
	conn    *killable
	mu      sync.Mutex
	updates []float64 // progress values the client received
}

// killable lets a test drop the client's connection the way a killed
// client process does; ClientSession.Close would wait for calls in flight.
type killable struct {
	mcp.Transport
	mu   sync.Mutex
	conn mcp.Connection
}

func (k *killable) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	k.mu.Lock()
	k.conn = c
	k.mu.Unlock()
	return c, err
}

func (k *killable) kill() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.conn.Close()
}

func newWaitGate(t *testing.T, tune func(*mcpsafe.Options)) *waitGate {
	t.Helper()
	return newWaitGateOn(t, newEnv(t, ServiceOptions{}), tune)
}

// newWaitGateOn is newWaitGate with its webhook on the service of e.
func newWaitGateOn(t *testing.T, e *env, tune func(*mcpsafe.Options)) *waitGate {
	t.Helper()
	w := &waitGate{t: t, e: e, jr: &memJournal{},
		files: &fileStore{files: map[string]string{"cache.txt": "old cache", "notes.txt": "keep me"}}}
	opts := mcpsafe.Options{
		Audience: "files@wait", Journal: w.jr, Mode: mcpsafe.ModeChannel, Approver: w.e.hook,
		ChannelTimeout: time.Minute, ChannelWait: time.Minute, ProgressInterval: 20 * time.Millisecond,
		// The test names the caller in _meta, so that one test can be two
		// principals; real servers take it from the transport.
		Principal: func(req *mcp.CallToolRequest) string {
			if who, ok := req.Params.Meta["who"].(string); ok {
				return who
			}
			return "stdio"
		},
	}
	if tune != nil {
		tune(&opts)
	}
	gate, err := mcpsafe.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	if err := gate.Register(server, w.files.deleteTool()); err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			w.mu.Lock()
			w.updates = append(w.updates, r.Params.Progress)
			w.mu.Unlock()
		},
	})
	w.conn = &killable{Transport: ct}
	if w.cs, err = client.Connect(context.Background(), w.conn, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cs.Close() })
	return w
}

func (w *waitGate) progressCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.updates)
}

type callOpts struct {
	token, who string
	progress   bool
	dropped    bool // the test cuts the connection: an error is expected
}

func (w *waitGate) call(ctx context.Context, path string, o callOpts) (*mcp.CallToolResult, error) {
	args := map[string]any{"path": path}
	if o.token != "" {
		args[mcpsafe.TokenField] = o.token
	}
	p := &mcp.CallToolParams{Name: "delete_file", Arguments: args, Meta: mcp.Meta{}}
	if o.who != "" {
		p.Meta["who"] = o.who
	}
	if o.progress {
		p.SetProgressToken("wait-1")
	}
	return w.cs.CallTool(ctx, p)
}

func (w *waitGate) callAsync(ctx context.Context, path string, o callOpts) chan *mcp.CallToolResult {
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := w.call(ctx, path, o)
		if err != nil && ctx.Err() == nil && !o.dropped {
			w.t.Errorf("CallTool %s: %v", path, err)
		}
		ch <- res
	}()
	return ch
}

// pendingID waits until the service lists exactly one pending request.
func (w *waitGate) pendingID() string {
	w.t.Helper()
	var id string
	waitFor(w.t, "a pending request at the approval service", func() bool {
		_, out := w.e.api("GET", "/api/requests", "alice")
		reqs, _ := out["requests"].([]any)
		if len(reqs) != 1 {
			return false
		}
		id = reqs[0].(map[string]any)["id"].(string)
		return true
	})
	return id
}

// status waits until request id has the given status and returns it.
func (w *waitGate) status(id, want string) map[string]any {
	w.t.Helper()
	var out map[string]any
	waitFor(w.t, "request "+id+" "+want, func() bool {
		_, out = w.e.api("GET", "/api/requests/"+id, "alice")
		return out["status"] == want
	}, func() string { return fmt.Sprintf("it is %v", out) })
	return out
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res == nil {
		t.Fatal("no result")
	}
	var m map[string]any
	raw, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(raw, &m)
	return m
}

func got(t *testing.T, ch chan *mcp.CallToolResult) *mcp.CallToolResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		t.Fatal("the tool call did not return")
		return nil
	}
}

func readJournal(t *testing.T, path string) []journal.Record {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []journal.Record
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if line == "" {
			continue
		}
		var r journal.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// A client that sent a progress token hears from the gate every
// ProgressInterval while the human decides, with progress increasing; the
// approval still runs the call. Without a token nothing is sent.
func TestChannelWaitSendsProgress(t *testing.T) {
	for _, withToken := range []bool{true, false} {
		t.Run(map[bool]string{true: "progress token", false: "no progress token (control)"}[withToken], func(t *testing.T) {
			w := newWaitGate(t, nil)
			ch := w.callAsync(context.Background(), "cache.txt", callOpts{progress: withToken})
			id := w.pendingID()
			if withToken {
				waitFor(t, "3 progress notifications while waiting", func() bool { return w.progressCount() >= 3 },
					func() string { return fmt.Sprintf("%d came", w.progressCount()) })
			}
			w.e.decide(id, "approve", "alice", 200)
			res := got(t, ch)
			if res.IsError || w.files.has("cache.txt") || w.files.runs() != 1 {
				t.Fatalf("approved call did not run: %v", res.Content)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if !withToken && len(w.updates) != 0 {
				t.Fatalf("%d progress notifications without a progress token", len(w.updates))
			}
			for i := 1; i < len(w.updates); i++ {
				if w.updates[i] <= w.updates[i-1] {
					t.Fatalf("progress did not increase: %v", w.updates)
				}
			}
		})
	}
}

// A caller that cancels while the human decides: the request is withdrawn
// at the service (caller gone), approving it afterwards is refused and
// runs nothing, and the journal records the refusal although the caller's
// context was cancelled.
func TestChannelCallerGoneWithdraws(t *testing.T) {
	for _, how := range []string{"cancel", "disconnect"} {
		t.Run(how, func(t *testing.T) {
			// The real journal: it drops a record whose writer's context
			// was cancelled, so this shows the refusal survives the caller.
			path := filepath.Join(t.TempDir(), "journal.jsonl")
			j, err := journal.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			w := newWaitGate(t, func(o *mcpsafe.Options) { o.Journal = j })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ch := w.callAsync(ctx, "cache.txt", callOpts{progress: true, dropped: how == "disconnect"})
			id := w.pendingID()
			if how == "cancel" {
				cancel()
			} else {
				w.conn.kill()
			}
			got(t, ch)
			out := w.status(id, channel.StatusWithdrawn)
			if out["withdrawn"] != approver.WithdrawCallerGone {
				t.Fatalf("withdrawn request: %v", out)
			}
			w.e.decide(id, "approve", "alice", 409)
			var recs []journal.Record
			waitFor(t, "the refusal journaled", func() bool { recs = readJournal(t, path); return len(recs) != 0 })
			if len(recs) != 1 || recs[0].Decision != journal.Refused || recs[0].Reason != mcpsafe.ReasonCallerGone ||
				recs[0].Tool != "delete_file" || recs[0].Summary != `Delete "cache.txt"` {
				t.Fatalf("journal: %+v, want one caller_gone refusal", recs)
			}
			if !w.files.has("cache.txt") || w.files.runs() != 0 {
				t.Fatal("a withdrawn request ran")
			}
		})
	}
}

// The asynchronous path: a client without a progress token gets
// "approval_pending" and a sealed handle after ChannelWait. The handle is
// bound like a grant: other arguments or another principal are refused,
// and it runs the call once, only after an approver approved; a replay is
// refused. A denied request refuses the handle.
func TestChannelAsyncHandle(t *testing.T) {
	w := newWaitGate(t, func(o *mcpsafe.Options) { o.ChannelWait = time.Second })
	ctx := context.Background()
	first, err := w.call(ctx, "cache.txt", callOpts{who: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	sc := structured(t, first)
	handle, _ := sc["approval_token"].(string)
	if first.IsError || sc["status"] != "approval_pending" || handle == "" {
		t.Fatalf("first call: %v", sc)
	}
	id := w.pendingID()

	refused := func(name string, res *mcp.CallToolResult, err error, reason string) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := structured(t, res); !res.IsError || got["reason"] != reason {
			t.Fatalf("%s: %v, want refused %s", name, got, reason)
		}
	}
	res, err := w.call(ctx, "notes.txt", callOpts{who: "agent-1", token: handle})
	refused("handle swapped to other arguments", res, err, mcpsafe.ReasonArgumentsChanged)
	res, err = w.call(ctx, "cache.txt", callOpts{who: "agent-2", token: handle})
	refused("handle used by another principal", res, err, mcpsafe.ReasonTokenInvalid)

	// Still pending: the same answer again, and the request is still open.
	res, err = w.call(ctx, "cache.txt", callOpts{who: "agent-1", token: handle})
	if err != nil || structured(t, res)["status"] != "approval_pending" {
		t.Fatalf("resume before a decision: %v %v", err, res)
	}
	w.status(id, channel.StatusPending)
	if w.files.runs() != 0 {
		t.Fatal("ran before approval")
	}

	w.e.decide(id, "approve", "alice", 200)
	res, err = w.call(ctx, "cache.txt", callOpts{who: "agent-1", token: handle})
	if err != nil || res.IsError || w.files.has("cache.txt") || w.files.runs() != 1 {
		t.Fatalf("resume after approval (control): %v %v", err, res)
	}
	if rec, ok := w.jr.find(journal.ChannelApproved); !ok || rec.By != "alice" || rec.Principal != "agent-1" {
		t.Fatalf("journal: %+v", rec)
	}
	res, err = w.call(ctx, "cache.txt", callOpts{who: "agent-1", token: handle})
	if err != nil || !res.IsError || w.files.runs() != 1 {
		t.Fatalf("replayed handle: %v %v (runs %d)", err, res, w.files.runs())
	}

	// Denied: the handle picks up the no.
	first, _ = w.call(ctx, "notes.txt", callOpts{who: "agent-1"})
	handle, _ = structured(t, first)["approval_token"].(string)
	w.e.decide(w.pendingID(), "deny", "bob", 200)
	res, err = w.call(ctx, "notes.txt", callOpts{who: "agent-1", token: handle})
	refused("denied request", res, err, mcpsafe.ReasonChannelDenied)
	if !w.files.has("notes.txt") || w.files.runs() != 1 {
		t.Fatal("a denied request ran")
	}
}

// An approver with the page open sees a request whose caller went away
// turn into "withdrawn (caller gone)" in place, with its buttons disabled,
// and the history says so too (real Chromium).
func TestChannelCallerGoneInBrowser(t *testing.T) {
	ctx := newChromium(t)
	w := newWaitGate(t, nil)
	browserLogin(t, ctx, w.e.srv.URL, "alice")
	callCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := w.callAsync(callCtx, "cache.txt", callOpts{progress: true})
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`article.req button.approve`))); err != nil {
		t.Fatalf("the request did not appear: %v", err)
	}
	cancel()
	got(t, ch)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`article.req.stale .stale-note`))); err != nil {
		t.Fatalf("the card was not marked: %v", err)
	}
	note, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`article.req.stale .stale-note`)))
	if err != nil || !strings.Contains(note, "Withdrawn (caller gone)") {
		t.Fatalf("card note %q (%v)", note, err)
	}
	disabled, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`article.req.stale button.approve`), "disabled"))
	if err != nil || !disabled.Exists {
		t.Fatalf("the Approve button of a withdrawn request is not disabled (%v)", err)
	}
	hist, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`section.history tbody`)))
	if err != nil || !strings.Contains(strings.ToLower(hist), "withdrawn (caller gone)") {
		t.Fatalf("history %q (%v)", hist, err)
	}
	if w.files.runs() != 0 {
		t.Fatal("a withdrawn request ran")
	}
}
