package main

import (
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/internal/browsertest"
)

// linkCatcher is a $BROWSER script that hands what it is asked to open
// (the launcher file's file:// address: the link is never on a command
// line) to the test, and the way to read the link the launcher leads to,
// as the person's browser would.
func linkCatcher(t *testing.T) (browser string, link func() string) {
	t.Helper()
	dir := t.TempDir()
	got := filepath.Join(dir, "link")
	browser = filepath.Join(dir, "browser")
	must(t, os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+got+".tmp && mv "+got+".tmp "+got+"\n"), 0o755))
	return browser, func() string {
		var b []byte
		waitFor(t, "the browser opened", func() bool { var err error; b, err = os.ReadFile(got); return err == nil })
		os.Remove(got)
		launcher, err := os.ReadFile(strings.TrimPrefix(string(b), "file://"))
		if err != nil {
			t.Fatalf("the browser was given %q, not a launcher file: %v", b, err)
		}
		m := regexp.MustCompile(`content="0;url=([^"]+)"`).FindSubmatch(launcher)
		if m == nil {
			t.Fatalf("the launcher file has no link: %s", launcher)
		}
		return html.UnescapeString(string(m[1]))
	}
}

// The passkey recipe end to end, with the built binary: the person runs
// `mcpsafe approval-page enroll` and registers a passkey in the browser
// (Chromium with a virtual authenticator); `mcpsafe files
// --approval-page-passkeys` then sends a TypeScript client's delete_file to
// the page by URL elicitation; a plain click there is refused and runs
// nothing; Approve with the passkey runs it, journaled at passkey level.
func TestApprovalPagePasskeyRecipe(t *testing.T) {
	ctx := browsertest.New(t, 1280, 1000)
	browsertest.VirtualAuthenticator(t, ctx)
	browser, link := linkCatcher(t)
	passkeys := filepath.Join(t.TempDir(), "page-passkeys.json")

	enroll := exec.Command(binary, "approval-page", "enroll", "--passkeys", passkeys, "--name", "ada")
	enroll.Env = append(os.Environ(), "BROWSER="+browser)
	var out strings.Builder
	enroll.Stdout, enroll.Stderr = &out, &out
	must(t, enroll.Start())
	done := make(chan error, 1)
	go func() { done <- enroll.Wait() }()
	enrolLink := link()
	must(t, chromedp.Do(ctx, chromedp.Navigate(enrolLink), chromedp.Click(chromedp.CSS("#register")), chromedp.WaitVisible(chromedp.CSS("#status"))))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("enroll: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		enroll.Process.Kill()
		t.Fatalf("enroll did not end after the registration:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "passkey") || !strings.Contains(out.String(), enrolLink) {
		t.Fatalf("enroll's terminal output: %s", out.String())
	}

	root, jpath := pageRoot(t)
	server := []string{binary, "files", "--root", root, "--journal", jpath, "--approval-page", "127.0.0.1:0", "--approval-page-passkeys", passkeys}
	n := startNodeScript(t, "testdata/ts-page.mjs", server, "TARGET=notes.txt", "ELICIT=url")
	el := n.step("elicit")
	page, _ := el["url"].(string)
	if el["mode"] != "url" || !strings.HasPrefix(page, "http://localhost:") {
		t.Fatalf("elicitation %v", el)
	}
	// A click without the passkey (what an agent with a browser tool can
	// do) is refused.
	if err := pagetest.Decide(page, "approve"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a plain click: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); err != nil {
		t.Fatal("the file went on a plain click")
	}
	must(t, chromedp.Do(ctx, chromedp.Navigate(page), chromedp.Click(chromedp.CSS(`button.approve`)), chromedp.WaitVisible(chromedp.CSS(`p.state.approved`))))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must(t, err)
	browsertest.Artifact(t, "approval-page-passkey-recipe.png", png)
	if isErr, sc := resultOf(n.step("result")); isErr {
		t.Fatalf("after the passkey approval: %v", sc)
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("approved with the passkey, but the file is still there: %v", err)
	}
	if r := pageApproved(t, jpath); r.Assurance != "passkey" || r.By != "ada" || len(r.Evidence) == 0 {
		t.Fatalf("journal %+v", r)
	}
	// An auditor re-checks the assertion with the passkeys file.
	verify := exec.Command(binary, "journal", "verify", jpath, "--page-passkeys", passkeys)
	got, err := verify.CombinedOutput()
	if err != nil || !strings.Contains(string(got), "1 passkey approvals on the approval page carry a valid assertion") {
		t.Fatalf("journal verify --page-passkeys: %v\n%s", err, got)
	}
	// Control: another passkeys file (no such key) does not vouch for it.
	other := filepath.Join(t.TempDir(), "other.json")
	must(t, os.WriteFile(other, []byte(`{"rp_id":"localhost","origin":"http://localhost:1","passkeys":[{"approver":"ada","credential_id":"b3RoZXI","public_key":"cHVi"}]}`), 0o600))
	if got, err := exec.Command(binary, "journal", "verify", jpath, "--page-passkeys", other).CombinedOutput(); err == nil {
		t.Fatalf("journal verify with a file that lacks the key passed:\n%s", got)
	}
}
