package approvals

import (
	"context"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/ledger"
)

func grantRequest(id string) approver.Request {
	r := testRequest(id)
	r.Grants = []approver.GrantOffer{{ID: "grant-1-1", Label: `this and calls with "exactly these arguments", for 15m, 3 uses in all`,
		Words: `"exactly these arguments"`, CEL: `args_digest == "x"`, TTL: 15 * time.Minute, Uses: 3}}
	return r
}

// Only an exact offered grant ID is accepted by the service, and the one
// chosen reaches the gate in the answer.
func TestServiceGrantChoice(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ch := e.ask(grantRequest("req-grant"))
	e.waitPending("req-grant")
	for _, bad := range []string{"grant-9-9", "GRANT-1-1", "grant-1-1%20", "exactly%20these%20arguments"} {
		e.approveGrant("req-grant", bad, "alice", 400)
	}
	out := e.approveGrant("req-grant", "grant-1-1", "alice", 200)
	if out["grant"] != "grant-1-1" {
		t.Fatalf("API item %v does not show the grant chosen", out)
	}
	r := wait(t, ch)
	if r.err != nil || !r.d.Approved || r.d.Grant != "grant-1-1" {
		t.Fatalf("decision %+v, %v; want approved with grant-1-1", r.d, r.err)
	}

	// Control: approving without a choice approves this call alone.
	ch = e.ask(grantRequest("req-once"))
	e.waitPending("req-once")
	e.decide("req-once", "approve", "alice", 200)
	if r := wait(t, ch); r.err != nil || !r.d.Approved || r.d.Grant != "" {
		t.Fatalf("decision %+v, %v; want approved, no grant", r.d, r.err)
	}
}

// Two approvers of one request must choose the same grant.
func TestServiceGrantChoiceSameForAllApprovers(t *testing.T) {
	e := newEnv(t, ServiceOptions{Require: map[string]int{"delete_file": 2}})
	ch := e.ask(grantRequest("req-2"))
	e.waitPending("req-2")
	e.approveGrant("req-2", "grant-1-1", "alice", 200)
	e.decide("req-2", "approve", "bob", 409)
	e.approveGrant("req-2", "grant-1-1", "bob", 200)
	if r := wait(t, ch); r.err != nil || r.d.Grant != "grant-1-1" || len(r.d.Approvers) != 2 {
		t.Fatalf("decision %+v, %v", r.d, r.err)
	}
}

// An offer the service could confuse with "this call only" is refused.
func TestServiceRefusesOfferNamedOnce(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	r := grantRequest("req-once-offer")
	r.Grants[0].ID = approver.Once
	if res := wait(t, e.ask(r)); res.err == nil || res.d.Approved {
		t.Fatalf("a request offering a grant named once was admitted: %+v", res.d)
	}
	// Control: the same request with a proper ID is admitted.
	e.ask(grantRequest("req-ok"))
	e.waitPending("req-ok")
}

// approveGrant approves over the JSON API, choosing grant (query parameter).
func (e *env) approveGrant(id, grant, who string, wantCode int) map[string]any {
	e.t.Helper()
	code, out := e.api("POST", "/api/requests/"+id+"/approve?grant="+grant, who)
	if code != wantCode {
		e.t.Fatalf("approve %s with grant %s by %s: HTTP %d %v, want %d", id, grant, who, code, out, wantCode)
	}
	return out
}

// The API lists and revokes the servers' standing grants, for approvers
// only; without the ledger it says so instead of showing nothing.
func TestServiceGrantsAPI(t *testing.T) {
	store := ledger.NewMemory(0)
	id := "0123456789abcdef0123456789abcdef"
	data := []byte(`{"info":{"id":"` + id + `","tool":"write_note","principal":"user:bob","uses":3},"sealed":"x"}`)
	if err := store.PutStanding(context.Background(), ledger.Standing{ID: id, Scope: "s1", Expires: time.Now().Add(time.Hour), Uses: 2, Data: data}); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, ServiceOptions{Grants: store})
	if code, _ := e.api("GET", "/api/grants", ""); code != 401 {
		t.Fatalf("anonymous list: HTTP %d, want 401", code)
	}
	if code, _ := e.api("POST", "/api/grants/"+id+"/revoke", ""); code != 401 {
		t.Fatalf("anonymous revoke: HTTP %d, want 401", code)
	}
	if list, _ := grants.List(context.Background(), store); len(list) != 1 {
		t.Fatal("an anonymous revoke removed the grant")
	}
	if code, out := e.api("POST", "/api/grants/"+id+"/revoke", "alice"); code != 200 || out["tool"] != "write_note" {
		t.Fatalf("revoke: HTTP %d %v", code, out)
	}
	if _, ok, _ := store.UseStanding(context.Background(), id); ok {
		t.Fatal("the revoked grant can still be used")
	}
	if code, _ := e.api("POST", "/api/grants/"+id+"/revoke", "alice"); code != 404 {
		t.Fatalf("second revoke: HTTP %d, want 404", code)
	}
	none := newEnv(t, ServiceOptions{})
	if code, _ := none.api("GET", "/api/grants", "alice"); code != 404 {
		t.Fatalf("list without a ledger: HTTP %d, want 404", code)
	}
}
