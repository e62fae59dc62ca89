package mcpsafe

import (
	"errors"
	"sync"
	"time"
)

// pending caps outstanding grants so that a flood of first calls cannot
// exhaust memory. Over a cap, new requests are refused; existing grants are
// never dropped to make room.
type pending struct {
	mu           sync.Mutex
	max, perUser int
	byNonce      map[string]pendingEntry
	byUser       map[string]int
}

type pendingEntry struct {
	principal string
	expires   time.Time
}

func newPending(max, perUser int) *pending {
	return &pending{max: max, perUser: perUser, byNonce: map[string]pendingEntry{}, byUser: map[string]int{}}
}

var (
	errTooManyPending     = errors.New("too many approvals are pending on this server")
	errTooManyPendingUser = errors.New("too many approvals are pending for this principal")
)

func (p *pending) add(nonce, principal string, expires, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.byNonce) >= p.max || p.byUser[principal] >= p.perUser {
		p.sweep(now)
	}
	if len(p.byNonce) >= p.max {
		return errTooManyPending
	}
	if p.byUser[principal] >= p.perUser {
		return errTooManyPendingUser
	}
	p.byNonce[nonce] = pendingEntry{principal, expires}
	p.byUser[principal]++
	return nil
}

func (p *pending) done(nonce string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(nonce)
}

func (p *pending) removeLocked(nonce string) {
	e, ok := p.byNonce[nonce]
	if !ok {
		return
	}
	delete(p.byNonce, nonce)
	if p.byUser[e.principal]--; p.byUser[e.principal] <= 0 {
		delete(p.byUser, e.principal)
	}
}

// live sweeps the expired entries and counts the rest.
func (p *pending) live(now time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sweep(now)
	return len(p.byNonce)
}

func (p *pending) sweep(now time.Time) {
	var expired []string
	for n, e := range p.byNonce {
		if !now.Before(e.expires) {
			expired = append(expired, n)
		}
	}
	for _, n := range expired {
		p.removeLocked(n)
	}
}
