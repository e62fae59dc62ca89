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
	"github.com/mcpsafe/mcpsafe/internal/planhtml"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestBrowserDiffPartReadable is the approval page with a 200-line edit in
// real parts (SDK client, gated server in channel mode, webhook, approval
// service, headless chromium at 1280x900): the diff is there with its
// added and removed lines marked (a sign and a colour each), the first
// lines open, the rest behind "expand", which shows every line; the
// content argument the diff stands for is named, not repeated. Approving
// runs the call.
func TestBrowserDiffPartReadable(t *testing.T) {
	ctx := newChromium(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, ServiceOptions{})
	browserLogin(t, ctx, e.srv.URL, "alice")

	var old, edited strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&old, "\tline %d of the config: value = %d\n", i, i)
		if i%2 == 0 {
			fmt.Fprintf(&edited, "\tline %d of the config: value = %d (edited)\n", i, i*10)
		} else {
			fmt.Fprintf(&edited, "\tline %d of the config: value = %d\n", i, i)
		}
	}
	var runs atomic.Int32
	gate, err := mcpsafe.New(mcpsafe.Options{
		Audience: "files@e2e", Journal: journal.Discard, Mode: mcpsafe.ModeChannel, Approver: e.hook,
		ChannelTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	err = gate.Register(server, mcpsafe.Tool{
		Name: "write_file", Irreversible: true, InputSchema: map[string]any{"type": "object"},
		Preview: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Resolved) (mcpsafe.Plan, error) {
			var a struct{ Path, Content string }
			if err := c.Decode(&a); err != nil {
				return mcpsafe.Plan{}, err
			}
			return mcpsafe.Plan{Summary: "Overwrite " + a.Path, Parts: []plan.Part{{
				Title: "Overwrite app.conf (100 lines changed)",
				Diff:  &plan.Diff{Path: a.Path, Old: old.String(), New: a.Content}, Shows: []string{"content"},
			}}}, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			runs.Add(1)
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
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "app.conf", "content": edited.String()}})
		if err != nil {
			t.Errorf("CallTool: %v", err)
		}
		ch <- res
	}()
	waitCards(t, ctx, 1)
	id, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('article.req').dataset.id`))
	if err != nil || id == "" {
		t.Fatalf("no card: %q, %v", id, err)
	}
	card := "#req-" + id
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	visible := func(sel string) int {
		t.Helper()
		js := fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).filter(function(e){return e.checkVisibility()}).length`, sel)
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](js))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The whole diff is on the page: 100 removed, 100 added, context and
	// hunk headers; 40 lines open, the rest folded.
	// (The diff is bounded in time and memory, so with this many changes
	// it may show a few unchanged lines as removed and added again; it
	// never hides one: 100 lines changed, so at least 100 each way.)
	a, d := count(card+` .dl.add`), count(card+` .dl.del`)
	if a < 100 || a != d {
		t.Fatalf("the page has %d added and %d removed lines, want the same number, at least 100", a, d)
	}
	head, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+` .part-head .counts`)))
	if err != nil || head != fmt.Sprintf("+%d −%d", a, d) {
		t.Fatalf("the part's counts %q do not match its lines (%d, %d): %v", head, a, d, err)
	}
	all := count(card + ` .dl`)
	if v := visible(card + ` .dl`); v != planhtml.DiffLines {
		t.Fatalf("%d diff lines open before expand, want %d", v, planhtml.DiffLines)
	}
	// Marked: a sign and a background of their own.
	marks, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(function(){
		var a=document.querySelector(%q), d=document.querySelector(%q), c=document.querySelector(%q);
		return [a.querySelector('.op').textContent, d.querySelector('.op').textContent,
		        getComputedStyle(a).backgroundColor, getComputedStyle(d).backgroundColor, getComputedStyle(c).backgroundColor,
		        getComputedStyle(a).fontFamily].join('|');})()`, card+` .dl.add`, card+` .dl.del`, card+` .dl.ctx`)))
	if err != nil {
		t.Fatal(err)
	}
	m := strings.Split(marks, "|")
	if m[0] != "+" || m[1] != "-" || m[2] == m[3] || m[2] == m[4] || m[3] == m[4] || !strings.Contains(m[5], "monospace") {
		t.Fatalf("added and removed lines are not marked apart: %q", marks)
	}
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+` .dl.add .t`)))
	if err != nil || text != "    line 2 of the config: value = 20 (edited)" {
		t.Fatalf("first added line %q, %v", text, err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(card+` tr[data-arg="content"] td`)))
	if err != nil || shown != "shown in full by change 1 above" {
		t.Fatalf("the content argument: %q, %v", shown, err)
	}
	// The JSON API (and so a bot behind the webhook) has the part as data.
	_, out := e.api("GET", "/api/requests/"+id, "alice")
	parts, _ := out["parts"].([]any)
	if len(parts) != 1 {
		t.Fatalf("the API has %d parts", len(parts))
	}
	p := parts[0].(map[string]any)
	if lines, _ := p["lines"].([]any); p["kind"] != "diff" || len(lines) != all || p["added"] != float64(a) || p["shows"].([]any)[0] != "content" {
		t.Fatalf("the API's part: kind %v, %d lines of %d, added %v", p["kind"], len(lines), all, p["added"])
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "diff-200-lines-1280x900.png", png)

	click(t, ctx, card+` details.more-diff > summary`)
	if v := visible(card + ` .dl`); v != all {
		t.Fatalf("after expand %d of %d diff lines are shown", v, all)
	}
	if png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		artifact(t, "diff-200-lines-expanded.png", png)
	}
	press(t, ctx, card+` button.approve`)
	select {
	case res := <-ch:
		if res == nil || res.IsError || runs.Load() != 1 {
			t.Fatalf("after Approve: %v, runs=%d", res, runs.Load())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return")
	}
}
