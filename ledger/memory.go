package ledger

import (
	"context"
	"fmt"
	"slices"
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
	standing  map[string]*memStanding
	outcomes  map[string]memOutcome
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
		return Unavailable("memory", "issue", err)
	}
	now := m.now()
	if err := CheckIssue(nonce, expires, now); err != nil {
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
		return false, Unavailable("memory", "redeem", err)
	}
	if err := CheckNonce(nonce); err != nil {
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
	m.standing = nil
	m.outcomes = nil
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

// PutStanding records a standing grant. Standing grants do not count
// against the capacity of single-use grants; their number is bounded by the
// gate, which creates one only on a human's answer.
func (m *Memory) PutStanding(ctx context.Context, s Standing) error {
	if err := ctx.Err(); err != nil {
		return Unavailable("memory", "put standing", err)
	}
	now := m.now()
	if err := CheckStanding(s, now); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.standing == nil {
		m.standing = map[string]*memStanding{}
	}
	// An ended grant is kept until its end is claimed and then some: its
	// ID stays taken, so a put cannot bring it back.
	if _, ok := m.standing[s.ID]; ok {
		return ErrExists
	}
	s.Data = append([]byte(nil), s.Data...)
	m.standing[s.ID] = &memStanding{Standing: s}
	return nil
}

// memStanding is a standing grant and, once it ended, its tombstone.
type memStanding struct {
	Standing
	ended   string // recorded reason (revocations); "" otherwise
	by      string
	endedAt time.Time
	claimed time.Time // zero until the end is claimed
}

func (s *memStanding) live(now time.Time) bool { return now.Before(s.Expires) && s.Uses > 0 }

// gone reports whether the store may forget the tombstone.
func (s *memStanding) gone(now time.Time) bool {
	if !s.claimed.IsZero() {
		return !now.Before(s.claimed.Add(StandingClaimedRetention))
	}
	return !now.Before(s.Expires.Add(StandingEndHorizon))
}

func (s *memStanding) end() StandingEnd {
	r := EndReason(s.ended, s.Uses)
	e := StandingEnd{Standing: s.Standing, Reason: r, By: s.by, At: EndAt(r, s.Expires, s.endedAt)}
	e.Data = append([]byte(nil), s.Data...)
	return e
}

// StandingFor lists live standing grants of scope, or all when scope is "".
func (m *Memory) StandingFor(ctx context.Context, scope string) ([]Standing, error) {
	if err := ctx.Err(); err != nil {
		return nil, Unavailable("memory", "list standing", err)
	}
	if err := CheckScope(scope); err != nil {
		return nil, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []Standing
	for id, s := range m.standing {
		if !s.live(now) {
			if s.gone(now) {
				delete(m.standing, id)
			}
			continue
		}
		if scope == "" || s.Scope == scope {
			c := s.Standing
			c.Data = append([]byte(nil), s.Data...)
			out = append(out, c)
		}
	}
	return out, nil
}

// UseStanding takes one use under the store's lock.
func (m *Memory) UseStanding(ctx context.Context, id string) (int, bool, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, Unavailable("memory", "use standing", err)
	}
	if err := CheckNonce(id); err != nil {
		return 0, false, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, false, ErrClosed
	}
	s, ok := m.standing[id]
	if !ok || !now.Before(s.Expires) || s.Uses <= 0 {
		return 0, false, nil
	}
	s.Uses--
	return s.Uses, true, nil
}

// RevokeStanding ends a live standing grant: no use is left, and the
// tombstone says why and by whom.
func (m *Memory) RevokeStanding(ctx context.Context, id string, r Revocation) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, Unavailable("memory", "revoke standing", err)
	}
	if err := CheckNonce(id); err != nil {
		return false, err
	}
	if err := CheckRevocation(&r); err != nil {
		return false, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false, ErrClosed
	}
	s, ok := m.standing[id]
	if !ok || !s.live(now) {
		return false, nil
	}
	s.Uses, s.ended, s.by, s.endedAt = 0, r.Reason, r.By, now
	return true, nil
}

// EndedStanding lists unclaimed ends, and forgets tombstones past their
// retention.
func (m *Memory) EndedStanding(ctx context.Context) ([]StandingEnd, error) {
	if err := ctx.Err(); err != nil {
		return nil, Unavailable("memory", "list ended standing", err)
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	var out []StandingEnd
	for id, s := range m.standing {
		switch {
		case s.live(now):
		case s.gone(now):
			delete(m.standing, id)
		case s.claimed.IsZero():
			out = append(out, s.end())
		}
	}
	slices.SortFunc(out, func(a, b StandingEnd) int { return a.Expires.Compare(b.Expires) })
	if len(out) > MaxEndedListed {
		out = out[:MaxEndedListed]
	}
	return out, nil
}

// ClaimStandingEnd claims an unclaimed end under the store's lock.
func (m *Memory) ClaimStandingEnd(ctx context.Context, id string) (StandingEnd, bool, error) {
	if err := ctx.Err(); err != nil {
		return StandingEnd{}, false, Unavailable("memory", "claim standing end", err)
	}
	if err := CheckNonce(id); err != nil {
		return StandingEnd{}, false, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return StandingEnd{}, false, ErrClosed
	}
	s, ok := m.standing[id]
	if !ok || s.live(now) || !s.claimed.IsZero() {
		return StandingEnd{}, false, nil
	}
	s.claimed = now
	return s.end(), true, nil
}

// sweepStanding forgets tombstones past their retention, judged at now.
func (m *Memory) sweepStanding(_ context.Context, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, s := range m.standing {
		if !s.live(now) && s.gone(now) {
			delete(m.standing, id)
		}
	}
	return nil
}
