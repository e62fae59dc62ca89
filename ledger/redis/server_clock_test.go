package redis

import (
	"context"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

// Replicas sharing a Redis ledger judge a standing grant's expiry by the
// Redis server's clock, as PostgreSQL replicas do by the database's
// now(): a replica whose own clock is an hour behind cannot use (or list)
// a grant that has expired, and one an hour ahead is not refused a live
// grant, cannot revoke-fail it or claim its end early. A replica with a
// right clock (the control) sees the same answers.
func TestRedisStandingExpiryByServerClock(t *testing.T) {
	ctx := context.Background()
	url, _, _ := redisBackend(t)
	replica := func(skew time.Duration) *Store {
		t.Helper()
		s, err := ledger.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		r := s.(*Store)
		r.now = func() time.Time { return time.Now().Add(skew) }
		return r
	}
	right, slow, fast := replica(0), replica(-time.Hour), replica(time.Hour)
	scope := ledgertest.NewNonce()

	// Expired a minute ago by every right clock; the slow replica still
	// takes it for live, so it can store it: the server must refuse it.
	expired := ledgertest.NewNonce()
	if err := slow.PutStanding(ctx, ledger.Standing{ID: expired, Scope: scope, Expires: time.Now().Add(-time.Minute), Uses: 5}); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Store{"slow": slow, "right": right} {
		if _, ok, err := r.UseStanding(ctx, expired); ok || err != nil {
			t.Errorf("%s replica used an expired grant: %v, %v", name, ok, err)
		}
		if got, err := r.StandingFor(ctx, scope); len(got) != 0 || err != nil {
			t.Errorf("%s replica lists an expired grant as live: %+v, %v", name, got, err)
		}
		if ok, err := r.RevokeStanding(ctx, expired, ledger.Revocation{Reason: ledger.EndRevoked, By: "alice"}); ok || err != nil {
			t.Errorf("%s replica revoked an expired grant: %v, %v", name, ok, err)
		}
	}
	if e, ok, err := slow.ClaimStandingEnd(ctx, expired); !ok || err != nil || e.Reason != ledger.EndExpired {
		t.Errorf("the slow replica cannot claim an expired grant's end: %+v, %v, %v", e, ok, err)
	}

	// Live for ten minutes by every right clock; the fast replica takes
	// it for expired.
	live := ledgertest.NewNonce()
	if err := right.PutStanding(ctx, ledger.Standing{ID: live, Scope: scope, Expires: time.Now().Add(10 * time.Minute), Uses: 5}); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Store{"fast": fast, "right": right} {
		if left, ok, err := r.UseStanding(ctx, live); !ok || err != nil {
			t.Errorf("%s replica was refused a live grant: %d, %v, %v", name, left, ok, err)
		}
		if got, err := r.StandingFor(ctx, scope); len(got) != 1 || got[0].ID != live || err != nil {
			t.Errorf("%s replica does not list the live grant: %+v, %v", name, got, err)
		}
		if ends, err := r.EndedStanding(ctx); err != nil || len(ends) != 0 {
			t.Errorf("%s replica lists ends of live grants: %+v, %v", name, ends, err)
		}
		if _, ok, err := r.ClaimStandingEnd(ctx, live); ok || err != nil {
			t.Errorf("%s replica claimed a live grant's end: %v, %v", name, ok, err)
		}
	}
	if ok, err := fast.RevokeStanding(ctx, live, ledger.Revocation{Reason: ledger.EndRevoked, By: "alice"}); !ok || err != nil {
		t.Fatalf("the fast replica could not revoke a live grant: %v, %v", ok, err)
	}
	if _, ok, err := right.UseStanding(ctx, live); ok || err != nil {
		t.Errorf("a revoked grant was used: %v, %v", ok, err)
	}
	if e, ok, err := fast.ClaimStandingEnd(ctx, live); !ok || err != nil || e.Reason != ledger.EndRevoked || e.By != "alice" {
		t.Errorf("the revoked grant's end: %+v, %v, %v", e, ok, err)
	}
}
