package channel

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGrantChosenInBrowser: a person approves a call in the approval
// service's page with "paths under tmp/, for 15 minutes, 3 uses"; that call
// and the next two run without a request reaching the page, and the fourth
// asks again (a new pending request appears). Approved with a one-hour
// grant, the fourth runs; the page lists that grant, the person revokes it
// there, and the fifth call asks again.
func TestGrantChosenInBrowser(t *testing.T) {
	ctx := newChromium(t)
	shared := ledger.NewMemory(0) // the gate's ledger, which the service lists and revokes in
	e := newEnv(t, ServiceOptions{Grants: shared})
	browserLogin(t, ctx, e.srv.URL, "alice")

	var mu sync.Mutex
	written := map[string]bool{}
	jr := &memJournal{}
	gate, err := mcpsafe.New(mcpsafe.Options{
		Audience: "notes@e2e", Journal: jr, Mode: mcpsafe.ModeChannel, Approver: e.hook, ChannelTimeout: time.Minute, Ledger: shared,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	err = gate.Register(server, mcpsafe.Tool{
		Name:         "write_note",
		MinAssurance: mcpsafe.AssuranceChannel,
		InputSchema: map[string]any{"type": "object", "required": []string{"path"},
			"properties": map[string]any{"path": map[string]any{"type": "string"}}},
		Grants: &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: 3, Scopes: func(c mcpsafe.Call, _ mcpsafe.Resolved) ([]mcpsafe.GrantScope, error) {
			return []mcpsafe.GrantScope{{Words: "paths under tmp/", CEL: `args.path.startsWith("tmp/") && !args.path.contains("..")`}}, nil
		}},
		Preview: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Resolved) (mcpsafe.Plan, error) {
			var a struct{ Path string }
			c.Decode(&a)
			return mcpsafe.Plan{Summary: fmt.Sprintf("Write note %q", a.Path)}, nil
		},
		Execute: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			var a struct{ Path string }
			c.Decode(&a)
			mu.Lock()
			written[a.Path] = true
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
		},
	})
	if err != nil {
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
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_note", Arguments: map[string]any{"path": path}})
			if err != nil {
				t.Errorf("CallTool %s: %v", path, err)
			}
			ch <- res
		}()
		return ch
	}
	result := func(ch chan *mcp.CallToolResult) *mcp.CallToolResult {
		t.Helper()
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

	// 1. The first call asks; alice chooses the 15-minute, 3-use grant.
	first := call("tmp/a.txt")
	sel := `article.req:not(.stale) select[name=grant]`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("no grant choice on the pending request: %v", err)
	}
	label, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(sel+` option[value="grant-2-1"]`)))
	if err != nil || !strings.Contains(label, "paths under tmp/") || !strings.Contains(label, "for 15m, 3 uses") {
		t.Fatalf("the offer reads %q (%v)", label, err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(sel), "grant-2-1")); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "grant-offer.png", png)
	click(t, ctx, `article.req:not(.stale) button.approve`)
	if res := result(first); res.IsError {
		t.Fatalf("approved call refused: %v", res.Content)
	}

	// 2. Two more calls under the grant: no request reaches the page.
	for _, p := range []string{"tmp/b.txt", "tmp/c.txt"} {
		if res := result(call(p)); res.IsError {
			t.Fatalf("%s under the grant: %v", p, res.Content)
		}
	}
	if p, h, _, _ := e.svc.snapshot(); len(p)+len(h) != 1 {
		n := len(p) + len(h)
		t.Fatalf("the service saw %d requests, want only the first", n)
	}
	mu.Lock()
	if len(written) != 3 {
		t.Fatalf("written %v, want 3 notes", written)
	}
	mu.Unlock()

	// 3. The fourth asks again: a new request appears in the page. Alice
	// approves it with the one-hour grant, and it runs.
	fourth := call("tmp/d.txt")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("the fourth call did not ask: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(sel), "grant-2-2")); err != nil {
		t.Fatal(err)
	}
	click(t, ctx, `article.req:not(.stale) button.approve`)
	if res := result(fourth); res.IsError {
		t.Fatalf("fourth call refused: %v", res.Content)
	}

	// 4. The page lists the live grant; alice revokes it there.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#grants button.revoke`))); err != nil {
		t.Fatalf("the live grant is not listed: %v", err)
	}
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#grants tbody tr`)))
	if err != nil || !strings.Contains(row, "write_note") || !strings.Contains(row, "2 of 3") || !strings.Contains(row, "paths under tmp/") {
		t.Fatalf("grant row %q (%v)", row, err)
	}
	png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "grant-list.png", png)
	click(t, ctx, `#grants button.revoke`)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#grants p.empty`))); err != nil {
		t.Fatalf("the revoked grant is still listed: %v", err)
	}

	// 5. The fifth call, which the grant covered, asks again; alice denies.
	fifth := call("tmp/e.txt")
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`article.req:not(.stale) button.deny`))); err != nil {
		t.Fatalf("the fifth call did not ask after the revocation: %v", err)
	}
	click(t, ctx, `article.req:not(.stale) button.deny`)
	if res := result(fifth); !res.IsError {
		t.Fatal("the fifth call ran after being denied")
	}
	mu.Lock()
	defer mu.Unlock()
	if written["tmp/e.txt"] || len(written) != 4 {
		t.Fatalf("written %v, want the four approved notes only", written)
	}
	if rec, ok := jr.find(journal.GrantCreated); !ok || rec.By != "alice" || !strings.Contains(rec.Summary, "3 uses") {
		t.Fatalf("grant record: %+v (found %v)", rec, ok)
	}
}
