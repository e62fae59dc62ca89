package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
)

// ts2ClientDir is the TypeScript SDK 2.x client package (scripts/npm-deps).
func ts2ClientDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../../.cache/npm/node_modules/@modelcontextprotocol/client")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, "dist", "index.mjs"))
	}
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		msg := "!!! node or @modelcontextprotocol/client 2.x is not installed (run scripts/npm-deps): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// The page's URL mode on the 2026-07-28 protocol, with the TypeScript SDK
// 2.x client against the built `mcpsafe files`: the link arrives as an
// input_required result's URL request; the client's "accept" (and its
// retry with the sealed requestState) runs nothing; Approve in Chromium
// runs the call once, journaled at the page's level.
func TestApprovalPageURLModeTS2(t *testing.T) {
	dir := ts2ClientDir(t)
	root, jpath := pageRoot(t)
	server := []string{binary, "files", "--root", root, "--journal", jpath, "--approval-page", "127.0.0.1:0"}
	n := startNodeScript(t, "testdata/ts2-page.mjs", server, "CLIENT_DIR="+dir, "TARGET=notes.txt")
	if c := n.step("connected"); c["protocol"] != "2026-07-28" {
		t.Fatalf("the client negotiated %v, not 2026-07-28", c["protocol"])
	}
	el := n.step("elicit")
	link, _ := el["url"].(string)
	if el["mode"] != "url" || !strings.HasPrefix(link, "http://127.0.0.1:") {
		t.Fatalf("elicitation %v", el)
	}
	time.Sleep(300 * time.Millisecond) // the retry after "accept" reaches the server
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); err != nil {
		t.Fatal("the file went on the client's accept alone")
	}
	approveInBrowser(t, link, "approval-page-ts2-url-mode.png")
	if isErr, sc := resultOf(n.step("result")); isErr {
		t.Fatalf("after the approval: %v", sc)
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("approved on the page, but the file is still there: %v", err)
	}
	if r := pageApproved(t, jpath); r.Assurance != "local_page" {
		t.Fatalf("journal %+v", r)
	}
	if got, _ := countDecisions(t, jpath, "executed"); got != 1 {
		t.Fatalf("executed %d times, want once", got)
	}
}

// The client accepts and nobody uses the page: when the approval expires
// the call ends refused, and nothing ran. Both generations: the 1.x client
// on 2025-11-25 (the elicitation in the call), the 2.x client on
// 2026-07-28 (input_required, then the retry waits).
func TestApprovalPageURLModeAcceptAloneExpires(t *testing.T) {
	for _, c := range []struct{ name, script, env string }{
		{"ts1-2025-11-25", "testdata/ts-page.mjs", "ELICIT=url"},
		{"ts2-2026-07-28", "testdata/ts2-page.mjs", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := []string{"TARGET=notes.txt", "HOLD=1", c.env}
			if c.env == "" {
				env = []string{"TARGET=notes.txt", "HOLD=1", "CLIENT_DIR=" + ts2ClientDir(t)}
			}
			root, jpath := pageRoot(t)
			server := []string{binary, "files", "--root", root, "--journal", jpath, "--approval-page", "127.0.0.1:0", "--ttl", "3s"}
			n := startNodeScript(t, c.script, server, env...)
			el := n.step("elicit")
			link, _ := el["url"].(string)
			if el["mode"] != "url" || link == "" {
				t.Fatalf("elicitation %v", el)
			}
			res := n.step("result")
			if isErr, sc := resultOf(res); !isErr || sc["status"] != "refused" {
				t.Fatalf("accept alone, page unused: %v", res)
			}
			// The link after expiry: no button, and a forged click is refused.
			n.step("holding")
			defer n.proceed()
			html, form, err := pagetest.Open(link)
			if err != nil || form != "" || !strings.Contains(html, "nothing runs") {
				t.Fatalf("the link after expiry offers a decision (form %q, %v): %s", form, err, html)
			}
			if code, _, err := pagetest.Click(link, "x", "approve"); err != nil || code == http.StatusOK {
				t.Fatalf("a click after expiry: %d %v", code, err)
			}
			if _, err := os.Stat(filepath.Join(root, "notes.txt")); err != nil {
				t.Fatal("the file went without a decision on the page")
			}
			if got, _ := countDecisions(t, jpath, "executed"); got != 0 {
				t.Fatalf("executed %d times", got)
			}
		})
	}
}
