package approvals

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// TestSlackDownNothingApproved: Slack down (503) and then rate limiting
// (429, Retry-After: 1) keep the request pending on the web, whose card
// says Slack was not reached; the post is retried with backoff, no sooner
// than Retry-After, and goes out once when Slack is back. Nothing is
// approved by a failure.
func TestSlackDownNothingApproved(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	var mu sync.Mutex
	n := 0
	e.slack.setFault(func(m string) (int, int) {
		if m != "chat.postMessage" {
			return 0, 0
		}
		mu.Lock()
		defer mu.Unlock()
		n++
		switch {
		case n <= 2:
			return http.StatusServiceUnavailable, 0
		case n == 3:
			return http.StatusTooManyRequests, 1
		}
		return 0, 0
	})
	ch := e.ask(testRequest("s-down"))
	e.slack.waitFor("three refused posts", func() bool { return len(e.slack.recorded("chat.postMessage")) >= 3 })

	_, out := e.api("GET", "/api/requests/s-down", "alice")
	if out["status"] != channel.StatusPending || !strings.Contains(out["slack"].(string), "Slack was not reached") {
		t.Fatalf("while Slack is down: %v", out)
	}
	jar, _ := cookiejar.New(nil)
	b := &browser{Client: &http.Client{Jar: jar}, base: e.srv.URL}
	if code, _ := b.post("/login", url.Values{"name": {"bob"}, "password": {tokenOf("bob")}}, e.svc.opts.Origin); code != 200 {
		t.Fatalf("login: %d", code)
	}
	if _, page := b.get("/"); !hasAll(page, `class="slack-note"`, "Slack was not reached", "rate limited by Slack (429, retry after 1s)") {
		t.Fatalf("the page does not say Slack was not reached:\n%s", page)
	}
	select {
	case r := <-ch:
		t.Fatalf("the gate was answered while Slack was down: %+v %v", r.d, r.err)
	default:
	}

	e.slack.posted("s-down")
	calls := e.slack.recorded("chat.postMessage")
	ok := 0
	for _, c := range calls {
		if !c.Refused {
			ok++
		}
	}
	if ok != 1 || len(calls) != 4 {
		t.Fatalf("posts: %d taken of %d, want 1 of 4", ok, len(calls))
	}
	e.slack.waitFor("the card's note goes", func() bool {
		_, out := e.api("GET", "/api/requests/s-down", "alice")
		return out["slack"] == nil
	})
	e.click(slackAlice, slackActApprove, "s-down")
	if r := wait(t, ch); !r.d.Approved {
		t.Fatalf("after Slack came back: %+v %v", r.d, r.err)
	}
}

// TestSlackRetryAfterHonoured: after a 429 the next post waits for
// Retry-After, though the backoff alone would retry much sooner.
func TestSlackRetryAfterHonoured(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{RetryBase: 10 * time.Millisecond})
	var mu sync.Mutex
	var at []time.Time
	e.slack.setFault(func(m string) (int, int) {
		if m != "chat.postMessage" {
			return 0, 0
		}
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
		if len(at) == 1 {
			return http.StatusTooManyRequests, 1
		}
		return 0, 0
	})
	e.ask(testRequest("s-429"))
	e.slack.posted("s-429")
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 2 || at[1].Sub(at[0]) < 900*time.Millisecond {
		t.Fatalf("post times %v: the retry came before Retry-After", at)
	}
}

// TestSlackUpdateRetried: a chat.update Slack refuses is tried again until
// the message shows the outcome.
func TestSlackUpdateRetried(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	ch := e.ask(testRequest("s-upd"))
	ts := e.slack.posted("s-upd")
	var mu sync.Mutex
	n := 0
	e.slack.setFault(func(m string) (int, int) {
		mu.Lock()
		defer mu.Unlock()
		if m == "chat.update" && n < 2 {
			n++
			return http.StatusBadGateway, 0
		}
		return 0, 0
	})
	e.decide("s-upd", "approve", "bob", 200)
	wait(t, ch)
	e.slack.waitFor("the message shows the web approval", func() bool {
		return strings.Contains(e.slack.message(ts), "Approved by bob (on the web)")
	})
	if got := len(e.slack.recorded("chat.update")); got != 3 {
		t.Fatalf("%d updates, want 2 refused and 1 taken", got)
	}
}

// TestSlackHangingDoesNotHoldClose: a Slack that never answers does not
// keep the service from closing (the post in flight is cut short), and
// the gate waiting on the request is answered, not approved.
func TestSlackHangingDoesNotHoldClose(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	e.slack.hanging.Store(true)
	ch := e.ask(testRequest("s-hang"))
	e.slack.waitFor("a hanging post", func() bool { return e.slack.hung.Load() > 0 })
	closed := make(chan struct{})
	go func() {
		e.svc.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second): // the post's own timeout is 15 s
		t.Fatal("Close waited for a hanging Slack")
	}
	if r := wait(t, ch); r.d.Approved || r.err == nil {
		t.Fatalf("the waiting gate got %+v %v", r.d, r.err)
	}
}
