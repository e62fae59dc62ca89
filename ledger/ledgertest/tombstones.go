package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// TombstonesBounded checks a store whose ended grants are swept by sweep
// (the store's own cleanup, judged at now): a claimed end is kept for
// ledger.StandingClaimedRetention, an unclaimed one until
// ledger.StandingEndHorizon after its expiry, and live grants are never
// swept (control). A kept ID refuses a put of the same ID, which is how the
// check sees a tombstone.
func TombstonesBounded(t *testing.T, st ledger.Store, sweep func(ctx context.Context, now time.Time) error) {
	ctx := context.Background()
	s := standingOf(t, st)
	put := func(exp time.Time) string {
		id := NewNonce()
		if err := s.PutStanding(ctx, ledger.Standing{ID: id, Scope: NewNonce(), Expires: exp, Uses: 2}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	claimed, unclaimed, live := put(time.Now().Add(time.Hour)), put(time.Now().Add(time.Hour)), put(time.Now().Add(30*24*time.Hour))
	for _, id := range []string{claimed, unclaimed} {
		if ok, err := s.RevokeStanding(ctx, id, ledger.Revocation{}); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	if _, ok, err := s.ClaimStandingEnd(ctx, claimed); !ok || err != nil {
		t.Fatal(ok, err)
	}
	kept := func(id string) bool {
		// A kept ID refuses a put of the same ID.
		err := s.PutStanding(ctx, ledger.Standing{ID: id, Scope: NewNonce(), Expires: time.Now().Add(time.Minute), Uses: 1})
		if err == nil {
			if ok, err := s.RevokeStanding(ctx, id, ledger.Revocation{}); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		return err != nil
	}
	if err := sweep(ctx, time.Now().Add(ledger.StandingClaimedRetention-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !kept(claimed) || !kept(unclaimed) {
		t.Fatal("a tombstone was swept before its retention")
	}
	if err := sweep(ctx, time.Now().Add(ledger.StandingClaimedRetention+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if kept(claimed) || !kept(unclaimed) {
		t.Fatalf("after the claimed retention: claimed kept = %v, unclaimed kept = %v; want false, true", kept(claimed), kept(unclaimed))
	}
	if err := sweep(ctx, time.Now().Add(time.Hour+ledger.StandingEndHorizon+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if kept(unclaimed) {
		t.Fatal("an unclaimed end outlived its horizon")
	}
	if _, ok, err := s.UseStanding(ctx, live); !ok || err != nil {
		t.Fatalf("control: the live grant after sweeps = %v, %v", ok, err)
	}
}
