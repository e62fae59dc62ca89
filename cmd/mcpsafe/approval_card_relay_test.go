package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe/internal/browsertest"
)

// The card tests' relay under repetition: the host page's real client runs
// MCPSAFE_CARD_STRESS rounds of a card's requests (a fresh session each:
// initialize, tools/list, resources/read, the gated tools/call, DELETE)
// through cardHost's relay to the built binary, and every request must be
// answered within 8 s. 20 rounds by default (a few seconds); set
// MCPSAFE_CARD_STRESS=300 on a loaded machine to hunt a rare loss: before
// the relay read the page's messages whole, a few rounds in a hundred lost
// their answer (docs/TESTING.md).
func TestApprovalCardRelayStress(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("MCPSAFE_CARD_STRESS"))
	if n <= 0 {
		n = 20
	}
	bundle := cardHostBundle(t)
	root, jpath := pageRoot(t)
	must(t, os.WriteFile(filepath.Join(root, "keep.txt"), []byte("keep\n"), 0o644))
	hostURL := cardHost(t, bundle, startMCPHTTP(t, "files", "--root", root, "--journal", jpath, "--http", "127.0.0.1:0"))
	// A browser has 90 seconds (browsertest.New); a round takes well under
	// half a second on a loaded machine, a lost answer 8 s: 100 rounds a
	// browser.
	for done := 0; done < n; done += 100 {
		rounds := min(100, n-done)
		ctx := browsertest.New(t, 900, 1000)
		must(t, chromedp.Do(ctx, chromedp.Navigate(hostURL)))
		failed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string]("host.stress("+strconv.Itoa(rounds)+", 8000)", chromedp.EvalAwaitPromise))
		must(t, err)
		for _, f := range failed {
			t.Error(f)
		}
		t.Logf("%d rounds, %d failed", rounds, len(failed))
	}
}
