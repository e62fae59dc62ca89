package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

func withdrawalBody(t *testing.T, m channel.WireWithdrawal) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A withdrawal is signed, replay-checked, strictly parsed and must name the
// request exactly (id, audience, args digest). Only then is the request
// withdrawn; after that no approver can approve it and a re-attaching
// caller learns it was withdrawn, never approved.
func TestWithdrawal(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	req := testRequest("req-withdraw")
	ch := e.ask(req)
	e.waitPending("req-withdraw")
	good := channel.WireWithdrawal{Version: 1, Type: "withdraw", ID: req.ID, Audience: req.Audience,
		ArgsDigest: req.ArgsDigest, Reason: approver.WithdrawCallerGone, Nonce: "n1"}
	with := func(f func(*channel.WireWithdrawal)) []byte {
		m := good
		f(&m)
		return withdrawalBody(t, m)
	}
	body := withdrawalBody(t, good)
	cases := []struct {
		name string
		body []byte
		sig  string // "" = signed correctly
		code int
		msg  string
	}{
		{"unsigned", body, "-", 401, "missing"},
		{"wrong secret", body, channel.Sign([]byte(strings.Repeat("x", 32)), body, time.Now()), 401, "does not match"},
		{"stale", body, channel.Sign(testSecret, body, time.Now().Add(-10*time.Minute)), 401, "outside the"},
		{"other audience", with(func(m *channel.WireWithdrawal) { m.Audience = "other@host"; m.Nonce = "n2" }), "", 409, "does not match"},
		{"other arguments", with(func(m *channel.WireWithdrawal) { m.ArgsDigest = strings.Repeat("0", 64); m.Nonce = "n3" }), "", 409, "does not match"},
		{"unknown request", with(func(m *channel.WireWithdrawal) { m.ID = "req-nobody"; m.Nonce = "n4" }), "", 404, "no such request"},
		{"unknown reason", with(func(m *channel.WireWithdrawal) { m.Reason = "approved"; m.Nonce = "n5" }), "", 400, "reason"},
		{"wrong type", with(func(m *channel.WireWithdrawal) { m.Type = "approve"; m.Nonce = "n6" }), "", 400, "type"},
		{"version 2", with(func(m *channel.WireWithdrawal) { m.Version = 2; m.Nonce = "n7" }), "", 400, "version 2"},
		{"unknown field", []byte(`{"version":1,"type":"withdraw","id":"req-withdraw","reason":"caller_gone","approved":true}`), "", 400, "unknown field"},
		{"duplicate key", []byte(`{"version":1,"type":"withdraw","type":"withdraw","id":"req-withdraw","reason":"caller_gone"}`), "", 400, "duplicate key"},
		// A request body that smuggles a type is neither a request nor a withdrawal.
		{"request with a type", []byte(strings.Replace(string(wireBody(t, "req-typed", time.Now().Add(time.Minute))), `{`, `{"type":"request",`, 1)), "", 400, "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sig := tc.sig
			switch sig {
			case "":
				sig = channel.Sign(testSecret, tc.body, time.Now())
			case "-":
				sig = ""
			}
			code, out := e.postSigned(tc.body, sig)
			if code != tc.code || !strings.Contains(out, tc.msg) {
				t.Fatalf("HTTP %d %s, want %d mentioning %q", code, out, tc.code, tc.msg)
			}
			if _, got := e.api("GET", "/api/requests/req-withdraw", "alice"); got["status"] != channel.StatusPending {
				t.Fatalf("a refused withdrawal changed the request: %v", got)
			}
		})
	}

	// Control: the signed, matching withdrawal withdraws it.
	sig := channel.Sign(testSecret, body, time.Now())
	if code, out := e.postSigned(body, sig); code != 200 || !strings.Contains(out, channel.StatusWithdrawn) {
		t.Fatalf("withdrawal: HTTP %d %s", code, out)
	}
	if code, out := e.postSigned(body, sig); code != 409 || !strings.Contains(out, "replayed") {
		t.Fatalf("replayed withdrawal: HTTP %d %s", code, out)
	}
	_, got := e.api("GET", "/api/requests/req-withdraw", "alice")
	if got["status"] != channel.StatusWithdrawn || got["withdrawn"] != approver.WithdrawCallerGone {
		t.Fatalf("after the withdrawal: %v", got)
	}
	out := e.decide("req-withdraw", "approve", "alice", 409)
	if !strings.Contains(out["error"].(string), "already withdrawn") {
		t.Fatalf("approving a withdrawn request: %v", out)
	}
	// The long poll that was still attached learns it, as a failure.
	r := wait(t, ch)
	if r.d.Approved || !errors.Is(r.err, channel.ErrUnavailable) || !strings.Contains(r.err.Error(), "withdrawn") {
		t.Fatalf("attached caller: %+v, %v", r.d, r.err)
	}
	// The history says why, in words.
	b := e.login("alice")
	if _, page := b.get("/"); !strings.Contains(page, "caller gone") {
		t.Fatal("the page does not say the caller is gone")
	}
}

