package approvals

import (
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

// TestSlackClickApproves is the control: a request is posted with Approve
// and Deny buttons; a mapped approver's signed click approves it, the gate
// gets the approval naming her, and the message loses its buttons.
// It runs on each store (memory, SQLite, PostgreSQL).
func TestSlackClickApproves(t *testing.T) {
	forSlackStores(t, testSlackClickApproves)
}

func testSlackClickApproves(t *testing.T, store string) {
	e := newSlackEnv(t, ServiceOptions{Store: store}, SlackOptions{})
	ch := e.ask(testRequest("s-ok"))
	ts := e.slack.posted("s-ok")
	msg := e.slack.message(ts)
	if !hasAll(msg, slackActApprove, slackActDeny, "delete_file", "ci-bot", "files@host") {
		t.Fatalf("posted message lacks buttons or names: %s", msg)
	}
	if code := e.click(slackAlice, slackActApprove, "s-ok"); code != 200 {
		t.Fatalf("click: HTTP %d", code)
	}
	r := wait(t, ch)
	if r.err != nil || !r.d.Approved || strings.Join(r.d.Approvers, ",") != "alice" {
		t.Fatalf("decision %+v, %v", r.d, r.err)
	}
	e.slack.waitFor("the message shows the approval", func() bool {
		m := e.slack.message(ts)
		return strings.Contains(m, "Approved by alice (in Slack)") && !strings.Contains(m, slackActApprove)
	})
	e.slack.told(slackAlice, "it is approved")
	if st, _ := e.status("s-ok"); st != channel.StatusApproved {
		t.Fatalf("status %s", st)
	}
}

// forSlackStores runs test on a memory, an SQLite and a PostgreSQL store.
func forSlackStores(t *testing.T, test func(t *testing.T, store string)) {
	for _, k := range []struct{ name, spec string }{{"memory", "memory"}, {"sqlite", "file:"}, {"postgres", ""}} {
		t.Run(k.name, func(t *testing.T) {
			spec := k.spec
			switch spec {
			case "file:":
				spec += filepath.Join(t.TempDir(), "approvals.db")
			case "":
				spec = pgTestDB(t)
			}
			test(t, spec)
		})
	}
}

// nothingRecorded fails unless id is still pending with no approvals.
func (e *slackEnv) nothingRecorded(id string) {
	e.t.Helper()
	if st, names := e.status(id); st != channel.StatusPending || len(names) != 0 {
		e.t.Fatalf("%s: status %s, approvals %v; want pending with none", id, st, names)
	}
}

// TestSlackSignatureRefused: a click that is unsigned, signed with another
// secret, signed over another body, old, or replayed is refused with 401
// and records nothing. The control, signed right and fresh, is taken.
func TestSlackSignatureRefused(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{Require: map[string]int{"delete_file": 2}}, SlackOptions{})
	e.ask(testRequest("s-sig"))
	e.slack.posted("s-sig")
	body := clickPayload(slackAlice, slackActApprove, "s-sig", "1765130000.000001")
	now := strconv.FormatInt(time.Now().Unix(), 10)
	old := strconv.FormatInt(time.Now().Add(-6*time.Minute).Unix(), 10)
	other := clickPayload(slackBob, slackActApprove, "s-sig", "1765130000.000001")
	for _, c := range []struct{ name, body, ts, sig string }{
		{"unsigned", body, "", ""},
		{"no timestamp", body, "", slackSign(slackTestSecret, now, body)},
		{"wrong secret", body, now, slackSign("another-signing-secret-0123456789", now, body)},
		{"signature of another body", body, now, slackSign(slackTestSecret, now, other)},
		{"signature for another timestamp", body, now, slackSign(slackTestSecret, old, body)},
		{"old timestamp, signed right", body, old, slackSign(slackTestSecret, old, body)},
		{"not v0", body, now, strings.Replace(slackSign(slackTestSecret, now, body), "v0=", "v1=", 1)},
	} {
		if code := e.deliver(c.body, c.ts, c.sig); code != http.StatusUnauthorized {
			t.Errorf("%s: HTTP %d, want 401", c.name, code)
		}
	}
	e.nothingRecorded("s-sig")
	if n := len(e.slack.recorded("chat.postEphemeral")); n != 0 {
		t.Fatalf("refused clicks were answered in Slack (%d ephemerals)", n)
	}

	// Control, then its replay: the first is taken, the second refused.
	sig := slackSign(slackTestSecret, now, body)
	if code := e.deliver(body, now, sig); code != 200 {
		t.Fatalf("control: HTTP %d", code)
	}
	if code := e.deliver(body, now, sig); code != http.StatusUnauthorized {
		t.Fatalf("replay: HTTP %d, want 401", code)
	}
	if st, names := e.status("s-sig"); st != channel.StatusPending || strings.Join(names, ",") != "alice" {
		t.Fatalf("after the click and its replay: %s %v, want pending with alice alone", st, names)
	}
}

