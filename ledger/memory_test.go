package ledger_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

// memoryBackend: one Memory is the whole backend, so "two stores" are one
// object.
func memoryBackend(t *testing.T) func(t *testing.T) ledger.Store {
	m := ledger.NewMemory(0)
	t.Cleanup(func() { m.Close() })
	return func(*testing.T) ledger.Store { return m }
}

func TestConformance(t *testing.T) {
	ledgertest.Conformance(t, memoryBackend)
}

// Ended grants are kept only so long (see ledgertest.TombstonesBounded).
func TestStandingTombstonesBounded(t *testing.T) {
	m := ledger.NewMemory(0)
	defer m.Close()
	ledgertest.TombstonesBounded(t, m, func(ctx context.Context, now time.Time) error {
		return ledger.SweepStanding(m, ctx, now)
	})
}

func TestCheckNonce(t *testing.T) {
	for _, n := range ledgertest.ValidNonces() {
		if err := ledger.CheckNonce(n); err != nil {
			t.Errorf("CheckNonce(%q) = %v; want nil", n, err)
		}
	}
	for _, n := range ledgertest.InvalidNonces() {
		if err := ledger.CheckNonce(n); !errors.Is(err, ledger.ErrInvalidNonce) {
			t.Errorf("CheckNonce(%q) = %v; want ErrInvalidNonce", n, err)
		}
	}
}

func TestMemoryCapacity(t *testing.T) {
	ctx := context.Background()
	m := ledger.NewMemory(3)
	hour := time.Now().Add(time.Hour)
	old := []string{ledgertest.NewNonce(), ledgertest.NewNonce(), ledgertest.NewNonce()}
	for _, n := range old {
		if err := m.Issue(ctx, n, hour); err != nil {
			t.Fatalf("Issue: %v", err)
		}
	}
	extra := ledgertest.NewNonce()
	if err := m.Issue(ctx, extra, hour); !errors.Is(err, ledger.ErrFull) {
		t.Fatalf("Issue over capacity = %v; want ledger.ErrFull", err)
	}
	if ok, _ := m.Redeem(ctx, extra); ok {
		t.Fatal("a refused grant was redeemable")
	}
	if ok, err := m.Redeem(ctx, old[0]); !ok || err != nil {
		t.Fatalf("old grant after ledger.ErrFull: Redeem = %v, %v; want true, nil", ok, err)
	}
	// Redeeming freed a slot.
	if err := m.Issue(ctx, extra, hour); err != nil {
		t.Fatalf("Issue after a redemption freed a slot: %v", err)
	}
	for _, n := range append(old[1:], extra) {
		if ok, err := m.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("Redeem(%s) = %v, %v; want true, nil", n, ok, err)
		}
	}

	// Expired grants are purged to make room; live ones are not.
	m = ledger.NewMemory(2)
	now := time.Now()
	ledger.SetClock(m, func() time.Time { return now })
	if err := m.Issue(ctx, "short", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := m.Issue(ctx, "long", hour); err != nil {
		t.Fatal(err)
	}
	if err := m.Issue(ctx, "new", hour); !errors.Is(err, ledger.ErrFull) {
		t.Fatalf("Issue while full of live grants = %v; want ledger.ErrFull", err)
	}
	now = now.Add(time.Minute)
	if err := m.Issue(ctx, "new", hour); err != nil {
		t.Fatalf("Issue after one grant expired = %v; want nil", err)
	}
	if m.Len() != 2 {
		t.Fatalf("Len = %d; want 2 (expired grant purged)", m.Len())
	}
	for _, n := range []string{"long", "new"} {
		if ok, err := m.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("Redeem(%s) = %v, %v", n, ok, err)
		}
	}
	if ledger.Capacity(ledger.NewMemory(0)) != ledger.DefaultCapacity || ledger.Capacity(ledger.NewMemory(-5)) != ledger.DefaultCapacity {
		t.Fatal("non-positive capacity does not select DefaultCapacity")
	}
}

// TestMemoryExpiryBoundary pins the exclusive boundary: valid while
// now < expires.
func TestMemoryExpiryBoundary(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	exp := base.Add(time.Minute)
	cases := []struct {
		name string
		at   time.Time
		want bool
	}{
		{"1ns before expiry", exp.Add(-time.Nanosecond), true},
		{"at expiry", exp, false},
		{"1ns after expiry", exp.Add(time.Nanosecond), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := ledger.NewMemory(0)
			now := base
			ledger.SetClock(m, func() time.Time { return now })
			if err := m.Issue(context.Background(), "n", exp); err != nil {
				t.Fatal(err)
			}
			now = tc.at
			if ok, err := m.Redeem(context.Background(), "n"); ok != tc.want || err != nil {
				t.Fatalf("Redeem at %v = %v, %v; want %v, nil", tc.at.Sub(exp), ok, err, tc.want)
			}
		})
	}
	m := ledger.NewMemory(0)
	ledger.SetClock(m, func() time.Time { return exp })
	if err := m.Issue(context.Background(), "n", exp); !errors.Is(err, ledger.ErrExpired) {
		t.Fatalf("Issue with expires == now = %v; want ledger.ErrExpired", err)
	}
}

// BenchmarkRedeem: the memory store's redemption next to a bare map
// delete under a mutex (see ledgertest.BenchRedeem).
func BenchmarkRedeem(b *testing.B) {
	ledgertest.BenchRedeem(b, "memory", func(b *testing.B) (ledger.Store, func(*testing.B, []string, bool), ledgertest.RedeemFunc) {
		m := ledger.NewMemory(b.N + 1)
		var mu sync.Mutex
		rawMap := make(map[string]struct{}, b.N)
		fill := func(b *testing.B, nonces []string, raw bool) {
			exp := time.Now().Add(time.Hour)
			for _, n := range nonces {
				if raw {
					rawMap[n] = struct{}{}
				} else if err := m.Issue(context.Background(), n, exp); err != nil {
					b.Fatal(err)
				}
			}
		}
		rawOp := func(_ context.Context, n string) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			_, ok := rawMap[n]
			delete(rawMap, n)
			return ok, nil
		}
		return m, fill, rawOp
	})
}
