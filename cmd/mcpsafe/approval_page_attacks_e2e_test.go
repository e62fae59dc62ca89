package main

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/journal"
)

// Two calls through the built binary and the TypeScript client, each sent
// to its own page by URL elicitation: call B's form on call A's page and a
// cross-site POST decide nothing; Deny on B runs nothing; Approve on A in
// Chromium runs A once; a second click on A, either button, changes
// nothing. Controls: the same pages, used properly, decide.
func TestApprovalPageCallsDoNotCross(t *testing.T) {
	root, jpath := pageRoot(t)
	must(t, os.WriteFile(filepath.Join(root, "other.txt"), []byte("keep me too\n"), 0o644))
	server := []string{binary, "files", "--root", root, "--journal", jpath, "--approval-page", "127.0.0.1:0"}
	n := startNodeScript(t, "testdata/ts-page.mjs", server, "TARGETS=notes.txt,other.txt", "ELICIT=url", "HOLD=1")
	links := map[string]string{}
	for range 2 {
		el := n.step("elicit")
		msg, _ := el["message"].(string)
		link, _ := el["url"].(string)
		for _, f := range []string{"notes.txt", "other.txt"} {
			if strings.Contains(msg, f) {
				links[f] = link
			}
		}
	}
	linkA, linkB := links["notes.txt"], links["other.txt"]
	if linkA == "" || linkB == "" || linkA == linkB {
		t.Fatalf("links per call: %v", links)
	}
	_, formA, err := pagetest.Open(linkA)
	must(t, err)
	_, formB, err := pagetest.Open(linkB)
	must(t, err)

	// Call B's form on call A's page.
	if code, body, err := pagetest.Click(linkA, formB, "approve"); err != nil || code != http.StatusForbidden {
		t.Fatalf("B's form on A's page: %d %v %s", code, err, body)
	}
	// A cross-site POST with A's own form token.
	req, _ := http.NewRequest(http.MethodPost, linkA, strings.NewReader(url.Values{"form": {formA}, "decision": {"approve"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-site POST: %d", res.StatusCode)
	}
	for _, f := range []string{"notes.txt", "other.txt"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Fatalf("%s went on a forged decision", f)
		}
	}

	// Deny B: nothing runs for it.
	if code, body, err := pagetest.Click(linkB, formB, "deny"); err != nil || code != http.StatusOK {
		t.Fatalf("deny B: %d %v %s", code, err, body)
	}
	results := map[string]map[string]any{}
	r := n.step("result")
	results[r["target"].(string)] = r
	if isErr, sc := resultOf(results["other.txt"]); results["other.txt"] == nil || !isErr || sc["status"] != "refused" {
		t.Fatalf("after Deny on B: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "other.txt")); err != nil {
		t.Fatal("other.txt went although denied")
	}

	// Approve A in the browser: A runs, once.
	approveInBrowser(t, linkA, "approval-page-two-calls-a.png")
	r = n.step("result")
	if r["target"] != "notes.txt" {
		t.Fatalf("result %v", r)
	}
	if isErr, sc := resultOf(r); isErr {
		t.Fatalf("after Approve on A: %v", sc)
	}
	n.step("holding")
	defer n.proceed()
	for _, d := range []string{"approve", "deny"} {
		if code, _, err := pagetest.Click(linkA, formA, d); err != nil || code != http.StatusConflict {
			t.Fatalf("a second click (%s) on A: %d %v", d, code, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("approved on the page, but notes.txt is still there: %v", err)
	}
	if got, _ := countDecisions(t, jpath, journal.Executed); got != 1 {
		t.Fatalf("executed %d times, want once", got)
	}
	if got, _ := countDecisions(t, jpath, journal.ClientAccepted); got != 0 {
		t.Fatalf("the journal says client-accepted %d times", got)
	}
}
