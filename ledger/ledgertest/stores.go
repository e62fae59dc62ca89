package ledgertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// SweepRemovesExpired checks that a store without native expiry, opened
// from u, deletes expired rows on its own and keeps live ones; rows counts
// the rows of its grants table.
func SweepRemovesExpired(t *testing.T, u string, rows func() int) {
	ctx := context.Background()
	s, err := ledger.Open(ctx, WithParams(u, "ledger_sweep", "50ms"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 5; i++ {
		if err := s.Issue(ctx, NewNonce(), time.Now().Add(20*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	live := NewNonce()
	if err := s.Issue(ctx, live, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for rows() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("expired rows not swept: %d rows remain", rows())
		}
		time.Sleep(25 * time.Millisecond)
	}
	if ok, err := s.Redeem(ctx, live); !ok || err != nil {
		t.Fatalf("control: live grant after sweep: %v, %v", ok, err)
	}
}

// ConcurrentOpen starts several replicas at once on the fresh backend u:
// schema creation must not race (CREATE TABLE IF NOT EXISTS is not atomic
// against itself in PostgreSQL; SQLite switches to WAL on first open), and
// a grant issued by one is redeemed exactly once over all.
func ConcurrentOpen(t *testing.T, u string) {
	const replicas = 6
	stores := make([]ledger.Store, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = ledger.Open(context.Background(), u)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: Open: %v", i, err)
		}
		defer stores[i].Close()
	}
	n := NewNonce()
	if err := stores[0].Issue(context.Background(), n, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if wins, errc := Race(context.Background(), stores, n, 60); wins != 1 || errc != 0 {
		t.Fatalf("wins = %d, errors = %d; want 1, 0", wins, errc)
	}
}
