package approvals

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memJournal keeps the gate's audit records for the test to read.
type memJournal struct {
	mu   sync.Mutex
	recs []journal.Record
}

func (j *memJournal) Append(_ context.Context, r journal.Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recs = append(j.recs, r)
	return nil
}

func (j *memJournal) find(decision string) (journal.Record, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, r := range j.recs {
		if r.Decision == decision {
			return r, true
		}
	}
	return journal.Record{}, false
}

// fileStore is the gated server's state: files it may delete.
type fileStore struct {
	mu    sync.Mutex
	files map[string]string
	execs int
}

func (f *fileStore) has(p string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.files[p]
	return ok
}

func (f *fileStore) runs() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execs
}

func (f *fileStore) deleteTool() mcpsafe.Tool {
	type args struct {
		Path string `json:"path"`
	}
	return mcpsafe.Tool{
		Name:         "delete_file",
		Description:  "Delete a file.",
		Irreversible: true,
		MinAssurance: mcpsafe.AssuranceChannel, // only an authenticated approver will do
		InputSchema: map[string]any{
			"type": "object", "required": []string{"path"}, "additionalProperties": false,
			"properties": map[string]any{"path": map[string]any{"type": "string"}},
		},
		Resolve: func(_ context.Context, c mcpsafe.Call) (mcpsafe.Resolved, error) {
			var a args
			if err := c.Decode(&a); err != nil {
				return nil, err
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			v, ok := f.files[a.Path]
			if !ok {
				return nil, mcpsafe.Refuse("not_found", "no file %q", a.Path)
			}
			return mcpsafe.Resolved{"path": a.Path, "size": len(v)}, nil
		},
		Preview: func(_ context.Context, _ mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{
				Summary: fmt.Sprintf("Delete %q", r["path"]),
				Details: []string{fmt.Sprintf("%v bytes; there is no undo", r["size"])},
				Targets: []mcpsafe.Target{{Name: r["path"].(string), State: fmt.Sprintf("%v bytes", r["size"])}},
			}, nil
		},
		Execute: func(_ context.Context, c mcpsafe.Call, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			var x args
			if err := c.Decode(&x); err != nil {
				return nil, err
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			f.execs++
			delete(f.files, x.Path)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + x.Path + " (approved by " + a.By + ")"}}}, nil
		},
	}
}

// TestGateChannelBrowser is the whole path: a real SDK client calls a tool
// on a real SDK server gated by mcpsafe in channel mode; the gate's
// webhook reaches the approval service; a person in headless chromium
// approves (the tool runs) and, for a second call, denies (it does not).
func TestGateChannelBrowser(t *testing.T) {
	start := time.Now()
	ctx := newChromium(t)
	e := newEnv(t, ServiceOptions{})
	browserLogin(t, ctx, e.srv.URL, "alice")

	files := &fileStore{files: map[string]string{"cache.txt": "old cache", "thesis.txt": "four years of work"}}
	jr := &memJournal{}
	gate, err := mcpsafe.New(mcpsafe.Options{
		Audience: "files@e2e", Journal: jr, Mode: mcpsafe.ModeChannel, Approver: e.hook,
		ChannelTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	if err := gate.Register(server, files.deleteTool()); err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	call := func(path string) chan *mcp.CallToolResult {
		ch := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": path}})
			if err != nil {
				t.Errorf("CallTool %s: %v", path, err)
			}
			ch <- res
		}()
		return ch
	}
	result := func(ch chan *mcp.CallToolResult) *mcp.CallToolResult {
		select {
		case r := <-ch:
			if r == nil {
				t.FailNow()
			}
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("the tool call did not return")
			return nil
		}
	}
	// clickOn clicks a button on the one pending card whose summary names path.
	clickOn := func(path, button string) {
		t.Helper()
		sel := `article.req:not(.stale) button.` + button
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
			t.Fatalf("no pending request appeared: %v", err)
		}
		summary, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`article.req:not(.stale) .summary`)))
		if err != nil || !strings.Contains(summary, path) {
			t.Fatalf("the page shows %q (%v), want the plan for %s", summary, err, path)
		}
		press(t, ctx, sel)
	}

	// Approve: the tool runs, and the journal names the approver.
	ch := call("cache.txt")
	clickOn("cache.txt", "approve")
	res := result(ch)
	if res.IsError || files.has("cache.txt") || files.runs() != 1 {
		t.Fatalf("after Approve: isError=%v, cache.txt still there=%v, execs=%d, %v", res.IsError, files.has("cache.txt"), files.runs(), res.Content)
	}
	if rec, ok := jr.find(journal.ChannelApproved); !ok || rec.By != "alice" || rec.Tool != "delete_file" {
		t.Fatalf("journal: %+v (found %v)", rec, ok)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`article.req.stale .stale-note`))); err != nil {
		t.Fatal(err)
	}

	// Deny: nothing runs; the model sees channel_denied.
	ch = call("thesis.txt")
	clickOn("thesis.txt", "deny")
	res = result(ch)
	raw, _ := json.Marshal(res.StructuredContent)
	var sc struct{ Status, Reason string }
	json.Unmarshal(raw, &sc)
	if !res.IsError || sc.Status != "refused" || sc.Reason != mcpsafe.ReasonChannelDenied {
		t.Fatalf("after Deny: isError=%v structured=%s", res.IsError, raw)
	}
	if !files.has("thesis.txt") || files.runs() != 1 {
		t.Fatalf("denied, but the tool ran: execs=%d", files.runs())
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.outcome.denied`))); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "gate-history.png", png)
	t.Logf("gate + service + browser end-to-end took %s", time.Since(start).Round(time.Millisecond))
}
