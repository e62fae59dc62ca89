package ledger

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Store records outstanding grants and redeems each at most once.
//
// Redeem reports true exactly once for a nonce that was issued and has not
// expired (valid while now < expires). It reports false with a nil error for
// an unknown, already redeemed or expired nonce, and false with an error when
// the store cannot answer. A caller must treat any error as "not approved".
//
// Standing returns the store's standing grants (every store in this
// package keeps them, and returns itself). It is a method and not a type
// to assert on, so that a wrapper around a Store must say what becomes of
// it: a capability found by type assertion is silently lost behind any
// wrapper that does not happen to implement it too.
type Store interface {
	Issue(ctx context.Context, nonce string, expires time.Time) error
	Redeem(ctx context.Context, nonce string) (bool, error)
	Standing() StandingStore
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

// checkNonce keeps arbitrary bytes out of keys, file names and SQL
// parameters. The gate's nonces are 128-bit random values in base64url or hex,
// which this accepts.
func checkNonce(nonce string) error {
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

// checkIssue validates Issue's arguments against the local clock.
func checkIssue(nonce string, expires, now time.Time) error {
	if err := checkNonce(nonce); err != nil {
		return err
	}
	if !expires.After(now) {
		return fmt.Errorf("%w: expires %s, now %s", ErrExpired,
			expires.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// unavailable wraps a store failure so that errors.Is(err, ErrUnavailable)
// holds and the cause stays visible to errors.Is/As and in the message.
func unavailable(store, op string, cause error) error {
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

// opContext bounds one store operation by timeout unless ctx already ends
// sooner.
func opContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, timeout)
}

// Open returns the store a URL names:
//
//	memory: or ""                          in-process (NewMemory with the default capacity)
//	file:PATH                              SQLite file, shared by processes on one host
//	redis://... rediss://...               Redis, shared by replicas
//	postgres://... postgresql://...        PostgreSQL, shared by replicas
//
// Query parameters read by the ledger itself (and removed before the URL
// reaches a driver): ledger_timeout (per-operation bound, Go duration,
// default 2s), ledger_sweep (expired-grant cleanup interval for file and
// postgres, default 1m), ledger_prefix (redis key prefix, default
// "mcpsafe:grant:"), ledger_table (postgres table, default "mcpsafe_grants").
// Open of a shared store connects, pings and creates the schema, so a
// misconfigured ledger fails at startup rather than at the first approval.
func Open(ctx context.Context, rawURL string) (Store, error) {
	scheme, _, _ := strings.Cut(rawURL, ":")
	switch strings.ToLower(scheme) {
	case "", "memory":
		if rawURL != "" && !strings.EqualFold(rawURL, "memory:") {
			return nil, fmt.Errorf("ledger: memory store takes no options, got %q", rawURL)
		}
		return NewMemory(0), nil
	case "file":
		return openFile(ctx, rawURL)
	case "redis", "rediss":
		return openRedis(ctx, rawURL)
	case "postgres", "postgresql":
		return openPostgres(ctx, rawURL)
	}
	return nil, fmt.Errorf("ledger: unsupported URL scheme %q (want memory:, file:PATH, redis://, rediss://, postgres:// or postgresql://)", scheme)
}

// parseQuery is strict where url.URL.Query is not: Query silently drops a
// malformed pair (such as one containing ';'), which would turn a bad
// ledger_table into the default table.
// splitURL parses a store URL and takes the ledger_* options out of its
// query, so that what remains can go to the store's own driver.
func splitURL(raw, kind string) (*url.URL, options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, options{}, fmt.Errorf("ledger: %s URL: %w", kind, err)
	}
	q, err := parseQuery(u.RawQuery)
	if err != nil {
		return nil, options{}, err
	}
	o, err := takeOptions(q)
	if err != nil {
		return nil, options{}, err
	}
	u.RawQuery = q.Encode()
	return u, o, nil
}

func parseQuery(raw string) (url.Values, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return nil, fmt.Errorf("ledger: URL query: %w", err)
	}
	return q, nil
}

// options are the ledger's own URL query parameters.
type options struct {
	timeout time.Duration
	sweep   time.Duration
	prefix  string
	table   string
}

// takeOptions removes the ledger_* parameters from q and parses them. Any
// other ledger_* key is an error: a typo must not silently select defaults.
func takeOptions(q url.Values) (options, error) {
	o := options{timeout: DefaultTimeout, sweep: DefaultSweepInterval}
	for k, vs := range q {
		if !strings.HasPrefix(k, "ledger_") {
			continue
		}
		if len(vs) != 1 {
			return o, fmt.Errorf("ledger: parameter %s given %d times", k, len(vs))
		}
		v := vs[0]
		switch k {
		case "ledger_timeout", "ledger_sweep":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return o, fmt.Errorf("ledger: %s=%q: want a positive duration such as 2s", k, v)
			}
			if k == "ledger_timeout" {
				o.timeout = d
			} else {
				o.sweep = d
			}
		case "ledger_prefix":
			o.prefix = v
		case "ledger_table":
			o.table = v
		default:
			return o, fmt.Errorf("ledger: unknown parameter %s", k)
		}
		delete(q, k)
	}
	return o, nil
}

// redactURL hides a password before a URL goes into an error message.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