// Webhook.Withdraw speaks the contract above to the real service.
func TestWebhookWithdraw(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	req := testRequest("req-hook-withdraw")
	ch := e.ask(req)
	e.waitPending(req.ID)
	if err := e.hook.Withdraw(context.Background(), req, approver.WithdrawTimedOut); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, ch); r.d.Approved || r.err == nil {
		t.Fatalf("attached caller: %+v, %v", r.d, r.err)
	}
	_, got := e.api("GET", "/api/requests/"+req.ID, "alice")
	if got["status"] != channel.StatusWithdrawn || got["withdrawn"] != approver.WithdrawTimedOut {
		t.Fatalf("after Withdraw: %v", got)
	}
	if err := e.hook.Withdraw(context.Background(), testRequest("req-never-sent"), approver.WithdrawCallerGone); err == nil {
		t.Fatal("withdrawing an unknown request reported success")
	}
}

// Await with a short wait: the service answers 202 after "Prefer: wait",
// the request stays open, and a second Await re-attaches and gets the
// decision once.
func TestAwaitPendingThenDecision(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	req := testRequest("req-await")
	_, err := e.hook.Await(context.Background(), req, time.Second)
	if !errors.Is(err, channel.ErrPending) || !errors.Is(err, approver.ErrPending) {
		t.Fatalf("first Await = %v, want ErrPending", err)
	}
	e.waitPending(req.ID)
	e.decide(req.ID, "approve", "alice", 200)
	d, err := e.hook.Await(context.Background(), req, time.Second)
	if err != nil || !d.Approved || strings.Join(d.Approvers, ",") != "alice" {
		t.Fatalf("second Await = %+v, %v", d, err)
	}
	// A third Await (another gate replica with the handle, or this one
	// after a lost reply) gets the same decision: the gate's ledger is
	// what makes the call run once.
	if d, err := e.hook.Await(context.Background(), req, time.Second); err != nil || !d.Approved || strings.Join(d.Approvers, ",") != "alice" {
		t.Fatalf("third Await = %+v, %v; want the same decision again", d, err)
	}
}

// A 202 is never an approval, whatever its body says; the same body with
// 200 is (control).
func TestAcceptedIsNeverApproval(t *testing.T) {
	body := `{"approved":true,"approvers":["alice"]}`
	for _, tc := range []struct {
		status int
		ok     bool
	}{{202, false}, {200, true}} {
		srv := httptest.NewServer(answering(t, tc.status, body))
		d, err := newHook(t, srv.URL).Await(context.Background(), testRequest("req-202"), time.Second)
		srv.Close()
		if d.Approved != tc.ok || (err == nil) != tc.ok {
			t.Fatalf("HTTP %d: %+v, %v", tc.status, d, err)
		}
		if !tc.ok && !errors.Is(err, channel.ErrPending) {
			t.Fatalf("HTTP 202: %v, want ErrPending", err)
		}
	}
}
