package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Standing is a standing grant as a store keeps it: an approval that covers
// up to Uses more calls until Expires (exclusive). The store counts uses and
// judges expiry; it never reads Data, which belongs to the caller (the gate
// keeps the sealed grant there).
type Standing struct {
	ID      string    // nonce syntax, unique
	Scope   string    // lookup key, nonce syntax (the gate: a digest of tool and principal)
	Expires time.Time // exclusive
	Uses    int       // uses left
	Data    []byte
}

// StandingStore is implemented by every store in this package. A use is one
// atomic step in the store: K uses raced from any number of clients and
// replicas succeed exactly K times.
type StandingStore interface {
	// PutStanding records a grant. It refuses an existing ID (ErrExists),
	// an expiry not in the future (ErrExpired), fewer than one use or more
	// than MaxStandingUses, and Data over MaxStandingData bytes.
	PutStanding(ctx context.Context, s Standing) error
	// StandingFor lists the live grants of scope ("" lists every live
	// grant): unexpired, not revoked, with uses left.
	StandingFor(ctx context.Context, scope string) ([]Standing, error)
	// UseStanding takes one use. It reports ok with the uses left after
	// this one, or ok false with a nil error when the grant is unknown,
	// revoked, expired or used up. Any error means not approved.
	UseStanding(ctx context.Context, id string) (left int, ok bool, err error)
	// RevokeStanding ends a grant for every client of the store before it
	// returns. It reports whether a live grant was removed.
	RevokeStanding(ctx context.Context, id string) (bool, error)
}

const (
	// MaxStandingUses bounds the uses of one standing grant.
	MaxStandingUses = 1_000_000
	// MaxStandingData bounds a grant's opaque data.
	MaxStandingData = 64 << 10
)

// ErrInvalidStanding means PutStanding was given uses or data out of bounds.
var ErrInvalidStanding = errors.New("ledger: invalid standing grant")

func checkStanding(s Standing, now time.Time) error {
	if err := checkIssue(s.ID, s.Expires, now); err != nil {
		return err
	}
	if err := checkNonce(s.Scope); err != nil {
		return fmt.Errorf("scope: %w", err)
	}
	if s.Uses < 1 || s.Uses > MaxStandingUses {
		return fmt.Errorf("%w: %d uses, want 1..%d", ErrInvalidStanding, s.Uses, MaxStandingUses)
	}
	if len(s.Data) > MaxStandingData {
		return fmt.Errorf("%w: %d bytes of data, at most %d", ErrInvalidStanding, len(s.Data), MaxStandingData)
	}
	return nil
}

func checkScope(scope string) error {
	if scope == "" {
		return nil
	}
	return checkNonce(scope)
}
