package ledger

import (
	"context"
	"fmt"
	"time"
)

// MaxOutcomeData bounds what one outcome may hold. A caller with more to
// keep stores less (the gate keeps a short result that says so).
const MaxOutcomeData = 256 << 10

// OutcomeStore keeps what a decision produced until whoever asks for it
// later: the gate's approval card runs a call when the person decides, and
// the model's handle picks the outcome up afterwards, on whichever replica
// it reaches. Every store of this module implements it, so the outcome
// lives where the grants live: in memory for one process, in a shared
// store for replicas (and across restarts of a durable one).
type OutcomeStore interface {
	// PutOutcome records data under id (nonce syntax) until expires
	// (exclusive). The first put wins: an id already holding an unexpired
	// outcome is ErrExists, and data over MaxOutcomeData, or an expiry not
	// in the future, is refused.
	PutOutcome(ctx context.Context, id string, data []byte, expires time.Time) error
	// Outcome returns what was put under id, or ok false with a nil error
	// when nothing unexpired was. Any error means "cannot tell".
	Outcome(ctx context.Context, id string) (data []byte, ok bool, err error)
}

// CheckOutcome validates PutOutcome's arguments against the local clock
// now (a backend whose clock decides expiry checks the expiry again there).
func CheckOutcome(id string, data []byte, expires, now time.Time) error {
	if err := CheckIssue(id, expires, now); err != nil {
		return err
	}
	if len(data) > MaxOutcomeData {
		return fmt.Errorf("ledger: outcome of %d bytes, at most %d", len(data), MaxOutcomeData)
	}
	return nil
}

// Outcomes returns m itself: it keeps outcomes, in this process.
func (m *Memory) Outcomes() OutcomeStore { return m }

type memOutcome struct {
	data    []byte
	expires time.Time
}

// PutOutcome keeps a copy of data until expires.
func (m *Memory) PutOutcome(ctx context.Context, id string, data []byte, expires time.Time) error {
	if err := ctx.Err(); err != nil {
		return Unavailable("memory", "put outcome", err)
	}
	now := m.now()
	if err := CheckOutcome(id, data, expires, now); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.outcomes == nil {
		m.outcomes = map[string]memOutcome{}
	}
	for k, o := range m.outcomes { // few: one per card decision within its grant's life
		if !now.Before(o.expires) {
			delete(m.outcomes, k)
		}
	}
	if _, ok := m.outcomes[id]; ok {
		return ErrExists
	}
	if len(m.outcomes) >= m.capacity {
		return fmt.Errorf("%w (memory capacity %d outcomes)", ErrFull, m.capacity)
	}
	m.outcomes[id] = memOutcome{data: append([]byte(nil), data...), expires: expires}
	return nil
}

// Outcome returns a copy of what was put under id.
func (m *Memory) Outcome(ctx context.Context, id string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, Unavailable("memory", "outcome", err)
	}
	if err := CheckNonce(id); err != nil {
		return nil, false, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false, ErrClosed
	}
	o, ok := m.outcomes[id]
	if !ok || !now.Before(o.expires) {
		return nil, false, nil
	}
	return append([]byte(nil), o.data...), true, nil
}