// TestSlackUnmappedUserRefused: a Slack user in no approvers-file line and
// no group is told so and changes nothing; a mapped one (control) decides.
func TestSlackUnmappedUserRefused(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	ch := e.ask(testRequest("s-map"))
	e.slack.posted("s-map")
	for _, user := range []string{slackMallory, "not-a-user-id", ""} {
		if code := e.click(user, slackActApprove, "s-map"); code != 200 {
			t.Fatalf("click by %q: HTTP %d", user, code)
		}
	}
	e.slack.told(slackMallory, "not an approver for this tool")
	e.nothingRecorded("s-map")
	e.click(slackBob, slackActDeny, "s-map")
	if r := wait(t, ch); r.d.Approved || !errors.Is(r.err, channel.ErrDenied) || strings.Join(r.d.Approvers, ",") != "bob" {
		t.Fatalf("bob's deny: %+v %v", r.d, r.err)
	}
}

// TestSlackSelfApprovalRefused: the requester (ci-bot, mapped to a Slack
// id) cannot approve their own request from Slack either.
func TestSlackSelfApprovalRefused(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	ch := e.ask(testRequest("s-self"))
	e.slack.posted("s-self")
	e.click(slackCIBot, slackActApprove, "s-self")
	e.slack.told(slackCIBot, "cannot approve it")
	e.nothingRecorded("s-self")
	e.click(slackCarol, slackActApprove, "s-self") // control
	if r := wait(t, ch); !r.d.Approved || strings.Join(r.d.Approvers, ",") != "carol" {
		t.Fatalf("carol's approval: %+v %v", r.d, r.err)
	}
}

// TestSlackTwoOfM: two clicks of one approver count once; a second
// approver completes it; a later click changes nothing. Web and Slack
// count together.
func TestSlackTwoOfM(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{Require: map[string]int{"delete_file": 2}}, SlackOptions{})
	ch := e.ask(testRequest("s-2m"))
	ts := e.slack.posted("s-2m")
	e.click(slackAlice, slackActApprove, "s-2m")
	e.click(slackAlice, slackActApprove, "s-2m")
	e.slack.told(slackAlice, "already approved")
	if st, names := e.status("s-2m"); st != channel.StatusPending || strings.Join(names, ",") != "alice" {
		t.Fatalf("after alice twice: %s %v", st, names)
	}
	e.slack.waitFor("the message shows alice's vote", func() bool {
		return strings.Contains(e.slack.message(ts), "Approved so far by alice (in Slack)")
	})
	e.decide("s-2m", "approve", "bob", 200) // on the web
	r := wait(t, ch)
	if !r.d.Approved || strings.Join(r.d.Approvers, ",") != "alice,bob" {
		t.Fatalf("decision %+v %v", r.d, r.err)
	}
	e.slack.waitFor("the message shows both paths", func() bool {
		m := e.slack.message(ts)
		return strings.Contains(m, "Approved by alice (in Slack), bob (on the web)") && !strings.Contains(m, slackActApprove)
	})
	e.click(slackCarol, slackActDeny, "s-2m")
	e.slack.told(slackCarol, "Nothing changed", "Approved by alice")
	if st, _ := e.status("s-2m"); st != channel.StatusApproved {
		t.Fatalf("a late deny changed %s", st)
	}
}

