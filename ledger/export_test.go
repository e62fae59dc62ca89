package ledger

import (
	"context"
	"time"
)

// Hooks for the external tests (package ledger_test), which run the
// conformance suite from ledger/ledgertest: that package imports ledger,
// so tests inside package ledger could not.

// SetClock makes m judge expiry by now.
func SetClock(m *Memory, now func() time.Time) { m.now = now }

// Capacity is m's bound on outstanding grants.
func Capacity(m *Memory) int { return m.capacity }

// SweepStanding forgets m's tombstones past their retention, judged at now.
func SweepStanding(m *Memory, ctx context.Context, now time.Time) error {
	return m.sweepStanding(ctx, now)
}
