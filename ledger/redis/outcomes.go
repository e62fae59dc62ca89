package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// outcomeMarker starts every outcome the ledger writes, so that a key
// written by something else is never taken for one.
const outcomeMarker = "mcpsafe-outcome/1 "

func (r *Store) outcomeKey(id string) string { return r.prefix + "outcome:" + id }

// Outcomes returns r itself: outcomes live in Redis, beside the grants.
func (r *Store) Outcomes() ledger.OutcomeStore { return r }

// PutOutcome stores the outcome with SET NX and a TTL rounded up to the
// millisecond: Redis forgets it when it expires, by the server's clock.
func (r *Store) PutOutcome(ctx context.Context, id string, data []byte, expires time.Time) error {
	now := r.now()
	if err := ledger.CheckOutcome(id, data, expires, now); err != nil {
		return err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ledger.ErrClosed
	}
	ttl := expires.Sub(now)
	if rem := ttl % time.Millisecond; rem != 0 {
		ttl += time.Millisecond - rem
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ok, err := r.client.SetNX(ctx, r.outcomeKey(id), outcomeMarker+string(data), ttl).Result()
	if err != nil {
		return ledger.Unavailable("redis", "put outcome", err)
	}
	if !ok {
		return ledger.ErrExists
	}
	return nil
}

// Outcome reads the outcome of id; a value without the marker is an error,
// never an outcome.
func (r *Store) Outcome(ctx context.Context, id string) ([]byte, bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return nil, false, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := r.client.Get(ctx, r.outcomeKey(id)).Result()
	if errors.Is(err, goredis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, ledger.Unavailable("redis", "outcome", err)
	}
	data, ok := strings.CutPrefix(v, outcomeMarker)
	if !ok {
		return nil, false, ledger.Unavailable("redis", "outcome", fmt.Errorf("key %s holds something that is not an outcome", r.outcomeKey(id)))
	}
	return []byte(data), true, nil
}
