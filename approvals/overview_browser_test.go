package approvals

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserOverview opens the overview in a real chromium after a
// scripted set of decisions and a gate's day in its journal: the numbers
// on the page are the scripted ones, and clicking a bar of the chart
// (an SVG link) lists exactly the records that bar counts.
func TestBrowserOverview(t *testing.T) {
	ctx := newChromium(t)
	g := openGateJournal(t)
	scriptJournal(g, time.Now())
	e := newEnv(t, ServiceOptions{Store: "file:" + filepath.Join(t.TempDir(), "approvals.db"), Journals: []string{g.path}})
	scriptDecisions(t, e)
	browserLogin(t, ctx, e.srv.URL, "alice")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`header a[href="/overview"]`)), chromedp.WaitVisible(chromedp.CSS(`#chart-decisions svg`))); err != nil {
		t.Fatalf("opening the overview from the approvals page: %v", err)
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	if got := text(`#pending-now`); got != "1" {
		t.Errorf("waiting now shows %q, want 1", got)
	}
	if got := text(`#ttd-n`); got != "3" {
		t.Errorf("time to decision over %q decisions, want 3", got)
	}
	for k, v := range wantDecisions {
		if got := text(`#numbers-decisions td[data-total="` + k + `"]`); got != strconv.Itoa(v) {
			t.Errorf("decisions %s shows %q, want %d", k, got, v)
		}
	}
	for k, v := range wantJournal {
		id := "#numbers-outcomes"
		if k == kindGrantUsed {
			id = "#numbers-grants"
		}
		if got := text(id + ` td[data-total="` + k + `"]`); got != strconv.Itoa(v) {
			t.Errorf("journal %s shows %q, want %d", k, got, v)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "overview.png", png)

	// The refused part of the outcomes chart: its tooltip says how many;
	// clicking it lists that many records, each a refusal.
	bar := `#chart-outcomes svg a.seg[data-key="refused"] rect`
	n, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#chart-outcomes svg a.seg[data-key="refused"]').getAttribute("data-n")`))
	if err != nil || n != "3" {
		t.Errorf("the refused bar counts %q (%v), want 3", n, err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(bar)), chromedp.WaitVisible(chromedp.CSS(`#record-count`))); err != nil {
		t.Fatalf("following the chart's link: %v", err)
	}
	if got := text(`#record-count`); got != n {
		t.Errorf("the record view lists %q records, the bar counts %s", got, n)
	}
	decisions, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("tr.rec td:nth-child(6)")).map(td => td.textContent)`))
	if err != nil {
		t.Fatal(err)
	}
	if len(decisions) != 3 || strings.Count(strings.Join(decisions, ","), "refused") != 2 || strings.Count(strings.Join(decisions, ","), "declined") != 1 {
		t.Errorf("listed decisions %v, want 2 refused and 1 declined", decisions)
	}
	if png, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
		t.Fatal(err)
	}
	artifact(t, "overview-records.png", png)
}
