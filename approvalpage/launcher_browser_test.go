package approvalpage

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe/internal/browsertest"
	"github.com/mcpsafe/mcpsafe/plan"
)

// The person's browser, given only what the opener is given (the launcher
// file's address), lands on the call's page, and Approve there approves
// the call; the page says the waiting call runs now. In real Chromium,
// with a screenshot.
func TestBrowserOpensThePageThroughTheLauncher(t *testing.T) {
	seenFile := spyBrowser(t)
	runtimeDir(t)
	p, _ := defaultPage(t)
	ctx := browsertest.New(t, 1100, 800)
	r := request("launcher", time.Now().Add(5*time.Minute))
	r.Audience = "mcpsafe-files"
	r.PageOnly = &plan.PageOnly{Title: `What would be lost: "notes/launcher.txt", first lines`, Lines: []string{"Shopping list", "- milk", "- bread"}}
	actx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := make(chan outcome, 1)
	go func() { d, err := p.Approve(actx, r); out <- outcome{d, err} }()
	seen := waitFile(t, seenFile)
	var fileURL string
	for _, w := range strings.Fields(seen) {
		if strings.HasPrefix(w, "file://") {
			fileURL = w
		}
	}
	if fileURL == "" {
		t.Fatalf("the opener got no file:// address: %s", seen)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(fileURL), chromedp.WaitVisible(chromedp.CSS(`button.approve`))); err != nil {
		t.Fatal(err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil || !strings.Contains(title, "mcpsafe-files") || !strings.HasSuffix(title, "mcpsafe") {
		t.Fatalf("the page's title: %q (%v)", title, err)
	}
	lost, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`pre.page-only`)))
	if err != nil || !strings.Contains(lost, "- bread") {
		t.Fatalf("what would be lost: %q (%v)", lost, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Artifact(t, "approval-page-delete-what-would-be-lost.png", png)
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil || !strings.HasPrefix(loc, p.URL()+"/a/") {
		t.Fatalf("the launcher led to %q (%v)", loc, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button.approve`)), chromedp.WaitVisible(chromedp.CSS(`p.state.approved`))); err != nil {
		t.Fatal(err)
	}
	if o := <-out; o.err != nil || !o.dec.Approved {
		t.Fatalf("approved in the browser: %+v %v", o.dec, o.err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
	if err != nil || !strings.Contains(body, "runs now") {
		t.Fatalf("the approved page: %q (%v)", body, err)
	}
	png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Artifact(t, "approval-page-approved-runs-now.png", png)
}
