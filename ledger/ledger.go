package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Ledger is what a gate needs of a store (mcpsafe.Options.Ledger): it
// records issued grants and redeems each at most once. Redeem reports true
// exactly once for an issued, unexpired nonce.
//
// Standing returns the store that keeps standing grants, or nil when the
// ledger keeps none (tools that offer grants are then a startup error).
// Every store of this package and of its backends (ledger/sqlite,
// ledger/redis, ledger/postgres) returns itself. A wrapper (metrics,
// tracing, fault injection) must forward it explicitly: the capability is
// part of the type, never found by a type assertion that a wrapper would
// silently defeat.
//
// Outcomes returns the store that keeps decisions' outcomes for a later
// look-up (the approval card's, for the model's handle), or nil when the
// ledger keeps none: the gate then keeps them in its own process, and a
// handle finds its outcome only there. Every store of this module returns
// itself; a wrapper forwards it explicitly, like Standing.
type Ledger interface {
	Issue(ctx context.Context, nonce string, expires time.Time) error
	Redeem(ctx context.Context, nonce string) (bool, error)
	Standing() StandingStore
	Outcomes() OutcomeStore
}

// Store records outstanding grants and redeems each at most once: a
// Ledger that can be closed.
//
// Redeem reports true exactly once for a nonce that was issued and has not
// expired (valid while now < expires). It reports false with a nil error for
// an unknown, already redeemed or expired nonce, and false with an error when
// the store cannot answer. A caller must treat any error as "not approved".
//
// Standing returns the store's standing grants (every store of this
// module keeps them, and returns itself). It is a method and not a type
// to assert on, so that a wrapper around a Store must say what becomes of
// it: a capability found by type assertion is silently lost behind any
// wrapper that does not happen to implement it too.
type Store interface {
	Ledger
	Close() error
}

var (
	// ErrUnavailable means the store could not give a trustworthy answer: it
	// is down, too slow, locked, or answered something that is not ours.
	// Errors from stores wrap it together with the cause.
	ErrUnavailable = errors.New("ledger unavailable")
	// ErrClosed is returned by every call on a closed store. It wraps
	// ErrUnavailable: for the caller a closed store is an absent store.
	ErrClosed = fmt.Errorf("%w: store is closed", ErrUnavailable)
	// ErrFull means the store refuses new grants because it holds as many
	// outstanding grants as it may. Old grants are never dropped to make
	// room: that would silently revoke approvals a human already gave.
	ErrFull = errors.New("ledger full: too many outstanding grants")
	// ErrExists means the nonce is already outstanding. Issuing it again
	// would let two grants share one redemption.
	ErrExists = errors.New("ledger: nonce already issued")
	// ErrExpired means Issue was asked to record a grant that is already
	// expired (expires not after now).
	ErrExpired = errors.New("ledger: expiry is not in the future")
	// ErrInvalidNonce means the nonce is empty, too long, or contains a
	// character outside [A-Za-z0-9_-].
	ErrInvalidNonce = errors.New("ledger: invalid nonce")
)

const (
	// MaxNonceLen bounds nonces so that a store key stays small.
	MaxNonceLen = 128
	// DefaultTimeout bounds every store operation that has no shorter
	// context deadline. A gated tool call waits at most this long for the
	// ledger before it is refused.
	DefaultTimeout = 2 * time.Second
	// DefaultSweepInterval is how often stores without native expiry delete
	// expired grants.
	DefaultSweepInterval = time.Minute
)

// CheckNonce reports whether nonce has the syntax every store accepts,
// [A-Za-z0-9_-]{1,MaxNonceLen} (an error wrapping ErrInvalidNonce
// otherwise). It keeps arbitrary bytes out of keys, file names and SQL
// parameters. The gate's nonces are 128-bit random values in base64url or
// hex, which this accepts. A backend checks every nonce and ID with it
// before it reaches the store.
func CheckNonce(nonce string) error {
	if nonce == "" {
		return fmt.Errorf("%w: empty", ErrInvalidNonce)
	}
	if len(nonce) > MaxNonceLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidNonce, len(nonce), MaxNonceLen)
	}
	for i := 0; i < len(nonce); i++ {
		c := nonce[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
		if !ok {
			return fmt.Errorf("%w: byte %#x at offset %d", ErrInvalidNonce, c, i)
		}
	}
	return nil
}

