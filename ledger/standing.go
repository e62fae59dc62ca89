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

// StandingStore is implemented by every store of this module. A use is one
// atomic step in the store: K uses raced from any number of clients and
// replicas succeed exactly K times.
type StandingStore interface {
	// PutStanding records a grant. It refuses an existing ID (ErrExists),
	// an expiry not in the future (ErrExpired), fewer than one use or more
	// than MaxStandingUses, and Data over MaxStandingData bytes.
	PutStanding(ctx context.Context, s Standing) error
	// StandingFor lists the live grants of scope ("" lists every live
	// grant): unexpired, not revoked, with uses left. Ended grants the
	// store still keeps (see StandingEnd) are never listed.
	StandingFor(ctx context.Context, scope string) ([]Standing, error)
	// UseStanding takes one use. It reports ok with the uses left after
	// this one, or ok false with a nil error when the grant is unknown,
	// revoked, expired or used up. Any error means not approved.
	UseStanding(ctx context.Context, id string) (left int, ok bool, err error)
	// RevokeStanding ends a live grant for every client of the store
	// before it returns, and keeps why and by whom until the end is
	// claimed. It reports whether a live grant was ended; a grant already
	// ended (by expiry, its last use or a revocation) is left as it is.
	RevokeStanding(ctx context.Context, id string, r Revocation) (bool, error)
	// EndedStanding lists ended grants whose end nobody has claimed yet,
	// at most MaxEndedListed of them, oldest expiry first.
	EndedStanding(ctx context.Context) ([]StandingEnd, error)
	// ClaimStandingEnd claims the end of grant id so that one gate journals
	// it: over every client of the store, exactly one claim of an ended
	// grant succeeds. It reports ok false with a nil error when the grant is
	// unknown, still live or already claimed. A claim changes nothing a use
	// looks at: it cannot make a grant live again or longer.
	ClaimStandingEnd(ctx context.Context, id string) (StandingEnd, bool, error)
}

// Standing returns m itself: it keeps standing grants.
func (m *Memory) Standing() StandingStore { return m }

// Why a standing grant ended.
const (
	EndExpired       = "expired"
	EndUsedUp        = "used-up"
	EndRevoked       = "revoked"
	EndPolicyChanged = "policy-changed"
)

// Revocation says why and by whom a live grant is ended before its time.
type Revocation struct {
	Reason string // EndRevoked (also when empty) or EndPolicyChanged
	By     string // who ended it, and through what; at most MaxRevokedBy bytes
}

// StandingEnd is an ended grant as the store keeps it (a tombstone), so that
// a gate can journal its end, possibly long after: the end of a grant nobody
// watched expire or revoked from another process is journaled by the next
// gate that looks. A use never sees it.
type StandingEnd struct {
	Standing           // as last kept; Uses is 0 once used up or revoked
	Reason   string    // EndExpired, EndUsedUp, EndRevoked or EndPolicyChanged
	By       string    // the Revocation's By; empty for expiry and last use
	At       time.Time // when it was revoked, or its expiry; zero when used up
}

const (
	// MaxRevokedBy bounds a Revocation's By.
	MaxRevokedBy = 512
	// MaxEndedListed bounds one EndedStanding answer; a gate lists again
	// after claiming.
	MaxEndedListed = 1000
	// StandingEndHorizon is how long after its expiry a store keeps an
	// ended grant whose end nobody claimed (no gate of its server ran
	// meanwhile): the store does not grow without bound, and that end is
	// then never journaled.
	StandingEndHorizon = 7 * 24 * time.Hour
	// StandingClaimedRetention is how long a store keeps an ended grant
	// after its end was claimed.
	StandingClaimedRetention = time.Hour
)

// CheckRevocation validates a Revocation and gives an empty Reason its
// default, EndRevoked.
func CheckRevocation(r *Revocation) error {
	switch r.Reason {
	case "":
		r.Reason = EndRevoked
	case EndRevoked, EndPolicyChanged:
	default:
		return fmt.Errorf("%w: revocation reason %q", ErrInvalidStanding, r.Reason)
	}
	if len(r.By) > MaxRevokedBy {
		return fmt.Errorf("%w: revoked by %d bytes, at most %d", ErrInvalidStanding, len(r.By), MaxRevokedBy)
	}
	return nil
}

// EndReason is the reason of an end: the one the store recorded, or for an
// end it did not record, used up when no uses are left and otherwise expired.
func EndReason(recorded string, uses int) string {
	switch {
	case recorded != "":
		return recorded
	case uses <= 0:
		return EndUsedUp
	default:
		return EndExpired
	}
}

// EndAt is when an end of reason happened as far as the store knows: the
// expiry for EndExpired, the zero time for EndUsedUp, and otherwise when it
// was revoked.
func EndAt(reason string, expires, revoked time.Time) time.Time {
	switch reason {
	case EndExpired:
		return expires
	case EndUsedUp:
		return time.Time{}
	default:
		return revoked
	}
}

const (
	// MaxStandingUses bounds the uses of one standing grant.
	MaxStandingUses = 1_000_000
	// MaxStandingData bounds a grant's opaque data.
	MaxStandingData = 64 << 10
)

// ErrInvalidStanding means PutStanding was given uses or data out of bounds.
var ErrInvalidStanding = errors.New("ledger: invalid standing grant")

// CheckStanding validates PutStanding's argument against the local clock
// now: ID and Scope in nonce syntax, an expiry after now, 1 to
// MaxStandingUses uses and at most MaxStandingData bytes of data.
func CheckStanding(s Standing, now time.Time) error {
	if err := CheckIssue(s.ID, s.Expires, now); err != nil {
		return err
	}
	if err := CheckNonce(s.Scope); err != nil {
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

// CheckScope validates StandingFor's scope: "" (every scope) or nonce
// syntax.
func CheckScope(scope string) error {
	if scope == "" {
		return nil
	}
	return CheckNonce(scope)
}
