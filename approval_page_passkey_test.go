package mcpsafe_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approvalpage"
	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/internal/browsertest"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// passkeyBrowser is a real Chromium with a DevTools virtual authenticator
// (CTAP2, internal, resident keys, user verification), and a passkey the
// person enrolled in it through approvalpage.Enroll's page, stored in a
// passkeys file.
type passkeyBrowser struct {
	ctx  context.Context
	auth webauthn.AuthenticatorID
	file string
}

func newPasskeyBrowser(t *testing.T) *passkeyBrowser {
	t.Helper()
	ctx := browsertest.New(t, 1100, 1200)
	pb := &passkeyBrowser{ctx: ctx, auth: browsertest.VirtualAuthenticator(t, ctx), file: filepath.Join(t.TempDir(), "page-passkeys.json")}

	links := make(chan string, 1)
	done := make(chan error, 1)
	ectx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		_, err := approvalpage.Enroll(ectx, approvalpage.EnrollOptions{File: pb.file, Name: "ada",
			Open: func(link string) error { links <- link; return nil }})
		done <- err
	}()
	link := receive(t, links, "the enrolment link")
	if !strings.HasPrefix(link, "http://localhost:") {
		t.Fatalf("the enrolment page is not on localhost (WebAuthn takes no IP address): %s", link)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(link), chromedp.Click(chromedp.CSS("#register")),
		chromedp.WaitVisible(chromedp.CSS("#status"))); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Artifact(t, "approval-page-passkey-enrolled.png", shot)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Enroll: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Enroll did not return after the registration")
	}
	return pb
}

func (pb *passkeyBrowser) userVerified(t *testing.T, ok bool) {
	t.Helper()
	browsertest.UserVerified(t, pb.ctx, pb.auth, ok)
}