// CheckIssue validates Issue's arguments against the local clock now:
// the nonce's syntax, and an expiry after now (ErrExpired otherwise).
func CheckIssue(nonce string, expires, now time.Time) error {
	if err := CheckNonce(nonce); err != nil {
		return err
	}
	if !expires.After(now) {
		return fmt.Errorf("%w: expires %s, now %s", ErrExpired,
			expires.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// Unavailable wraps a store failure so that errors.Is(err, ErrUnavailable)
// holds and the cause stays visible to errors.Is/As and in the message:
// "ledger unavailable: STORE OP: CAUSE". Backends return it for every
// failure of the store itself (not for invalid arguments).
func Unavailable(store, op string, cause error) error {
	return &storeError{store: store, op: op, cause: cause}
}

type storeError struct {
	store, op string
	cause     error
}

func (e *storeError) Error() string {
	return fmt.Sprintf("ledger unavailable: %s %s: %v", e.store, e.op, e.cause)
}

func (e *storeError) Unwrap() []error { return []error{ErrUnavailable, e.cause} }

// An Opener opens the store a URL names. It reports a malformed URL as a
// plain configuration error, and a store it cannot reach as an error
// wrapping ErrUnavailable.
type Opener func(ctx context.Context, rawURL string) (Store, error)

var registry = struct {
	sync.RWMutex
	openers map[string]Opener
}{openers: map[string]Opener{"memory": openMemory}}

// backendPackages names the package to import for each scheme this module
// has a backend for, so that Open can say which import is missing.
var backendPackages = map[string]string{
	"file":       "github.com/mcpsafe/mcpsafe/ledger/sqlite",
	"redis":      "github.com/mcpsafe/mcpsafe/ledger/redis",
	"rediss":     "github.com/mcpsafe/mcpsafe/ledger/redis",
	"postgres":   "github.com/mcpsafe/mcpsafe/ledger/postgres",
	"postgresql": "github.com/mcpsafe/mcpsafe/ledger/postgres",
}

// Register makes Open hand the URLs of scheme (compared without regard to
// case) to open. A backend package registers its schemes from its init
// function, so that importing the package, even as
//
//	import _ "github.com/mcpsafe/mcpsafe/ledger/redis"
//
// links it in; a program links in only the drivers it imports. Register
// panics if scheme is empty, open is nil, or scheme is already registered:
// two backends for one scheme would make Open's choice depend on import
// order.
func Register(scheme string, open Opener) {
	scheme = strings.ToLower(scheme)
	if scheme == "" || open == nil {
		panic("ledger: Register needs a scheme and an opener")
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.openers[scheme]; dup {
		panic("ledger: Register called twice for scheme " + scheme)
	}
	registry.openers[scheme] = open
}

// Open returns the store a URL names, through the backend registered for
// its scheme:
//
//	memory: or ""                          in-process (NewMemory with the default capacity), always linked
//	file:PATH                              SQLite file, shared by processes on one host (ledger/sqlite)
//	redis://... rediss://...               Redis, shared by replicas (ledger/redis)
//	postgres://... postgresql://...        PostgreSQL, shared by replicas (ledger/postgres)
//
// A scheme whose backend is not linked in fails with an error naming the
// package to import. Query parameters read by the ledger itself (and
// removed before the URL reaches a driver): ledger_timeout (per-operation
// bound, Go duration, default 2s), ledger_sweep (expired-grant cleanup
// interval for file and postgres, default 1m), ledger_prefix (redis key
// prefix, default "mcpsafe:grant:"), ledger_table (postgres table, default
// "mcpsafe_grants"). Open of a shared store connects, pings and creates
// the schema, so a misconfigured ledger fails at startup rather than at the
// first approval.
func Open(ctx context.Context, rawURL string) (Store, error) {
	scheme, _, _ := strings.Cut(rawURL, ":")
	scheme = strings.ToLower(scheme)
	if scheme == "" {
		scheme = "memory"
	}
	registry.RLock()
	open := registry.openers[scheme]
	registry.RUnlock()
	if open != nil {
		return open(ctx, rawURL)
	}
	if pkg, ok := backendPackages[scheme]; ok {
		shown := scheme + "://"
		if scheme == "file" {
			shown = "file:"
		}
		return nil, fmt.Errorf("ledger: no backend for %q is linked in: import _ %q", shown, pkg)
	}
	return nil, fmt.Errorf("ledger: unsupported URL scheme %q (want memory:, file:PATH, redis://, rediss://, postgres:// or postgresql://%s)", scheme, otherSchemes())
}

// otherSchemes lists registered schemes beyond this module's own.
func otherSchemes() string {
	registry.RLock()
	defer registry.RUnlock()
	var extra []string
	for s := range registry.openers {
		if _, ours := backendPackages[s]; !ours && s != "memory" {
			extra = append(extra, s+":")
		}
	}
	if len(extra) == 0 {
		return ""
	}
	slices.Sort(extra)
	return ", or one registered: " + strings.Join(extra, ", ")
}

func openMemory(_ context.Context, rawURL string) (Store, error) {
	if rawURL != "" && !strings.EqualFold(rawURL, "memory:") {
		return nil, fmt.Errorf("ledger: memory store takes no options, got %q", rawURL)
	}
	return NewMemory(0), nil
}
