package approvalpage

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/internal/browsertest"
)

// A link opened again after its call was decided (approved, or denied)
// says plainly that it was decided, how and when, and offers no button; a
// link the page does not know says so in a page a person can read, naming
// no request. In real Chromium, with screenshots.
func TestDecidedLinkSaysAlreadyDecided(t *testing.T) {
	h := newHarness(t)
	ctx := browsertest.New(t, 1100, 800)
	for _, decision := range []string{"approve", "deny"} {
		r := request("decided-"+decision, h.clk.Now().Add(5*60e9))
		out := h.await(t, r)
		link := h.openedLink(t)
		if err := pagetest.Decide(link, decision); err != nil {
			t.Fatal(err)
		}
		o := <-out
		if (decision == "approve") != o.dec.Approved {
			t.Fatalf("%s: decision %+v %v", decision, o.dec, o.err)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`p.state[role=status]`))); err != nil {
			t.Fatal(err)
		}
		body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"approve": "Already decided: approved", "deny": "Already decided: denied; nothing runs"}[decision]
		if !strings.Contains(body, want) || !strings.Contains(body, "decides nothing more") || strings.Contains(body, "The call runs once") {
			t.Fatalf("%s, opened again: %q", decision, body)
		}
		buttons, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("button").length`))
		if err != nil || buttons != 0 {
			t.Fatalf("the decided page offers %d buttons (%v)", buttons, err)
		}
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		browsertest.Artifact(t, "approval-page-already-"+decision+"d.png", png)
	}

	// A link the page never issued.
	if err := chromedp.Do(ctx, chromedp.Navigate(h.URL()+"/a/not-a-link"), chromedp.WaitVisible(chromedp.CSS(`p.state[role=status]`))); err != nil {
		t.Fatal(err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
	if err != nil || !strings.Contains(body, "Nothing can be approved with it") {
		t.Fatalf("an unknown link: %q (%v)", body, err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Artifact(t, "approval-page-unknown-link.png", png)
}