// assertionFor has the authenticator sign the call shown at link (its own
// request options) without submitting the page: what a replay would carry.
func (pb *passkeyBrowser) assertionFor(t *testing.T, link string) string {
	t.Helper()
	js := `navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(JSON.parse(document.querySelector('form[data-passkey]').dataset.passkey))}).then(c => JSON.stringify(c.toJSON()))`
	if err := chromedp.Do(pb.ctx, chromedp.Navigate(link)); err != nil {
		t.Fatal(err)
	}
	out, err := chromedp.Run(pb.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// postWithAssertion posts Approve to link with the page's form token and
// an assertion, from the page's own origin.
func postWithAssertion(t *testing.T, link, assertion string) int {
	t.Helper()
	return postWithForm(t, link, formOf(t, link), assertion)
}

func formOf(t *testing.T, link string) string {
	t.Helper()
	_, form, err := pagetest.Open(link)
	if err != nil || form == "" {
		t.Fatalf("open %s: %v (form %q)", link, err, form)
	}
	return form
}

func postWithForm(t *testing.T, link, form, assertion string) int {
	t.Helper()
	u, _ := url.Parse(link)
	req, _ := http.NewRequest(http.MethodPost, link, strings.NewReader(url.Values{"form": {form}, "decision": {"approve"}, "assertion": {assertion}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", u.Scheme+"://"+u.Host)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

func stillWaiting(t *testing.T, res <-chan *mcp.CallToolResult, what string) {
	t.Helper()
	select {
	case r := <-res:
		t.Fatalf("%s: the call ended: %v", what, text(r))
	case <-time.After(300 * time.Millisecond):
	}
}

// A tool whose minimum is the passkey level, on a page with a registered
// passkey: a plain click is refused, an assertion made for another call is
// refused, an assertion without user verification approves nothing, and
// Approve in the browser with a user-verified assertion over that call runs
// it, journaled at the passkey level with the assertion as evidence.
func TestPageWithPasskeyTakesOnlyAnAssertionOverThatCall(t *testing.T) {
	pb := newPasskeyBrowser(t)
	reg, err := approvalpage.LoadPasskeys(pb.file)
	if err != nil {
		t.Fatal(err)
	}
	obs := &approvals{}
	pe := &pageEnv{opened: make(chan string, 8)}
	pe.env = newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		p, err := approvalpage.Listen(approvalpage.Options{Addr: "127.0.0.1:0", Clock: o.Clock, Passkeys: reg,
			Open: func(link string) error { pe.opened <- link; return nil }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		o.Page = p
		o.TTL, o.ChannelWait = time.Minute, 30*time.Second
		o.Observer = obs
		(*tools)[0].MinAssurance = mcpsafe.AssurancePasskey
	})
	cs := pe.pageClient(t, "2025-11-25", false, false, "", nil, nil)
	resA := callAsync(t, cs, "thesis.txt")
	linkA := receive(t, pe.opened, "the browser opening call A's page")
	resB := callAsync(t, cs, "todo.txt")
	linkB := receive(t, pe.opened, "the browser opening call B's page")
	if !strings.HasPrefix(linkA, "http://localhost:") {
		t.Fatalf("a page with passkeys is not on localhost: %s", linkA)
	}

	// A click alone (what an agent with a browser tool, or a form POST,
	// can do) is refused and decides nothing.
	if err := pagetest.Decide(linkA, "approve"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("a plain click on a passkey page: %v", err)
	}
	stillWaiting(t, resA, "after a plain click")

	// An assertion over call A does not approve call B.
	asA := pb.assertionFor(t, linkA)
	if code := postWithAssertion(t, linkB, asA); code != http.StatusForbidden {
		t.Fatalf("call A's assertion on call B's page: %d", code)
	}
	stillWaiting(t, resB, "after A's assertion on B")

	// Without user verification: nothing is approved.
	pb.userVerified(t, false)
	if err := chromedp.Do(pb.ctx, chromedp.Navigate(linkA), chromedp.Click(chromedp.Search(`//button[normalize-space()="Approve"]`)),
		chromedp.WaitVisible(chromedp.Search(`//p[@id="passkey-status"][starts-with(normalize-space(), "Not approved")] | //p[contains(@class, "state")]`))); err != nil {
		t.Fatal(err)
	}
	status, err := chromedp.Run(pb.ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(status, "Not approved") {
		t.Fatalf("no user verification, the page says: %q", status)
	}
	stillWaiting(t, resA, "after an assertion without user verification")

	// The person: Approve, the passkey verifies them, the call runs once.
	pb.userVerified(t, true)
	formA := formOf(t, linkA)
	if err := chromedp.Do(pb.ctx, chromedp.Navigate(linkA), chromedp.Click(chromedp.Search(`//button[normalize-space()="Approve"]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.state.approved`))); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(pb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	browsertest.Artifact(t, "approval-page-passkey-approved.png", shot)
	wantExecuted(t, receive2(t, resA))
	if pe.notes.has("thesis.txt") || pe.notes.executions() != 1 {
		t.Fatalf("thesis.txt not deleted exactly once (%d runs)", pe.notes.executions())
	}
	var rec journal.Record
	for _, r := range pe.journal.records() {
		if r.Decision == journal.PageApproved {
			rec = r
		}
	}
	if rec.Assurance != "passkey" || rec.By != "ada" || len(rec.Evidence) == 0 {
		t.Fatalf("journal: decision %q assurance %q by %q evidence %d bytes; want page-approved, passkey, ada, the assertion", rec.Decision, rec.Assurance, rec.By, len(rec.Evidence))
	}
	// An auditor with the page's passkeys file re-checks the record; the
	// same evidence on a record of another call, arguments or approver
	// does not check.
	if err := reg.CheckPageRecord(rec); err != nil {
		t.Fatalf("the journaled assertion does not re-check: %v", err)
	}
	for name, tamper := range map[string]func(*journal.Record){
		"another call":      func(r *journal.Record) { r.Call = "another" },
		"other arguments":   func(r *journal.Record) { r.ArgsDigest = strings.Repeat("0", 64) },
		"another approver":  func(r *journal.Record) { r.By = "mallory" },
		"another tool":      func(r *journal.Record) { r.Tool = "rename_note" },
		"a click, relabled": func(r *journal.Record) { r.Assurance = "local_page" },
	} {
		bad := rec
		tamper(&bad)
		if err := reg.CheckPageRecord(bad); err == nil {
			t.Errorf("the evidence re-checks on %s", name)
		}
	}
	if got := obs.list(); len(got) != 1 || got[0] != "delete_note page-approved passkey" {
		t.Fatalf("the observer (metrics) was told %q", got)
	}
	// A's own assertion, replayed after the decision, changes nothing.
	if code := postWithForm(t, linkA, formA, asA); code != http.StatusConflict {
		t.Fatal("a replayed assertion on a decided page was taken")
	}
	if err := pagetest.Decide(linkB, "deny"); err != nil {
		t.Fatal(err)
	}
	if r := receive2(t, resB); !r.IsError && structured(t, r)["status"] == nil {
		t.Fatalf("denied call B ran: %v", text(r))
	}
	if pe.notes.executions() != 1 {
		t.Fatal("the denied call ran")
	}
}

// Without a passkey, the page reaches only the local-page level: a tool
// whose minimum is the passkey cannot be registered where the page is its
// only path.
func TestPasskeyMinimumNeedsAPageWithPasskeys(t *testing.T) {
	p, err := approvalpage.Listen(approvalpage.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	g, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: journal.Discard, Page: p})
	if err != nil {
		t.Fatal(err)
	}
	tool := newNotes("x").deleteTool()
	tool.MinAssurance = mcpsafe.AssurancePasskey
	if err := g.Register(mcp.NewServer(&mcp.Implementation{Name: "s"}, nil), tool); err == nil || !strings.Contains(err.Error(), "reaches only local_page") {
		t.Fatalf("a passkey minimum on a page without passkeys: %v", err)
	}
}

// approvals is an Observer that keeps what Approved was told (metrics'
// mcpsafe_approvals_total labels).
type approvals struct {
	mu  sync.Mutex
	got []string
}

func (a *approvals) CallDone(string, string, string)     {}
func (a *approvals) HumanDecision(string, time.Duration) {}
func (a *approvals) Approved(tool, decision, assurance string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, tool+" "+decision+" "+assurance)
}
func (a *approvals) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.got...)
}

// lyingPage is a Page that claims a passkey decision while its own level
// is a click: the gate must not take it above what the page proves.
type lyingPage struct{ approver.Page }

func (lyingPage) Approve(context.Context, approver.Request) (approver.Decision, error) {
	return approver.Decision{Approved: true, Assurance: mcpsafe.AssurancePasskey, Approvers: []string{"mallory"}}, nil
}
func (lyingPage) Awaiter() approver.Awaiter             { return nil }
func (lyingPage) Withdrawer() approver.Withdrawer       { return nil }
func (lyingPage) Link(approver.Request) (string, error) { return "", errors.New("no link") }
func (lyingPage) Assurance() mcpsafe.Assurance          { return mcpsafe.AssuranceLocalPage }

// A page's decision counts at most at the page's own level: one without
// passkeys that reports a passkey approval is taken as nothing better than
// a relayed answer, and a tool whose minimum is the page's level is
// refused. Control: the same lie from a page whose level is the passkey's
// runs (the gate trusts the page it was given up to that page's level).
func TestPageDecisionNeverAbovePagesLevel(t *testing.T) {
	for _, c := range []struct {
		name  string
		level mcpsafe.Assurance
		runs  bool
	}{{"page without passkeys", mcpsafe.AssuranceLocalPage, false}, {"page with passkeys", mcpsafe.AssurancePasskey, true}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Page, o.Mode = levelPage{lyingPage{}, c.level}, mcpsafe.ModePage
				(*tools)[0].MinAssurance = mcpsafe.AssuranceLocalPage
			})
			cs := e.connect(client{protocol: "2025-11-25"})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"path": "thesis.txt"}})
			if err != nil {
				t.Fatal(err)
			}
			if c.runs {
				wantExecuted(t, res)
				return
			}
			if !res.IsError || structured(t, res)["reason"] != mcpsafe.ReasonAssuranceTooLow || e.notes.executions() != 0 {
				t.Fatalf("a page without passkeys vouched for a passkey: %s", text(res))
			}
		})
	}
}

type levelPage struct {
	lyingPage
	level mcpsafe.Assurance
}

func (p levelPage) Assurance() mcpsafe.Assurance { return p.level }
