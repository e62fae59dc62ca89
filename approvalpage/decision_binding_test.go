package approvalpage

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
)

type clock struct{ now atomic.Int64 }

func (c *clock) Now() time.Time      { return time.Unix(0, c.now.Load()) }
func (c *clock) Add(d time.Duration) { c.now.Add(int64(d)) }
func newClock(t time.Time) *clock    { c := &clock{}; c.now.Store(t.UnixNano()); return c }
func request(id string, exp time.Time) approver.Request {
	return approver.Request{ID: id, Tool: "delete_file", Summary: "Delete notes/" + id + ".txt (12 bytes)",
		Details: []string{"Irreversible."}, Targets: []mcpsafe.Target{{Name: "notes/" + id + ".txt", State: "12 bytes"}},
		Arguments: []byte(`{"path":"notes/` + id + `.txt"}`), ArgsDigest: "digest-" + id, Principal: "alice",
		Irreversible: true, ExpiresAt: exp}
}

// harness is a page whose "browser" records the links it is asked to open.
type harness struct {
	*Page
	clk   *clock
	links chan string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{clk: newClock(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)), links: make(chan string, 16)}
	p, err := Listen(Options{Addr: "127.0.0.1:0", Clock: h.clk.Now, Open: func(link string) error {
		h.links <- link
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	h.Page = p
	return h
}

// await asks about r in the background; the result arrives on the channel.
type outcome struct {
	dec approver.Decision
	err error
}

func (h *harness) await(t *testing.T, r approver.Request) <-chan outcome {
	t.Helper()
	out := make(chan outcome, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	go func() {
		d, err := h.Approve(ctx, r)
		out <- outcome{d, err}
	}()
	return out
}

// openedLink is the next link the page opened in the "browser".
func (h *harness) openedLink(t *testing.T) string {
	t.Helper()
	select {
	case l := <-h.links:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("the page opened no link")
		return ""
	}
}

var formRE = regexp.MustCompile(`name="form" value="([^"]+)"`)

// page GETs a link and returns its form token ("" when it has no form).
func page(t *testing.T, link string) (string, string) {
	t.Helper()
	res, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %s: %s", link, res.Status, b)
	}
	if m := formRE.FindSubmatch(b); m != nil {
		return string(m[1]), string(b)
	}
	return "", string(b)
}

// post submits a decision as a browser on origin would.
func post(t *testing.T, link, origin, form, decision string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", link, strings.NewReader(url.Values{"form": {form}, "decision": {decision}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func pendingStill(t *testing.T, out <-chan outcome) {
	t.Helper()
	select {
	case o := <-out:
		t.Fatalf("decided without a valid decision: %+v %v", o.dec, o.err)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestApproveOnThePageApprovesThatCallOnce(t *testing.T) {
	h := newHarness(t)
	r := request("a", h.clk.Now().Add(5*time.Minute))
	out := h.await(t, r)
	link := h.openedLink(t)
	form, body := page(t, link)
	for _, want := range []string{"Approve", "Deny", "Delete notes/a.txt (12 bytes)", "irreversible", "Requested by &#34;alice&#34;", `&#34;path&#34;: &#34;notes/a.txt&#34;`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page does not show %q:\n%s", want, body)
		}
	}
	if code, b := post(t, link, h.URL(), form, "approve"); code != 200 || !strings.Contains(b, "Approved") {
		t.Fatalf("approve: %d %s", code, b)
	}
	o := <-out
	if o.err != nil || !o.dec.Approved || o.dec.Assurance != mcpsafe.AssuranceLocalPage {
		t.Fatalf("decision: %+v %v", o.dec, o.err)
	}
	// A second click (either button) changes nothing.
	if code, b := post(t, link, h.URL(), form, "deny"); code != http.StatusConflict || !strings.Contains(b, "Already decided: approved") {
		t.Fatalf("second click: %d %s", code, b)
	}
	// And the decision is delivered once: asking again is a new request.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if d, err := h.Await(ctx, r, 50*time.Millisecond); err == nil || d.Approved {
		t.Fatalf("the decision was delivered twice: %+v %v", d, err)
	}
}

func TestDenyOnThePageRunsNothing(t *testing.T) {
	h := newHarness(t)
	out := h.await(t, request("d", h.clk.Now().Add(time.Minute)))
	link := h.openedLink(t)
	form, _ := page(t, link)
	if code, b := post(t, link, h.URL(), form, "deny"); code != 200 || !strings.Contains(b, "Denied") {
		t.Fatalf("deny: %d %s", code, b)
	}
	if o := <-out; o.dec.Approved || !errors.Is(o.err, approver.ErrDenied) {
		t.Fatalf("after deny: %+v %v", o.dec, o.err)
	}
}

// Each attack is refused and leaves the request pending; the legitimate
// click that follows (the control) approves it.
func TestForgedDecisionsAreRefused(t *testing.T) {
	h := newHarness(t)
	a := request("a", h.clk.Now().Add(5*time.Minute))
	b := request("b", h.clk.Now().Add(5*time.Minute))
	outA := h.await(t, a)
	linkA := h.openedLink(t)
	outB := h.await(t, b)
	linkB := h.openedLink(t)
	if linkA == linkB {
		t.Fatal("two calls share a link")
	}
	formA, _ := page(t, linkA)
	formB, _ := page(t, linkB)

	attacks := []struct {
		name, link, origin, form, decision string
		code                               int
	}{
		{"cross-site POST", linkA, "http://evil.example", formA, "approve", http.StatusForbidden},
		{"POST without Origin", linkA, "", formA, "approve", http.StatusForbidden},
		{"another call's form token", linkA, h.URL(), formB, "approve", http.StatusForbidden},
		{"no form token", linkA, h.URL(), "", "approve", http.StatusForbidden},
		{"an ambiguous decision", linkA, h.URL(), formA, "yes", http.StatusBadRequest},
		{"a guessed link", h.URL() + "/a/" + strings.Repeat("A", 43), h.URL(), formA, "approve", http.StatusNotFound},
	}
	for _, at := range attacks {
		if code, body := post(t, at.link, at.origin, at.form, at.decision); code != at.code {
			t.Errorf("%s: %d %s, want %d", at.name, code, body, at.code)
		}
	}
	// DNS rebinding: the page answers only under its own host.
	req, _ := http.NewRequest("GET", linkA, nil)
	req.Host = "rebind.example:" + strings.Split(h.URL(), ":")[2]
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a request for another host name: %v %v", res.Status, err)
	}
	pendingStill(t, outA)
	pendingStill(t, outB)

	// Control: B's own page approves B, and A is still undecided.
	if code, body := post(t, linkB, h.URL(), formB, "approve"); code != 200 {
		t.Fatalf("control: %d %s", code, body)
	}
	if o := <-outB; !o.dec.Approved {
		t.Fatalf("control: %+v %v", o.dec, o.err)
	}
	pendingStill(t, outA)
}

func TestExpiredLinkApprovesNothing(t *testing.T) {
	h := newHarness(t)
	r := request("x", h.clk.Now().Add(time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan outcome, 1)
	go func() { d, err := h.Approve(ctx, r); out <- outcome{d, err} }()
	link := h.openedLink(t)
	form, _ := page(t, link)
	h.clk.Add(time.Minute) // ExpiresAt is exclusive
	if code, b := post(t, link, h.URL(), form, "approve"); code != http.StatusGone || !strings.Contains(b, "expired") {
		t.Fatalf("after expiry: %d %s", code, b)
	}
	pendingStill(t, out)
	cancel()
	if o := <-out; o.dec.Approved {
		t.Fatalf("approved after expiry: %+v", o.dec)
	}
}

func TestWithdrawnPageTakesNoDecision(t *testing.T) {
	h := newHarness(t)
	r := request("w", h.clk.Now().Add(time.Minute))
	out := h.await(t, r)
	link := h.openedLink(t)
	form, _ := page(t, link)
	if err := h.Withdraw(context.Background(), r, "the caller left"); err != nil {
		t.Fatal(err)
	}
	if o := <-out; o.dec.Approved || !errors.Is(o.err, approver.ErrNoDecision) {
		t.Fatalf("withdrawn: %+v %v", o.dec, o.err)
	}
	if code, b := post(t, link, h.URL(), form, "approve"); code != http.StatusConflict || !strings.Contains(b, "withdrawn") {
		t.Fatalf("a click after the withdrawal: %d %s", code, b)
	}
}

func TestLinkHandedOutIsNotOpenedAgain(t *testing.T) {
	h := newHarness(t)
	r := request("l", h.clk.Now().Add(time.Minute))
	link, err := h.Link(r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := h.Await(ctx, r, 20*time.Millisecond); !errors.Is(err, approver.ErrPending) {
		t.Fatalf("undecided: %v", err)
	}
	if opened := len(h.links); opened != 0 {
		t.Fatalf("the browser was opened although the link went to the client (URL elicitation)")
	}
	// The same ID for another call is refused.
	other := r
	other.ArgsDigest = "another"
	if _, err := h.Link(other); err == nil {
		t.Fatal("a request ID reused for another call was accepted")
	}
	form, _ := page(t, link)
	if code, _ := post(t, link, h.URL(), form, "approve"); code != 200 {
		t.Fatal("control: approving the handed-out link failed")
	}
	if d, err := h.Await(ctx, r, 0); err != nil || !d.Approved {
		t.Fatalf("control: %+v %v", d, err)
	}
}

func TestListenIsLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0", "127.0.0.1"} {
		if _, err := Listen(Options{Addr: addr}); err == nil {
			t.Errorf("Listen(%q) accepted", addr)
		}
	}
	// Controls: the loopback addresses pass the check (IPv6 may still be
	// missing on the machine, which is the listener's error, not the check's).
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		if err := CheckAddr(addr); err != nil {
			t.Errorf("CheckAddr(%q): %v", addr, err)
		}
	}
	p, err := Listen(Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
}
