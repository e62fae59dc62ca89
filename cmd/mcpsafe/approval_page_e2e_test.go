package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/internal/browsertest"
	"github.com/mcpsafe/mcpsafe/journal"
)

// The README's first recipe for clients that cannot ask anyone (Claude
// Desktop, claude.ai, Gemini CLI): `mcpsafe files --approval-page
// 127.0.0.1:0`. Real parts only: the built binary over stdio, the
// TypeScript SDK client, and headless Chromium clicking the page's
// Approve button. Screenshots go to testdata/artifacts.

// pageRoot is a root holding one file, and the journal beside it.
func pageRoot(t *testing.T) (root, journalPath string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "root")
	must(t, os.MkdirAll(root, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("keep me?\n"), 0o644))
	return root, filepath.Join(dir, "journal.jsonl")
}

// approveInBrowser opens link in Chromium, screenshots the page, clicks
// Approve and waits for the page to say so, with no button left.
func approveInBrowser(t *testing.T, link, shot string) {
	t.Helper()
	ctx := browsertest.New(t, 1280, 900)
	must(t, chromedp.Do(ctx, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`button.approve`))))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must(t, err)
	browsertest.Artifact(t, shot, png)
	must(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`button.approve`)), chromedp.WaitVisible(chromedp.CSS(`p.state.approved`))))
	body, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`body`)))
	must(t, err)
	if !strings.Contains(body, "Approved") {
		t.Fatalf("after the click the page says: %s", body)
	}
	// The page answered with the decision and no buttons (a second
	// visit is not possible here: the client ends, and the server with it).
	buttons, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("button").length`))
	must(t, err)
	if buttons != 0 {
		t.Fatalf("the decided page still offers %d buttons", buttons)
	}
}

func pageApproved(t *testing.T, journalPath string) journal.Record {
	t.Helper()
	for _, r := range readJournalFile(t, journalPath) {
		if r.Decision == journal.PageApproved {
			return r
		}
		if r.Decision == journal.ClientAccepted {
			t.Fatalf("the journal says client-accepted: %+v", r)
		}
	}
	t.Fatalf("no page-approved record in %s", journalPath)
	return journal.Record{}
}

// A client that declares URL-mode elicitation is sent the page's link;
// its "accept" alone runs nothing; the click in the browser runs the call
// once, journaled at the local page's assurance.
func TestApprovalPageByURLElicitation(t *testing.T) {
	root, jpath := pageRoot(t)
	server := []string{binary, "files", "--root", root, "--journal", jpath, "--approval-page", "127.0.0.1:0"}
	n := startNodeScript(t, "testdata/ts-page.mjs", server, "TARGET=notes.txt", "ELICIT=url")
	el := n.step("elicit")
	link, _ := el["url"].(string)
	if el["mode"] != "url" || !strings.HasPrefix(link, "http://127.0.0.1:") {
		t.Fatalf("elicitation %v", el)
	}
	// The client accepted (it only agreed to open the page): nothing ran.
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); err != nil {
		t.Fatal("the file went on the client's accept alone")
	}
	approveInBrowser(t, link, "approval-page-url-elicitation.png")
	// The server tells the client the elicitation is complete, then
	// answers the call.
	if c := n.step("complete"); c["id"] != el["id"] {
		t.Fatalf("completion %v for elicitation %v", c, el)
	}
	res := n.step("result")
	if isErr, sc := resultOf(res); isErr {
		t.Fatalf("after the approval: %v", sc)
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("approved on the page, but the file is still there: %v", err)
	}
	if r := pageApproved(t, jpath); r.Assurance != "local_page" {
		t.Fatalf("journal %+v", r)
	}
}

// A client that cannot elicit: the server opens the page with $BROWSER
// (here a script that hands the link to the test), and the click there
// runs the call. Without --approval-page the refusal says what to set.
func TestApprovalPageOpensTheBrowser(t *testing.T) {
	root, jpath := pageRoot(t)
	dir := t.TempDir()
	got := filepath.Join(dir, "link")
	browser := filepath.Join(dir, "browser")
	must(t, os.WriteFile(browser, []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+got+".tmp && mv "+got+".tmp "+got+"\n"), 0o755))

	// The control first: no page configured, the refusal names the flag.
	n := startNodeScript(t, "testdata/ts-page.mjs", []string{binary, "files", "--root", root, "--journal", jpath}, "TARGET=notes.txt", "ELICIT=none")
	res := n.step("result")
	r, _ := res["result"].(map[string]any)
	if isErr, sc := resultOf(res); !isErr || sc["reason"] != "elicitation_unsupported" || !strings.Contains(textOfResult(r), "--approval-page 127.0.0.1:0") {
		t.Fatalf("without a page: %v", res)
	}

	server := []string{binary, "files", "--root", root, "--journal", jpath, "--approval-page", "127.0.0.1:0"}
	n = startNodeScript(t, "testdata/ts-page.mjs", server, "TARGET=notes.txt", "ELICIT=none", "BROWSER="+browser)
	var link string
	waitFor(t, "the browser opened", func() bool {
		if b, err := os.ReadFile(got); err == nil {
			link = string(b)
		}
		return link != ""
	})
	approveInBrowser(t, link, "approval-page-browser.png")
	if isErr, sc := resultOf(n.step("result")); isErr {
		t.Fatalf("after the approval: %v", sc)
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("approved on the page, but the file is still there: %v", err)
	}
	if r := pageApproved(t, jpath); r.Assurance != "local_page" {
		t.Fatalf("journal %+v", r)
	}
}

func textOfResult(r map[string]any) string {
	var b strings.Builder
	content, _ := r["content"].([]any)
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// The same through `mcpsafe proxy` in front of the real npm filesystem
// server, and through a gateway of it: write_file is asked on the page by
// URL elicitation, and runs once on the click.
func TestApprovalPageThroughProxyAndGateway(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	for _, via := range []string{"proxy", "gateway"} {
		t.Run(via, func(t *testing.T) {
			data := t.TempDir()
			dir := t.TempDir()
			jpath := filepath.Join(dir, "journal.jsonl")
			server := []string{binary, "proxy", "--journal", jpath, "--approval-page", "127.0.0.1:0"}
			tool := "write_file"
			if via == "proxy" {
				// The repository's example policy: the page shows the
				// effect (a new file, its lines) that the upstream read.
				policy, err := filepath.Abs("../../proxy/testdata/example-policy.yaml")
				must(t, err)
				server = append(server, "--policy", policy, "--", fsBin, data)
			} else {
				cfg := filepath.Join(dir, "gateway.yaml")
				must(t, os.WriteFile(cfg, []byte("servers:\n  fs:\n    command: [\""+fsBin+"\", \""+data+"\"]\n"), 0o644))
				server = append(server, "--config", cfg)
				tool = "fs__write_file"
			}
			target := filepath.Join(data, "hello.txt")
			n := startNodeScript(t, "testdata/ts-page.mjs", server, "TOOL="+tool,
				`ARGS={"path":"`+target+`","content":"written after a click\n"}`, "ELICIT=url")
			el := n.step("elicit")
			link, _ := el["url"].(string)
			if el["mode"] != "url" || !strings.HasPrefix(link, "http://127.0.0.1:") {
				t.Fatalf("elicitation %v", el)
			}
			if _, err := os.Stat(target); !os.IsNotExist(err) {
				t.Fatal("written on the client's accept alone")
			}
			approveInBrowser(t, link, "approval-page-"+via+"-write-file.png")
			n.step("complete")
			if isErr, sc := resultOf(n.step("result")); isErr {
				t.Fatalf("after the approval: %v", sc)
			}
			if b, err := os.ReadFile(target); err != nil || string(b) != "written after a click\n" {
				t.Fatalf("the file after the approval: %q %v", b, err)
			}
			if r := pageApproved(t, jpath); r.Assurance != "local_page" {
				t.Fatalf("journal %+v", r)
			}
		})
	}
}

// An edit_file through the proxy with the example policy: the page shows
// the server's own dry-run diff (the screenshot is the "after" of a
// proxied edit that used to read as escaped JSON).
func TestApprovalPageShowsAProxiedEdit(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	data, dir := t.TempDir(), t.TempDir()
	target := filepath.Join(data, "notes.txt")
	must(t, os.WriteFile(target, []byte("line one\nline two\nline three\n"), 0o644))
	policy, err := filepath.Abs("../../proxy/testdata/example-policy.yaml")
	must(t, err)
	jpath := filepath.Join(dir, "journal.jsonl")
	server := []string{binary, "proxy", "--journal", jpath, "--approval-page", "127.0.0.1:0", "--policy", policy, "--", fsBin, data}
	n := startNodeScript(t, "testdata/ts-page.mjs", server, "TOOL=edit_file",
		`ARGS={"path":"`+target+`","edits":[{"oldText":"line two","newText":"line 2 (edited by agent)"}]}`, "ELICIT=url")
	link, _ := n.step("elicit")["url"].(string)
	html, _, err := pagetest.Open(link)
	must(t, err)
	for _, want := range []string{"line two", "line 2 (edited by agent)", `class="dl del"`, `class="dl add"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(html, `\&#34;newText\&#34;`) || strings.Contains(html, `\"newText\"`) {
		t.Error("the page shows the edit as escaped JSON")
	}
	approveInBrowser(t, link, "approval-page-proxy-edit-file.png")
	n.step("complete")
	if isErr, sc := resultOf(n.step("result")); isErr {
		t.Fatalf("after the approval: %v", sc)
	}
	if b, _ := os.ReadFile(target); string(b) != "line one\nline 2 (edited by agent)\nline three\n" {
		t.Fatalf("the file after the approval: %q", b)
	}
}
