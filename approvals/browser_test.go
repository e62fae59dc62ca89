package approvals

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/browsertest"
)

// newChromium starts a fresh headless chromium (internal/browsertest).
func newChromium(t *testing.T) context.Context { return browsertest.New(t, 1100, 1000) }

func artifact(t *testing.T, name string, png []byte) { browsertest.Artifact(t, name, png) }

// browserLogin signs in through the real login form.
func browserLogin(t *testing.T, ctx context.Context, base, name string) {
	t.Helper()
	err := chromedp.Do(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#name`)),
		chromedp.SendKeys(chromedp.CSS(`#name`), name),
		chromedp.SendKeys(chromedp.CSS(`#password`), tokenOf(name)),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#lists`)),
		chromedp.WaitVisible(chromedp.CSS(`.live:not(.off)`)), // the live stream is connected
	)
	if err != nil {
		t.Fatalf("login as %s: %v", name, err)
	}
}

// click clicks sel, retrying while a live update swaps the node out from
// under the query (a card is replaced in place when its state changes).
func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	var err error
	for i := 0; i < 5; i++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = chromedp.Do(cctx, chromedp.Click(chromedp.CSS(sel)))
		cancel()
		if err == nil {
			return
		}
		// Again once the node (the new one, if a live update replaced
		// it) is on the page.
		cctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		chromedp.Do(cctx, chromedp.WaitVisible(chromedp.CSS(sel)))
		cancel()
	}
	t.Fatalf("click %s: %v", sel, err)
}

// press clicks an approve or deny button and makes sure the page took it:
// the submit handler disables the card's buttons at once. A live update
// that replaces the card between mouse down and mouse up swallows the
// click (as it would a person's, who then clicks again); only then is it
// clicked again, so a decision is never sent twice.
func press(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	taken := fmt.Sprintf(`(function(){var b=document.querySelector(%q);return !b||b.disabled;})()`, sel)
	for i := 0; i < 5; i++ {
		click(t, ctx, sel)
		// Watched in the page, on each change of its DOM.
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](taken, chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(3*time.Second))); err == nil {
			return
		}
	}
	t.Fatalf("press %s: the page never took the click", sel)
}

func e2eRequest(id string) approver.Request {
	r := testRequest(id)
	r.Tool = "delete_file"
	r.Summary = `Delete "reports/2026-q3.csv" (48 KiB) from files@host`
	r.Details = []string{"path: /srv/data/reports/2026-q3.csv", "size: 49,152 bytes, modified 2026-11-30 17:02 UTC", "This cannot be undone: the file is not moved to a trash folder."}
	r.Targets = []mcpsafe.Target{{Name: "/srv/data/reports/2026-q3.csv", State: "regular file, sha256 3f9a…c1d2"}}
	r.ExpiresAt = time.Now().Add(5 * time.Minute)
	return r
}

// TestBrowserApproveDeny drives the web UI in a real headless chromium: a
// webhook caller (standing in for a gated server) waits while a person
// logs in, sees the plan appear without reloading, clicks Approve (the
// caller is approved), then clicks Deny on a second request (the caller is
// not), and sees a request decided elsewhere lose its buttons.
func TestBrowserApproveDeny(t *testing.T) {
	start := time.Now()
	ctx := newChromium(t)
	e := newEnv(t, ServiceOptions{})
	browserLogin(t, ctx, e.srv.URL, "alice")

	// 1. Approve.
	ch := e.ask(e2eRequest("e2e-approve"))
	err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#req-e2e-approve button.approve`))) // appeared without a reload
	if err != nil {
		t.Fatalf("the request did not show up: %v", err)
	}
	summary, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#req-e2e-approve .summary`)))
	if err != nil {
		t.Fatalf("the request did not show up: %v", err)
	}
	if !strings.Contains(summary, "reports/2026-q3.csv") {
		t.Fatalf("summary shown = %q", summary)
	}
	moveReq := e2eRequest("e2e-deny") // also pending in the screenshot
	moveReq.Tool, moveReq.Irreversible = "move_file", false
	moveReq.Summary = `Move "drafts/plan.md" to "archive/2026/plan.md"`
	moveReq.Details = []string{"from: /srv/data/drafts/plan.md", "to: /srv/data/archive/2026/plan.md (does not exist yet)"}
	moveReq.Targets = []mcpsafe.Target{{Name: "/srv/data/drafts/plan.md", State: "regular file, 3,214 bytes"}}
	second := e.ask(moveReq)
	err = chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`#req-e2e-deny`)),
		chromedp.Sleep(1100*time.Millisecond), // let the countdown tick once
	)
	if err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "pending.png", png)
	press(t, ctx, `#req-e2e-approve button.approve`)
	r := wait(t, ch)
	if r.err != nil || !r.d.Approved || strings.Join(r.d.Approvers, ",") != "alice" {
		t.Fatalf("after clicking Approve: %+v, %v", r.d, r.err)
	}

	// 2. Deny.
	press(t, ctx, `#req-e2e-deny button.deny`)
	r = wait(t, second)
	checkOutcome(t, r.d, r.err, channel.ErrDenied, "alice")

	// 3. Decided elsewhere: bob approves over the API while alice looks at
	// the page; without a reload her card stays in place, its buttons
	// disabled and the outcome written on it.
	third := e.ask(e2eRequest("e2e-elsewhere"))
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#req-e2e-elsewhere button.approve`))); err != nil {
		t.Fatal(err)
	}
	e.decide("e2e-elsewhere", "approve", "bob", 200)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(`#req-e2e-elsewhere.stale .stale-note`))); err != nil {
		t.Fatalf("a request decided elsewhere was not marked stale: %v", err)
	}
	note, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#req-e2e-elsewhere .stale-note`)))
	if err != nil || !strings.Contains(note, "Approved by bob") {
		t.Fatalf("stale note %q, %v", note, err)
	}
	enabled, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSSAll(`#req-e2e-elsewhere button.approve:not([disabled]), #req-e2e-elsewhere button.deny:not([disabled])`), chromedp.AtLeast(0)))
	if err != nil || len(enabled) != 0 {
		t.Fatalf("a decided request still has %d enabled buttons (%v)", len(enabled), err)
	}
	if r := wait(t, third); !r.d.Approved {
		t.Fatalf("third: %+v, %v", r.d, r.err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#hist-e2e-deny`))); err != nil {
		t.Fatal(err)
	}
	if png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
		t.Fatal(err)
	}
	artifact(t, "history.png", png)
	t.Logf("browser end-to-end took %s", time.Since(start).Round(time.Millisecond))
}
