package approvals

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

// replicas starts n approval services on one PostgreSQL database, each
// with its own HTTP server, as n replicas behind a load balancer are.
func replicas(t *testing.T, n int, opts ServiceOptions) []*env {
	t.Helper()
	opts.Store = pgTestDB(t)
	var out []*env
	for range n {
		out = append(out, newEnv(t, opts))
	}
	return out
}

// signedRequest is the wire body of testRequest(id) and its signature, as
// a gate sends them.
func signedRequest(t *testing.T, id string, now time.Time) ([]byte, string) {
	t.Helper()
	r := testRequest(id)
	body, err := json.Marshal(channel.WireRequest{Version: 1, ID: r.ID, Tool: r.Tool, Summary: r.Summary, Details: r.Details,
		Targets: r.Targets, ArgsDigest: r.ArgsDigest, Principal: r.Principal, Audience: r.Audience,
		Irreversible: r.Irreversible, ExpiresAt: r.ExpiresAt.UTC(), Nonce: fmt.Sprint(now.UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	return body, channel.Sign(testSecret, body, now)
}

func post(t *testing.T, url string, body []byte, sig string, client *http.Client) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set(channel.SignatureHeader, sig)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Two approvers deciding at the same moment on two replicas make one
// decision, and the gate waiting on a third replica gets it, with one
// signed attestation, at once (NOTIFY: the waiting replica's periodic
// re-read is turned off here).
func TestReplicasDecideOnce(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	rs := replicas(t, 3, ServiceOptions{SigningKey: key})
	a, b, c := rs[0], rs[1], rs[2]
	a.svc.pollEvery.Store(int64(time.Hour))
	var firstReq approver.Request
	var firstEvidence []byte
	for round := range 5 {
		id := fmt.Sprintf("req-race-%d", round)
		req := testRequest(id)
		if round == 0 {
			firstReq = req
		}
		ch := a.ask(req)
		b.waitPending(id)
		codes := make(chan int, 2)
		var start sync.WaitGroup
		start.Add(1)
		for _, d := range []struct {
			e   *env
			who string
		}{{b, "alice"}, {c, "bob"}} {
			go func() {
				start.Wait()
				code, _ := d.e.api("POST", "/api/requests/"+id+"/approve", d.who)
				codes <- code
			}()
		}
		start.Done()
		got := []int{<-codes, <-codes}
		if !(got[0] == 200 && got[1] == 409 || got[0] == 409 && got[1] == 200) {
			t.Fatalf("round %d: two approvers on two replicas got %v; want one 200 and one 409", round, got)
		}
		decided := time.Now()
		r := wait(t, ch)
		if !r.d.Approved || len(r.d.Approvers) != 1 || len(r.d.Evidence) == 0 {
			t.Fatalf("round %d: the gate got %+v, %v", round, r.d, r.err)
		}
		if round == 0 {
			firstEvidence = r.d.Evidence
		}
		if waited := time.Since(decided); waited > 3*time.Second {
			t.Fatalf("round %d: the long poll on replica A answered %s after the decision on B", round, waited)
		}
	}
	// The same request again, on another replica (a gate replica calling
	// again with the handle): the same decision with the same signed
	// attestation, never a second one.
	again := wait(t, c.ask(firstReq))
	if !again.d.Approved || len(again.d.Approvers) != 1 || string(again.d.Evidence) != string(firstEvidence) {
		t.Fatalf("a re-attach on another replica got %+v, %v; want the one decision and its attestation", again.d, again.err)
	}
}

// N-of-M counts distinct approvers across replicas: alice on two replicas
// is one approval.
func TestReplicasCountDistinctApprovers(t *testing.T) {
	rs := replicas(t, 3, ServiceOptions{Require: map[string]int{"delete_file": 2}})
	ch := rs[0].ask(testRequest("req-two"))
	rs[1].waitPending("req-two")
	rs[1].decide("req-two", "approve", "alice", 200)
	rs[2].decide("req-two", "approve", "alice", 409)
	_, out := rs[0].api("GET", "/api/requests/req-two", "bob")
	if out["status"] != channel.StatusPending {
		t.Fatalf("one approver on two replicas decided it: %v", out)
	}
	rs[2].decide("req-two", "approve", "bob", 200)
	r := wait(t, ch)
	if !r.d.Approved || len(r.d.Approvers) != 2 {
		t.Fatalf("after two distinct approvers: %+v %v", r.d, r.err)
	}
}

// A replayed webhook signature is refused on every replica.
func TestReplicasRefuseReplay(t *testing.T) {
	rs := replicas(t, 2, ServiceOptions{})
	body, sig := signedRequest(t, "req-replay-pg", time.Now())
	first := make(chan int, 1)
	go func() { code, _ := post(t, rs[0].srv.URL+"/webhook", body, sig, http.DefaultClient); first <- code }()
	rs[1].waitPending("req-replay-pg")
	impatient := &http.Client{Timeout: 3 * time.Second}
	code, out := post(t, rs[1].srv.URL+"/webhook", body, sig, impatient)
	if code != http.StatusConflict || !strings.Contains(out, "replayed signature") {
		t.Fatalf("the replay on replica B: HTTP %d %s", code, out)
	}
	// Control: the same request freshly signed re-attaches on B once A's
	// caller let go (here: after A's caller is answered).
	rs[1].decide("req-replay-pg", "deny", "alice", 200)
	if c := <-first; c != 200 {
		t.Fatalf("the original caller: HTTP %d", c)
	}
}

// A decision on a withdrawn or expired request is refused on every
// replica.
func TestReplicasRefuseWithdrawnAndExpired(t *testing.T) {
	rs := replicas(t, 2, ServiceOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := testRequest("req-gone")
	done := make(chan error, 1)
	go func() { _, err := rs[0].hook.Approve(ctx, req); done <- err }()
	rs[1].waitPending("req-gone")
	if err := rs[0].hook.Withdraw(context.Background(), req, approver.WithdrawCallerGone); err != nil {
		t.Fatal(err)
	}
	out := rs[1].decide("req-gone", "approve", "alice", 409)
	if !strings.Contains(fmt.Sprint(out["error"]), "already withdrawn") {
		t.Fatalf("approve after withdrawal: %v", out)
	}
	cancel()
	<-done

	short := testRequest("req-short")
	short.ExpiresAt = time.Now().Add(800 * time.Millisecond)
	ch := rs[0].ask(short)
	rs[1].waitPending("req-short")
	r := wait(t, ch)
	if r.d.Approved {
		t.Fatal("an expiring request was approved")
	}
	out = rs[1].decide("req-short", "approve", "alice", 409)
	if !strings.Contains(fmt.Sprint(out["error"]), "already expired") {
		t.Fatalf("approve after expiry: %v", out)
	}
}

// A real gate whose webhook is replica A runs the call once after an
// approver approved on replica B.
func TestReplicasGateEndToEnd(t *testing.T) {
	rs := replicas(t, 2, ServiceOptions{})
	w := newWaitGateOn(t, rs[0], func(o *mcpsafe.Options) { o.ChannelWait = time.Minute })
	ch := w.callAsync(context.Background(), "cache.txt", callOpts{who: "agent-1"})
	b := &waitGate{t: t, e: rs[1]}
	id := b.pendingID()
	rs[1].decide(id, "approve", "alice", 200)
	res := got(t, ch)
	if res.IsError || w.files.has("cache.txt") || w.files.runs() != 1 {
		t.Fatalf("the gate on A after approval on B: %v (runs %d)", structured(t, res), w.files.runs())
	}
	if st := b.status(id, channel.StatusApproved); st["approvals"] == nil {
		t.Fatalf("replica B: %v", st)
	}
}

// The page's live updates behave the same on every replica: a tab open on
// replica A hears of a request arriving at B and of its decision on B,
// and a login made on A is a login on B.
func TestReplicasLiveUpdates(t *testing.T) {
	rs := replicas(t, 2, ServiceOptions{})
	a, b := rs[0], rs[1]
	br := a.login("alice")
	req, _ := http.NewRequest("GET", a.srv.URL+"/ui/events", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := br.Client.Do(req.WithContext(ctx))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events on A: %v %v", err, resp)
	}
	defer resp.Body.Close()
	events := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				events <- string(buf[:n])
			}
			if err != nil {
				close(events)
				return
			}
		}
	}()
	next := func(what string) {
		t.Helper()
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("the stream ended before %s", what)
				}
				if strings.Contains(ev, "data:") {
					return
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("replica A's page heard nothing of %s on replica B", what)
			}
		}
	}
	next("the stream's start")
	ch := b.ask(testRequest("req-live"))
	next("a request arriving")
	b.decide("req-live", "deny", "bob", 200)
	next("the decision")
	wait(t, ch)

	// The session cookie made on A opens the page on B.
	u, _ := url.Parse(a.srv.URL)
	bu, _ := url.Parse(b.srv.URL)
	for _, c := range br.Client.Jar.Cookies(u) {
		br.Client.Jar.SetCookies(bu, []*http.Cookie{c})
	}
	br.base = b.srv.URL
	if code, page := br.get("/"); code != 200 || !strings.Contains(page, "alice") {
		t.Fatalf("the page on B with A's login: HTTP %d", code)
	}
}
