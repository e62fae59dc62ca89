package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

// A pooled connection the server terminates (pg_terminate_backend, as a
// failover or an operator does) costs no refused call: issue, redeem and an
// outcome's read are retried once on another connection. The redemption
// still happens once: a second redeem of the same grant is refused.
func TestKilledPooledConnectionIsRetriedOnce(t *testing.T) {
	u, admin, _ := postgresBackend(t)
	app := "mcpsafe_retry_" + ledgertest.RandHex(6)
	s, err := Open(context.Background(), ledgertest.WithParams(u, "application_name", app))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	kill := func() {
		t.Helper()
		// Terminate every connection of the store's pool, each call
		// waiting (up to 5 s) until the server has ended it, so the pool
		// holds only dead ones.
		var all bool
		if err := admin.QueryRow(ctx, `SELECT coalesce(bool_and(pg_terminate_backend(pid, 5000)), true) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&all); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if !all || n != 0 {
			t.Fatalf("%d connections of the store survive pg_terminate_backend (all ended in time: %v)", n, all)
		}
	}
	hour := time.Now().Add(time.Hour)
	if err := s.Issue(ctx, "before", hour); err != nil {
		t.Fatal(err)
	}
	kill()
	if err := s.Issue(ctx, "after", hour); err != nil {
		t.Fatalf("issue on a killed pooled connection: %v", err)
	}
	kill()
	if ok, err := s.Redeem(ctx, "before"); err != nil || !ok {
		t.Fatalf("redeem on a killed pooled connection: %v %v", ok, err)
	}
	if ok, err := s.Redeem(ctx, "before"); err != nil || ok {
		t.Fatalf("second redeem of one grant: ok=%v err=%v", ok, err)
	}
	if err := s.PutOutcome(ctx, "out", []byte("x"), hour); err != nil {
		t.Fatal(err)
	}
	kill()
	if data, ok, err := s.Outcome(ctx, "out"); err != nil || !ok || string(data) != "x" {
		t.Fatalf("outcome on a killed pooled connection: %q %v %v", data, ok, err)
	}
	// Control: an issue of an id that exists is still ErrExists, not
	// mistaken for this call's own insert.
	if err := s.Issue(ctx, "after", hour.Add(time.Minute)); err != ledger.ErrExists {
		t.Fatalf("issue of an existing nonce: %v", err)
	}
}
