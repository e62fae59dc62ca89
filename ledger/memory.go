package ledger

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultCapacity is the memory store's bound on outstanding grants when
// NewMemory is given no positive capacity.
const DefaultCapacity = 100_000

// Memory is an in-process Store. It is exact and fast but private to one
// process: grants die with it and other replicas cannot redeem them.
type Memory struct {
	mu        sync.Mutex
	grants    map[string]time.Time
	capacity  int
	closed    bool
	lastSweep time.Time
	sweep     time.Duration
	// minExpiry is a lower bound of the earliest expiry held, so that a
	// full store only sweeps when a sweep can free something: a full store
	// of live grants must not cost O(n) per refused Issue.
	minExpiry time.Time
	now       func() time.Time
}

// NewMemory returns an in-process store holding at most capacity outstanding
// grants (DefaultCapacity when capacity <= 0). Expired grants are purged
// lazily: when the store is full and at most once per DefaultSweepInterval.
func NewMemory(capacity int) *Memory {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Memory{
		grants:    make(map[string]time.Time),
		capacity:  capacity,
		sweep:     DefaultSweepInterval,
		now:       time.Now,
		lastSweep: time.Now(),
	}
}

// Issue records nonce until expires. It refuses with ErrFull rather than
// evicting anything when capacity outstanding grants remain after expired
// ones are purged.
func (m *Memory) Issue(ctx context.Context, nonce string, expires time.Time) error {
	if err := ctx.Err(); err != nil {
		return unavailable("memory", "issue", err)
	}
	now := m.now()
	if err := checkIssue(nonce, expires, now); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if old, ok := m.grants[nonce]; ok && now.Before(old) {
		return ErrExists
	}
	if now.Sub(m.lastSweep) >= m.sweep || len(m.grants) >= m.capacity && !now.Before(m.minExpiry) {
		m.purgeLocked(now)
	}
	if _, ok := m.grants[nonce]; !ok && len(m.grants) >= m.capacity {
		return fmt.Errorf("%w (memory capacity %d)", ErrFull, m.capacity)
	}
	m.grants[nonce] = expires
	if len(m.grants) == 1 || expires.Before(m.minExpiry) {
		m.minExpiry = expires
	}
	return nil
}

// Redeem removes nonce and reports whether it was outstanding and unexpired.
func (m *Memory) Redeem(ctx context.Context, nonce string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, unavailable("memory", "redeem", err)
	}
	if err := checkNonce(nonce); err != nil {
		return false, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, ErrClosed
	}
	expires, ok := m.grants[nonce]
	if !ok {
		return false, nil
	}
	delete(m.grants, nonce)
	return now.Before(expires), nil
}

// Len reports how many grants the store holds, expired ones not yet purged
// included.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.grants)
}

// Close forgets every grant; later calls fail with ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.grants = nil
	return nil
}

func (m *Memory) purgeLocked(now time.Time) {
	var earliest time.Time
	for k, exp := range m.grants {
		if !now.Before(exp) {
			delete(m.grants, k)
		} else if earliest.IsZero() || exp.Before(earliest) {
			earliest = exp
		}
	}
	m.minExpiry = earliest
	m.lastSweep = now
}
