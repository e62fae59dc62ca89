package approvals

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
)

// balancer is a load balancer in front of replicas: it sends each call to
// the replica the test points it at.
type balancer struct {
	mu     sync.Mutex
	target *url.URL
}

func newBalancer(t *testing.T, first string) (*balancer, *httptest.Server) {
	b := &balancer{}
	b.point(first)
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			b.mu.Lock()
			r.SetURL(b.target)
			b.mu.Unlock()
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
	})
	t.Cleanup(srv.Close)
	return b, srv
}

func (b *balancer) point(u string) {
	p, _ := url.Parse(u)
	b.mu.Lock()
	b.target = p
	b.mu.Unlock()
}

// A replica told to stop (SIGTERM: Drain) fails /readyz and hands the gate
// waiting on it over: the gate gets a pending answer, keeps its
// approval_pending handle, and its retry re-attaches through the load
// balancer to another replica, where the approval made there runs the
// call once.
func TestDrainHandsTheGateToAnotherReplica(t *testing.T) {
	rs := replicas(t, 2, ServiceOptions{})
	a, b := rs[0], rs[1]
	lb, lbSrv := newBalancer(t, a.srv.URL)
	viaLB := &env{t: t, svc: a.svc, srv: a.srv, hook: newHook(t, lbSrv.URL+"/webhook")}
	w := newWaitGateOn(t, viaLB, func(o *mcpsafe.Options) { o.ChannelWait = time.Minute })
	ch := w.callAsync(context.Background(), "cache.txt", callOpts{who: "agent-1"})
	other := &waitGate{t: t, e: b}
	id := other.pendingID()
	waitFor(t, "the gate's long poll at replica A", func() bool { return a.polling(id) })

	a.svc.Drain()
	if code := httpGet(t, a.srv.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz of a draining replica: %d", code)
	}
	res := got(t, ch)
	sc := structured(t, res)
	handle, _ := sc["approval_token"].(string)
	if res.IsError || sc["status"] != "approval_pending" || handle == "" {
		t.Fatalf("the gate when its replica drained: %v", sc)
	}
	if w.files.runs() != 0 {
		t.Fatal("ran before approval")
	}
	lb.point(b.srv.URL) // the load balancer stops sending to A
	b.decide(id, "approve", "alice", 200)
	res, err := w.call(context.Background(), "cache.txt", callOpts{who: "agent-1", token: handle})
	if err != nil || res.IsError || w.files.runs() != 1 || w.files.has("cache.txt") {
		t.Fatalf("the retry through another replica: %v %v (runs %d)", err, res, w.files.runs())
	}
	if rec, ok := w.jr.find(journal.ChannelApproved); !ok || rec.By != "alice" {
		t.Fatalf("journal: %+v", rec)
	}
	// And once only.
	res, _ = w.call(context.Background(), "cache.txt", callOpts{who: "agent-1", token: handle})
	if !res.IsError || w.files.runs() != 1 {
		t.Fatalf("the handle again: %v (runs %d)", res, w.files.runs())
	}
}

// A gate that had the approval and did not run the call (it was shutting
// down) says so, and the service's history no longer says only
// "approved": it says the call was not run, and why. A denial delivered is
// final as before.
func TestApprovedNotRunIsShown(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	req := testRequest("req-notrun")
	ch := e.ask(req)
	e.waitPending(req.ID)
	e.decide(req.ID, "approve", "alice", 200)
	if r := wait(t, ch); !r.d.Approved {
		t.Fatalf("control: %+v %v", r.d, r.err)
	}
	_, before := e.api("GET", "/api/requests/"+req.ID, "bob")
	if strings.Contains(before["outcome"].(string), "not run:") {
		t.Fatalf("before any report: %v", before["outcome"])
	}
	if err := e.hook.Withdraw(context.Background(), req, approver.WithdrawShuttingDown); err != nil {
		t.Fatalf("the gate's report: %v", err)
	}
	_, out := e.api("GET", "/api/requests/"+req.ID, "bob")
	if out["status"] != channel.StatusApproved || out["withdrawn"] != approver.WithdrawShuttingDown ||
		!strings.Contains(out["outcome"].(string), "approved, not run: the gated server shut down") {
		t.Fatalf("after the gate's report: %v", out)
	}
	b := e.login("bob")
	if _, page := b.get("/"); !strings.Contains(page, "not run: the gated server shut down") {
		t.Fatal("the page's history does not say the approved call was not run")
	}

	deny := testRequest("req-denied-final")
	ch = e.ask(deny)
	e.waitPending(deny.ID)
	e.decide(deny.ID, "deny", "alice", 200)
	wait(t, ch)
	if err := e.hook.Withdraw(context.Background(), deny, approver.WithdrawShuttingDown); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("a withdrawal after a delivered denial: %v", err)
	}
}