// TestSlackStaleClicks: after an approval (1-of-M), a web decision, an
// expiry or a withdrawal, a click gets the current state and changes
// nothing; the message shows the outcome without buttons.
// It runs on each store.
func TestSlackStaleClicks(t *testing.T) {
	forSlackStores(t, testSlackStaleClicks)
}

func testSlackStaleClicks(t *testing.T, store string) {
	e := newSlackEnv(t, ServiceOptions{Store: store}, SlackOptions{})

	// A second click on a 1-of-M.
	ch := e.ask(testRequest("s-1m"))
	e.slack.posted("s-1m")
	e.click(slackAlice, slackActApprove, "s-1m")
	wait(t, ch)
	e.click(slackBob, slackActDeny, "s-1m")
	e.slack.told(slackBob, "Nothing changed", "Approved by alice (in Slack)")
	if st, names := e.status("s-1m"); st != channel.StatusApproved || strings.Join(names, ",") != "alice" {
		t.Fatalf("after bob's late click: %s %v", st, names)
	}

	// Decided on the web first.
	ch = e.ask(testRequest("s-web"))
	ts := e.slack.posted("s-web")
	e.decide("s-web", "deny", "carol", 200)
	wait(t, ch)
	e.slack.waitFor("the message says carol denied on the web", func() bool {
		m := e.slack.message(ts)
		return strings.Contains(m, "Denied by carol (on the web)") && !strings.Contains(m, slackActApprove)
	})
	e.click(slackAlice, slackActApprove, "s-web")
	e.slack.told(slackAlice, "Nothing changed", "Denied by carol")
	if st, _ := e.status("s-web"); st != channel.StatusDenied {
		t.Fatalf("status %s", st)
	}

	// Expired.
	req := testRequest("s-exp")
	req.ExpiresAt = time.Now().Add(1500 * time.Millisecond)
	ch = e.ask(req)
	ts = e.slack.posted("s-exp")
	wait(t, ch)
	e.slack.waitFor("the message says expired", func() bool {
		m := e.slack.message(ts)
		return strings.Contains(m, "Expired at") && !strings.Contains(m, slackActApprove)
	})
	e.click(slackAlice, slackActApprove, "s-exp")
	e.slack.told(slackAlice, "Nothing changed", "Expired")
	if st, names := e.status("s-exp"); st != channel.StatusExpired || len(names) != 0 {
		t.Fatalf("after a click on an expired request: %s %v", st, names)
	}

	// Withdrawn by the gate (its caller went away).
	wreq := testRequest("s-wd")
	ch = e.ask(wreq)
	ts = e.slack.posted("s-wd")
	wbody := withdrawalBody(t, channel.WireWithdrawal{Version: 1, Type: "withdraw", ID: wreq.ID, Audience: wreq.Audience,
		ArgsDigest: wreq.ArgsDigest, Reason: approver.WithdrawCallerGone, Nonce: "w1"})
	if code, out := e.postSigned(wbody, channel.Sign(testSecret, wbody, time.Now())); code != 200 {
		t.Fatalf("withdrawal: %d %s", code, out)
	}
	wait(t, ch)
	e.slack.waitFor("the message says withdrawn", func() bool {
		m := e.slack.message(ts)
		return strings.Contains(m, "Withdrawn by the gate") && !strings.Contains(m, slackActApprove)
	})
	e.click(slackAlice, slackActApprove, "s-wd")
	e.slack.told(slackAlice, "Nothing changed", "Withdrawn")
	if st, names := e.status("s-wd"); st != channel.StatusWithdrawn || len(names) != 0 {
		t.Fatalf("after a click on a withdrawn request: %s %v", st, names)
	}
}
