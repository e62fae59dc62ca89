package ledger

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// DefaultRedisPrefix is prepended to every nonce to form its Redis key.
const DefaultRedisPrefix = "mcpsafe:grant:"

// redisMarker starts every value the ledger writes. The rest is the expiry
// in Unix nanoseconds, checked again on redemption, so that a key written by
// something else, or without the TTL we set, is never taken for a grant.
const redisMarker = "mcpsafe-ledger/1 "

// Redis is a Store in a Redis server shared by replicas. Issue is one
// SET NX PX; Redeem is one GETDEL, atomic in Redis, so exactly one client
// receives the value. Redis deletes expired grants by their TTL.
type Redis struct {
	client  *redis.Client
	prefix  string
	timeout time.Duration
	mu      sync.RWMutex
	closed  bool
}

func openRedis(ctx context.Context, raw string) (Store, error) {
	u, o, err := splitURL(raw, "redis")
	if err != nil {
		return nil, err
	}
	if o.table != "" {
		return nil, errors.New("ledger: redis URL does not take ledger_table (use ledger_prefix)")
	}
	opt, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("ledger: redis URL %s: %w", redactURL(raw), err)
	}
	prefix := o.prefix
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	return newRedis(ctx, opt, prefix, o.timeout, redactURL(raw))
}

// redisOptions bounds every network step by timeout and disables what would
// add round trips or unbounded waits.
func redisOptions(opt *redis.Options, timeout time.Duration) {
	opt.ContextTimeoutEnabled = true
	opt.DialTimeout = timeout
	opt.ReadTimeout = timeout
	opt.WriteTimeout = timeout
	opt.PoolTimeout = timeout
	opt.DialerRetries = 1
	// A retry after a lost reply cannot approve twice: the GETDEL that ran
	// deleted the key, so the retry answers "unknown" (a refusal, though
	// reported as spent rather than unavailable). Retries let a replica
	// recover from pooled connections broken by a Redis restart; the
	// context deadline still bounds the whole call, retries included.
	opt.MaxRetries = 1
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

func newRedis(ctx context.Context, opt *redis.Options, prefix string, timeout time.Duration, name string) (*Redis, error) {
	redisOptions(opt, timeout)
	r := &Redis{client: redis.NewClient(opt), prefix: prefix, timeout: timeout}
	pctx, cancel := opContext(ctx, timeout)
	defer cancel()
	if err := r.client.Ping(pctx).Err(); err != nil {
		r.client.Close()
		return nil, unavailable("redis", "ping "+name, err)
	}
	return r, nil
}

// Issue stores the marker under the nonce's key with SET NX and a
// millisecond TTL rounded up; redemption also checks the exact expiry.
func (r *Redis) Issue(ctx context.Context, nonce string, expires time.Time) error {
	now := time.Now()
	if err := checkIssue(nonce, expires, now); err != nil {
		return err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	ttl := expires.Sub(now)
	if rem := ttl % time.Millisecond; rem != 0 {
		ttl += time.Millisecond - rem
	}
	ctx, cancel := opContext(ctx, r.timeout)
	defer cancel()
	ok, err := r.client.SetNX(ctx, r.prefix+nonce, redisMarker+strconv.FormatInt(expires.UnixNano(), 10), ttl).Result()
	if err != nil {
		return unavailable("redis", "issue", err)
	}
	if !ok {
		return ErrExists
	}
	return nil
}

// Redeem takes the key with GETDEL and approves only our marker with an
// expiry still in the future. Anything else stored under the key is
// reported as an error and never as an approval.
func (r *Redis) Redeem(ctx context.Context, nonce string) (bool, error) {
	if err := checkNonce(nonce); err != nil {
		return false, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return false, ErrClosed
	}
	ctx, cancel := opContext(ctx, r.timeout)
	defer cancel()
	v, err := r.client.GetDel(ctx, r.prefix+nonce).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, unavailable("redis", "redeem", err)
	}
	exp, err := parseRedisValue(v)
	if err != nil {
		return false, unavailable("redis", "redeem", err)
	}
	return time.Now().UnixNano() < exp, nil
}

func parseRedisValue(v string) (int64, error) {
	rest, ok := strings.CutPrefix(v, redisMarker)
	if !ok {
		return 0, fmt.Errorf("value under grant key is not a ledger marker (%d bytes)", len(v))
	}
	exp, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || strconv.FormatInt(exp, 10) != rest {
		return 0, errors.New("value under grant key has a malformed expiry")
	}
	return exp, nil
}

// Close closes the client; later calls fail with ErrClosed.
func (r *Redis) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.client.Close()
}
