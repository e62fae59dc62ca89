package approvals

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe/journal"
)

// After a decision the card on the approval page says what was decided, by
// whom and when (not "0 of 1 needed"), and, from the gate's journal (the
// overview's --journal), whether the call ran: "not run yet" until the gate
// journals an outcome, then the outcome. Control: a denied request says
// who denied it, and that its call did not run.
func TestBrowserShowsDecisionAndOutcome(t *testing.T) {
	ctx := newChromium(t)
	jpath := filepath.Join(t.TempDir(), "gate.jsonl")
	j, err := journal.Open(jpath)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	e := newEnv(t, ServiceOptions{Journals: []string{jpath}})
	browserLogin(t, ctx, e.srv.URL, "alice")

	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return s
	}
	waitText := func(sel, want string) string {
		t.Helper()
		read := fmt.Sprintf(`(function(){var e=document.querySelector(%q);return e?e.textContent:"";})()`, sel)
		// Watched in the page, on each change of its DOM.
		got, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`(function(){var s=%s;return s.includes(%q)?s:"";})()`, read, want),
			chromedp.WithPollingMutation(), chromedp.WithPollingTimeout(20*time.Second)))
		if err != nil {
			got, _ = chromedp.Run(ctx, chromedp.Evaluate[string](read))
			t.Fatalf("%s shows %q, want %q (%v)", sel, got, want, err)
		}
		return got
	}

	// Approved: the decision replaces the count at once.
	ch := e.ask(e2eRequest("dec-run"))
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#req-dec-run button.approve`))); err != nil {
		t.Fatal(err)
	}
	if got := text(`#req-dec-run dd.approvals`); !strings.Contains(got, "0 of 1 needed") {
		t.Fatalf("pending card: %q", got)
	}
	press(t, ctx, `#req-dec-run button.approve`)
	if r := wait(t, ch); !r.d.Approved {
		t.Fatalf("approve: %+v %v", r.d, r.err)
	}
	got := waitText(`#req-dec-run dd.approvals`, "Approved by alice at ")
	if strings.Contains(got, "needed") {
		t.Fatalf("after the approval the card says %q", got)
	}
	// Control for the outcome: nothing journaled yet, nothing claimed.
	waitText(`#req-dec-run .call-outcome`, "not run yet")

	// The gate runs the call and journals it under the request's id.
	if err := j.Append(context.Background(), journal.Record{Call: "dec-run", Tool: "delete_file", Decision: journal.Executed}); err != nil {
		t.Fatal(err)
	}
	e.svc.touch("dec-run") // the page refreshes on a change; the journal is read then
	waitText(`#req-dec-run .call-outcome`, "The call ran at ")
	waitText(`#hist-dec-run td.ran`, "The call ran at ")

	// Control: denied, and the gate journals the refusal.
	second := e.ask(e2eRequest("dec-no"))
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#req-dec-no button.deny`))); err != nil {
		t.Fatal(err)
	}
	press(t, ctx, `#req-dec-no button.deny`)
	if r := wait(t, second); r.d.Approved {
		t.Fatal("denied request approved")
	}
	if err := j.Append(context.Background(), journal.Record{Call: "dec-no", Tool: "delete_file", Decision: journal.Refused, Reason: "channel_denied"}); err != nil {
		t.Fatal(err)
	}
	e.svc.touch("dec-no")
	waitText(`#req-dec-no dd.approvals`, "Denied by alice at ")
	waitText(`#req-dec-no .call-outcome`, "The call did not run (channel_denied)")
	if got := text(`#req-dec-run .call-outcome`); !strings.Contains(got, "The call ran") {
		t.Fatalf("the first card lost its outcome: %q", got)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "decided.png", png)
}
