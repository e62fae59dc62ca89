package approvals

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// slackReplicas starts n approval services with Slack on one PostgreSQL
// database and one Slack workspace (the stand-in), as n replicas behind a
// load balancer are.
func slackReplicas(t *testing.T, n int, opts ServiceOptions) []*slackEnv {
	t.Helper()
	opts.Store = pgTestDB(t)
	first := newSlackEnv(t, opts, SlackOptions{})
	out := []*slackEnv{first}
	for range n - 1 {
		out = append(out, newSlackEnvOn(t, first.slack, opts, SlackOptions{}))
	}
	return out
}

// lookEverywhere makes every replica look at request id's message now, as
// its sweep or a notification would: a message in step stays untouched.
func lookEverywhere(rs []*slackEnv, id string) {
	var wg sync.WaitGroup
	for _, r := range rs {
		wg.Go(func() { r.svc.slack.step(context.Background(), id) })
	}
	wg.Wait()
}

// sent counts the calls of method that Slack took.
func (s *slackStandIn) sent(method string) int {
	n := 0
	for _, c := range s.recorded(method) {
		if !c.Refused {
			n++
		}
	}
	return n
}

// TestSlackReplicasOneMessage: three replicas on one database post one
// message per request, whichever replica took it; a request re-attached
// on another replica is not posted again; and while one replica's post is
// in flight (Slack slow), the others looking at the same request at that
// moment leave it to the claim holder.
func TestSlackReplicasOneMessage(t *testing.T) {
	rs := slackReplicas(t, 3, ServiceOptions{})
	slack := rs[0].slack
	for i, r := range rs {
		r.ask(testRequest(fmt.Sprintf("s-one-%d", i)))
	}
	for i := range rs {
		slack.posted(fmt.Sprintf("s-one-%d", i))
	}
	for i := range rs {
		lookEverywhere(rs, fmt.Sprintf("s-one-%d", i))
	}
	if n := slack.sent("chat.postMessage"); n != 3 {
		t.Fatalf("%d posts for 3 requests", n)
	}

	// Slack takes a while: the post of the replica that took the request
	// is under way when the two others look.
	release := slack.holdCalls()
	before := slack.arrived.Load()
	rs[0].ask(testRequest("s-race"))
	slack.waitFor("the post under way", func() bool { return slack.arrived.Load() > before })
	lookEverywhere(rs[1:], "s-race")
	release()
	slack.posted("s-race")
	ctx, cancel := storeCtx()
	defer cancel()
	slack.waitFor("the post recorded in the database", func() bool {
		rec, err := rs[2].svc.st.get(ctx, "s-race")
		return err == nil && rec.Slack != nil && rec.Slack.TS != "" && rec.Slack.Claim == "" && rec.Slack.Shown == channel.StatusPending
	})
	lookEverywhere(rs, "s-race")
	if n := slack.sent("chat.postMessage"); n != 4 {
		t.Fatalf("%d posts for 4 requests", n)
	}
}

// TestSlackReplicasClickElsewhere: a request taken and posted by replica A
// is approved by a click Slack delivers to replica B: decided once, the
// gate waiting on A gets it, the one message is updated once (B made the
// change and updates it; A and C, looking after, leave it), and the same
// click replayed to C is refused. A web decision on A of a request posted
// by B, and an expiry, each update the message once too.
func TestSlackReplicasClickElsewhere(t *testing.T) {
	rs := slackReplicas(t, 3, ServiceOptions{})
	a, b, c := rs[0], rs[1], rs[2]
	slack := a.slack

	ch := a.ask(testRequest("s-elsewhere"))
	ts := slack.posted("s-elsewhere")
	body := clickPayload(slackAlice, slackActApprove, "s-elsewhere", ts)
	now := itoa(time.Now().Unix())
	sig := slackSign(slackTestSecret, now, body)
	if code := b.deliver(body, now, sig); code != 200 {
		t.Fatalf("click to b: %d", code)
	}
	if r := wait(t, ch); !r.d.Approved || strings.Join(r.d.Approvers, ",") != "alice" {
		t.Fatalf("the gate on a got %+v %v", r.d, r.err)
	}
	slack.waitFor("the message shows alice's approval", func() bool {
		m := slack.message(ts)
		return strings.Contains(m, "Approved by alice (in Slack)") && !strings.Contains(m, slackActApprove)
	})
	lookEverywhere(rs, "s-elsewhere")
	if u := slack.sent("chat.update"); u != 1 {
		t.Fatalf("%d updates for one decision", u)
	}
	if code := c.deliver(body, now, sig); code != 401 {
		t.Fatalf("the click replayed to c: HTTP %d, want 401", code)
	}
	if st, names := c.status("s-elsewhere"); st != channel.StatusApproved || len(names) != 1 {
		t.Fatalf("after the replay: %s %v", st, names)
	}

	// Posted by b, denied on the web on a.
	ch = b.ask(testRequest("s-web-a"))
	ts = slack.posted("s-web-a")
	a.decide("s-web-a", "deny", "carol", 200)
	wait(t, ch)
	slack.waitFor("the message shows carol's denial", func() bool {
		m := slack.message(ts)
		return strings.Contains(m, "Denied by carol (on the web)") && !strings.Contains(m, slackActApprove)
	})
	lookEverywhere(rs, "s-web-a")

	// Posted by c, expired (by whichever replica's expiry got it).
	req := testRequest("s-exp-c")
	req.ExpiresAt = time.Now().Add(1500 * time.Millisecond)
	ch = c.ask(req)
	ts = slack.posted("s-exp-c")
	wait(t, ch)
	slack.waitFor("the message shows the expiry", func() bool {
		m := slack.message(ts)
		return strings.Contains(m, "Expired at") && !strings.Contains(m, slackActApprove)
	})
	lookEverywhere(rs, "s-exp-c")
	if p, u := slack.sent("chat.postMessage"), slack.sent("chat.update"); p != 3 || u != 3 {
		t.Fatalf("%d posts and %d updates for 3 requests and 3 outcomes", p, u)
	}
}

