package approvals

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// paddedArgs puts n harmless keys and a long harmless string before the
// argument that matters (recipient sorts after them all).
func paddedArgs(n, filler int) map[string]any {
	args := map[string]any{}
	for i := range n {
		args[fmt.Sprintf("a%03d", i)] = "harmless"
	}
	if filler > 0 {
		args["a_note"] = strings.Repeat("x", filler)
	}
	args["recipient"] = "attacker@evil.example"
	return args
}

// TestBrowserPaddedPlanShowsEveryArgument is the whole path in real parts
// (SDK client, gated SDK server in channel mode, webhook, approval service,
// headless chromium) under padding: 500 harmless arguments and a 100 KB
// string come before the recipient, and the plan mentions none of them.
// The approver still sees the recipient, whole, in the page (one click
// unfolds the arguments; the long string stays folded and does not push
// it away), and the JSON API has every argument in full. The control is
// a small call, whose arguments are shown open; both are approved and run.
func TestBrowserPaddedPlanShowsEveryArgument(t *testing.T) {
	ctx := newChromium(t)
	e := newEnv(t, ServiceOptions{})
	browserLogin(t, ctx, e.srv.URL, "alice")

	var runs atomic.Int32
	gate, err := mcpsafe.New(mcpsafe.Options{
		Audience: "mail@e2e", Journal: journal.Discard, Mode: mcpsafe.ModeChannel, Approver: e.hook,
		ChannelTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "mail", Version: "1"}, nil)
	err = gate.Register(server, mcpsafe.Tool{
		Name: "send_report", Irreversible: true, InputSchema: map[string]any{"type": "object"},
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "Send the weekly report"}, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, nil
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

	call := func(args map[string]any) chan *mcp.CallToolResult {
		ch := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "send_report", Arguments: args})
			if err != nil {
				t.Errorf("CallTool: %v", err)
			}
			ch <- res
		}()
		return ch
	}
	pendingID := func() string {
		t.Helper()
		var id string
		waitFor(t, "a single pending request", func() bool {
			_, out := e.api("GET", "/api/requests", "alice")
			if reqs, _ := out["requests"].([]any); len(reqs) == 1 {
				id = reqs[0].(map[string]any)["id"].(string)
			}
			return id != ""
		})
		return id
	}
	recipient := func(card string) string {
		t.Helper()
		sel := card + ` tr[data-arg="recipient"] .value`
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
			t.Fatalf("the recipient is not visible on the card: %v", err)
		}
		got, err := chromedp.Run(wctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	finish := func(ch chan *mcp.CallToolResult, want int32) {
		t.Helper()
		select {
		case res := <-ch:
			if res == nil || res.IsError || runs.Load() != want {
				t.Fatalf("after Approve: %v, runs=%d", res, runs.Load())
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the call did not return")
		}
	}

	// Attack: the padded call.
	ch := call(paddedArgs(500, 100<<10))
	id := pendingID()
	card := `#req-` + id
	click(t, ctx, card+` details.args > summary`) // folded: "Arguments: all 502, in full (show all; check every one)"
	if got := recipient(card); got != `"attacker@evil.example"` {
		t.Fatalf("recipient shown as %q", got)
	}
	long, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+` tr[data-arg="a_note"] details.long > summary`)))
	if err != nil || !strings.Contains(long, "(102400 characters; show all)") {
		t.Fatalf("the long value is not folded with its size: %q, %v", long, err)
	}
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(card+` tr[data-arg="a_note"]`))); err != nil {
		t.Fatal(err)
	}
	if png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot()); err == nil {
		artifact(t, "padded-plan.png", png)
	}
	// The API has every argument in full.
	_, out := e.api("GET", "/api/requests/"+id, "alice")
	args, _ := out["arguments"].(map[string]any)
	if len(args) != 502 || args["recipient"] != "attacker@evil.example" || len(args["a_note"].(string)) != 100<<10 {
		t.Fatalf("the API shows %d arguments, recipient %v", len(args), args["recipient"])
	}
	press(t, ctx, card+` button.approve`)
	finish(ch, 1)

	// Control: a small call shows its arguments open, no click needed.
	ch = call(map[string]any{"recipient": "team@example.com", "week": 48})
	id = pendingID()
	if got := recipient(`#req-` + id); got != `"team@example.com"` {
		t.Fatalf("recipient shown as %q", got)
	}
	press(t, ctx, `#req-`+id+` button.approve`)
	finish(ch, 2)
}
