package approvals

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/grants/celscope"
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
		GrantCEL: celscope.New(),
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
		Grants: &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: 3, Scopes: func(c mcpsafe.Call, _ mcpsafe.Resolved) ([]grants.Scope, error) {
			return []grants.Scope{{Words: "paths under tmp/", CEL: `args.path.startsWith("tmp/") && !args.path.contains("..")`}}, nil
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
	choose(t, ctx, sel, "grant-2-1")
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "grant-offer.png", png)

	// A call the grant would not cover arrives while alice is choosing: the
	// live update that shows it replaces every card, and must keep her
	// choice rather than quietly put it back to "just this call".
	other := call("other/x.txt")
	waitCards(t, ctx, 2)
	if got, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).value`, sel))); err != nil || got != "grant-2-1" {
		t.Fatalf("after a live update the grant choice reads %q (%v), want grant-2-1", got, err)
	}
	click(t, ctx, `article.req:not(.stale) button.approve`)
	if res := result(first); res.IsError {
		t.Fatalf("approved call refused: %v", res.Content)
	}
	waitCards(t, ctx, 1)
	click(t, ctx, `article.req:not(.stale) button.deny`)
	if res := result(other); !res.IsError {
		t.Fatal("the call outside the grant ran after being denied")
	}
	waitCards(t, ctx, 0)

	// 2. Two more calls under the grant: no request reaches the page.
	for _, p := range []string{"tmp/b.txt", "tmp/c.txt"} {
		if res := result(call(p)); res.IsError {
			t.Fatalf("%s under the grant: %v", p, res.Content)
		}
	}
	if p, h, _ := e.svc.snapshot(); len(p)+len(h) != 2 {
		n := len(p) + len(h)
		t.Fatalf("the service saw %d requests, want only the first and the one outside the grant", n)
	}
	mu.Lock()
	if len(written) != 3 {
		t.Fatalf("written %v, want 3 notes", written)
	}
	mu.Unlock()

	// 3. The fourth asks again: a new request appears in the page. Alice
	// approves it with the one-hour grant, and it runs.
	fourth := call("tmp/d.txt")
	waitCards(t, ctx, 1)
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("the fourth call did not ask: %v", err)
	}
	choose(t, ctx, sel, "grant-2-2")
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

// choose selects value in the select sel, retrying while a live update
// swaps the node out from under chromedp, and checks the page took it.
func choose(t *testing.T, ctx context.Context, sel, value string) {
	t.Helper()
	read := fmt.Sprintf(`(function(){var s=document.querySelector(%q);return s?s.value:"";})()`, sel)
	var err error
	for i := 0; i < 5; i++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = chromedp.Do(cctx, chromedp.SetValue(chromedp.CSS(sel), value))
		cancel()
		if err == nil {
			if got, rerr := chromedp.Run(ctx, chromedp.Evaluate[string](read)); rerr == nil && got == value {
				return
			}
		}
		// Again once the node (the new one, if a live update replaced
		// it) is on the page.
		cctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		chromedp.Do(cctx, chromedp.WaitVisible(chromedp.CSS(sel)))
		cancel()
	}
	t.Fatalf("choose %s in %s: %v", value, sel, err)
}

// waitCards waits until the page shows n requests still waiting.
func waitCards(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	count := `document.querySelectorAll("article.req:not(.stale)").length`
	// Watched in the page, on each change of its DOM.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf("%s === %d", count, n),
		chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[int](count))
		t.Fatalf("the page shows %d waiting requests, want %d (%v)", got, n, err)
	}
}