// TestSlackReplicaHearsChangeElsewhere: a replica that does not talk to
// Slack (configured without it) takes a request, and later denies it on
// the web, with the gate waiting on it; the Slack replicas hear of each
// change through the database (NOTIFY) alone, and one of them posts the
// message, once, then updates it, once.
func TestSlackReplicaHearsChangeElsewhere(t *testing.T) {
	rs := slackReplicas(t, 2, ServiceOptions{})
	plain := newEnv(t, ServiceOptions{Store: rs[0].svc.opts.Store, Approvers: slackApprovers()})
	slack := rs[0].slack
	ch := plain.ask(testRequest("s-heard"))
	ts := slack.posted("s-heard")
	plain.decide("s-heard", "deny", "bob", 200)
	wait(t, ch)
	slack.waitFor("a Slack replica updates the message", func() bool {
		return strings.Contains(slack.message(ts), "Denied by bob (on the web)")
	})
	lookEverywhere(rs, "s-heard")
	if p, u := slack.sent("chat.postMessage"), slack.sent("chat.update"); p != 1 || u != 1 {
		t.Fatalf("%d posts and %d updates for one request and one decision", p, u)
	}
}

// TestSlackDecidedMessageFinal: once a message shows an outcome it is not
// written again, whatever else the record learns later (here the gate
// reports that the approved call did not run).
func TestSlackDecidedMessageFinal(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	ch := e.ask(testRequest("s-final"))
	ts := e.slack.posted("s-final")
	e.click(slackAlice, slackActApprove, "s-final")
	wait(t, ch)
	e.slack.waitFor("the message shows the approval", func() bool {
		return strings.Contains(e.slack.message(ts), "Approved by alice (in Slack)")
	})
	ctx, cancel := storeCtx()
	defer cancel()
	if _, err := e.svc.st.update(ctx, "s-final", func(cur record, _ time.Time) (*record, error) {
		next := cur
		next.Withdrawn = "caller_gone"
		return &next, nil
	}); err != nil {
		t.Fatal(err)
	}
	e.svc.slack.step(context.Background(), "s-final")
	if u := e.slack.sent("chat.update"); u != 1 {
		t.Fatalf("%d updates of a decided message", u)
	}
}

// TestSlackLapsedClaimNotRecorded: a replica whose claim ran out (another
// holds the message now) does not record its post or update over the
// holder's: what the message shows is written only by the claim holder.
func TestSlackLapsedClaimNotRecorded(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	e.ask(testRequest("s-lapse"))
	e.slack.posted("s-lapse")
	ctx, cancel := storeCtx()
	defer cancel()
	e.slack.waitFor("the post recorded", func() bool {
		r, _ := e.svc.st.get(ctx, "s-lapse")
		return r.Slack != nil && r.Slack.TS != "" && r.Slack.Claim == ""
	})
	if _, err := e.svc.st.update(ctx, "s-lapse", func(cur record, now time.Time) (*record, error) {
		ref := *cur.Slack
		ref.Claim, ref.ClaimUntil = "theirs", now.Add(time.Minute)
		next := cur
		next.Slack = &ref
		return &next, nil
	}); err != nil {
		t.Fatal(err)
	}
	e.svc.slack.record("s-lapse", "mine", "update", "approved|+alice/slack", "", "", nil)
	r, err := e.svc.st.get(ctx, "s-lapse")
	if err != nil || r.Slack.Claim != "theirs" || r.Slack.Shown != channel.StatusPending {
		t.Fatalf("after a lapsed claim's write: %+v %v", r.Slack, err)
	}
}
