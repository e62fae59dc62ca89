package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/internal/storeurl"
)

// DefaultPrefix is prepended to every nonce to form its Redis key.
const DefaultPrefix = "mcpsafe:grant:"

// redisMarker starts every value the ledger writes. The rest is the expiry
// in Unix nanoseconds, checked again on redemption, so that a key written by
// something else, or without the TTL we set, is never taken for a grant.
const redisMarker = "mcpsafe-ledger/1 "

// Store is a ledger.Store in a Redis server shared by replicas. Issue is
// one SET NX PX; Redeem is one GETDEL, atomic in Redis, so exactly one
// client receives the value. Redis deletes expired grants by their TTL.
type Store struct {
	client  *goredis.Client
	prefix  string
	timeout time.Duration
	// now is this process's clock: it checks new grants, never judges a
	// stored grant's expiry (the Redis server's TIME does). Tests skew it.
	now    func() time.Time
	mu     sync.RWMutex
	closed bool
}

func init() {
	ledger.Register("redis", openURL)
	ledger.Register("rediss", openURL)
}

func openURL(ctx context.Context, raw string) (ledger.Store, error) {
	r, err := Open(ctx, raw)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Open connects to the Redis server a redis:// or rediss:// URL names
// (go-redis's URL syntax, plus the ledger's ledger_timeout and
// ledger_prefix parameters) and pings it.
func Open(ctx context.Context, raw string) (*Store, error) {
	u, o, err := storeurl.Split(raw, "redis")
	if err != nil {
		return nil, err
	}
	if o.Table != "" {
		return nil, errors.New("ledger: redis URL does not take ledger_table (use ledger_prefix)")
	}
	opt, err := goredis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("ledger: redis URL %s: %w", storeurl.Redact(raw), err)
	}
	prefix := o.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return newRedis(ctx, opt, prefix, o.Timeout, storeurl.Redact(raw))
}

// redisOptions bounds every network step by timeout and disables what would
// add round trips or unbounded waits.
func redisOptions(opt *goredis.Options, timeout time.Duration) {
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

func newRedis(ctx context.Context, opt *goredis.Options, prefix string, timeout time.Duration, name string) (*Store, error) {
	redisOptions(opt, timeout)
	r := &Store{client: goredis.NewClient(opt), prefix: prefix, timeout: timeout, now: time.Now}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := r.client.Ping(pctx).Err(); err != nil {
		r.client.Close()
		return nil, ledger.Unavailable("redis", "ping "+name, err)
	}
	return r, nil
}

// Issue stores the marker under the nonce's key with SET NX and a
// millisecond TTL rounded up; redemption also checks the exact expiry.
func (r *Store) Issue(ctx context.Context, nonce string, expires time.Time) error {
	now := time.Now()
	if err := ledger.CheckIssue(nonce, expires, now); err != nil {
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
	ok, err := r.client.SetNX(ctx, r.prefix+nonce, redisMarker+strconv.FormatInt(expires.UnixNano(), 10), ttl).Result()
	if err != nil {
		return ledger.Unavailable("redis", "issue", err)
	}
	if !ok {
		return ledger.ErrExists
	}
	return nil
}

// Redeem takes the key with GETDEL and approves only our marker with an
// expiry still in the future. Anything else stored under the key is
// reported as an error and never as an approval.
func (r *Store) Redeem(ctx context.Context, nonce string) (bool, error) {
	if err := ledger.CheckNonce(nonce); err != nil {
		return false, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := r.client.GetDel(ctx, r.prefix+nonce).Result()
	if errors.Is(err, goredis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, ledger.Unavailable("redis", "redeem", err)
	}
	exp, err := parseRedisValue(v)
	if err != nil {
		return false, ledger.Unavailable("redis", "redeem", err)
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

// Close closes the client; later calls fail with ledger.ErrClosed.
func (r *Store) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.client.Close()
}

// Standing grants live in a hash per grant (prefix+"standing:"+id) and are
// indexed by two sets, one per scope and one of all. Scripts make each step
// atomic in Redis: a use checks expiry and count and decrements in one
// script, so K uses raced from any number of replicas succeed exactly K
// times. Expiry is judged from the stored time, never from the key's TTL:
// the key outlives the grant by ledger.StandingEndHorizon, so that its end
// can be journaled, and is shortened to ledger.StandingClaimedRetention once
// claimed. A revocation sets the uses to 0 (what a use checks) and leaves the key in
// the set of all until the end is claimed.
//
// "Now" is the Redis server's clock (TIME), read inside each script and in
// each listing's pipeline, never a replica's: replicas whose clocks differ
// still agree on which grants are live, as PostgreSQL replicas do with the
// database's now().
var (
	redisPutStanding = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'scope', ARGV[2], 'exp', ARGV[3], 'uses', ARGV[4], 'data', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], math.floor(tonumber(ARGV[3]) / 1000000) + 1 + tonumber(ARGV[6]))
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return 1`)
	redisUseStanding = goredis.NewScript(redisNowLua + `
local v = redis.call('HMGET', KEYS[1], 'exp', 'uses')
if not v[1] or not v[2] then return -1 end
if tonumber(v[1]) <= now or tonumber(v[2]) <= 0 then return -1 end
return redis.call('HINCRBY', KEYS[1], 'uses', -1)`)
	redisRevokeStanding = goredis.NewScript(redisNowLua + `
local v = redis.call('HMGET', KEYS[1], 'exp', 'uses', 'scope')
if not v[1] or not v[2] then return 0 end
if tonumber(v[1]) <= now or tonumber(v[2]) <= 0 then return 0 end
redis.call('HSET', KEYS[1], 'uses', 0, 'ended', ARGV[3], 'by', ARGV[4], 'at', nowText)
if v[3] then redis.call('SREM', ARGV[2] .. v[3], ARGV[1]) end
return 1`)
	redisClaimStanding = goredis.NewScript(redisNowLua + `
local v = redis.call('HMGET', KEYS[1], 'exp', 'uses', 'claimed', 'scope', 'data', 'ended', 'by', 'at')
if not v[1] or not v[2] or v[3] then return false end
if tonumber(v[1]) > now and tonumber(v[2]) > 0 then return false end
redis.call('HSET', KEYS[1], 'claimed', nowText)
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 or ttl > tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
redis.call('SREM', KEYS[2], ARGV[1])
if v[4] then redis.call('SREM', ARGV[2] .. v[4], ARGV[1]) end
return {v[1], v[2], v[4] or '', v[5] or '', v[6] or '', v[7] or '', v[8] or '0'}`)
)

// redisNowLua sets nowText to the Redis server's time in Unix nanoseconds
// (exact digits, as the ledger stores times) and now to that number.
const redisNowLua = `local t = redis.call('TIME')
local nowText = t[1] .. string.format('%06d', tonumber(t[2])) .. '000'
local now = tonumber(nowText)`

// serverNow reads the Redis server's time from a pipeline's TIME.
func serverNow(cmd *goredis.TimeCmd) (int64, error) {
	t, err := cmd.Result()
	if err != nil {
		return 0, err
	}
	return t.UnixNano(), nil
}

func (r *Store) standingKey(id string) string  { return r.prefix + "standing:" + id }
func (r *Store) standingScope(s string) string { return r.prefix + "standing-scope:" + s }
func (r *Store) standingAll() string           { return r.prefix + "standing-all" }

// Standing returns r itself: it keeps standing grants.
func (r *Store) Standing() ledger.StandingStore { return r }

// PutStanding records a standing grant.
func (r *Store) PutStanding(ctx context.Context, s ledger.Standing) error {
	now := r.now()
	if err := ledger.CheckStanding(s, now); err != nil {
		return err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	n, err := redisPutStanding.Run(ctx, r.client,
		[]string{r.standingKey(s.ID), r.standingScope(s.Scope), r.standingAll()},
		s.ID, s.Scope, strconv.FormatInt(s.Expires.UnixNano(), 10), s.Uses, string(s.Data),
		ledger.StandingEndHorizon.Milliseconds()).Int()
	if err != nil {
		return ledger.Unavailable("redis", "put standing", err)
	}
	if n != 1 {
		return ledger.ErrExists
	}
	return nil
}

// StandingFor lists live standing grants of scope, or all when scope is
// "", and drops index entries whose grant is gone.
func (r *Store) StandingFor(ctx context.Context, scope string) ([]ledger.Standing, error) {
	if err := ledger.CheckScope(scope); err != nil {
		return nil, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	index := r.standingAll()
	if scope != "" {
		index = r.standingScope(scope)
	}
	ids, err := r.client.SMembers(ctx, index).Result()
	if err != nil {
		return nil, ledger.Unavailable("redis", "list standing", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := r.client.Pipeline()
	cmds := make([]*goredis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, r.standingKey(id), "scope", "exp", "uses", "data")
	}
	clock := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, ledger.Unavailable("redis", "list standing", err)
	}
	now, err := serverNow(clock)
	if err != nil {
		return nil, ledger.Unavailable("redis", "list standing", err)
	}
	var out []ledger.Standing
	var gone []any
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if err != nil || len(v) != 4 || v[0] == nil || v[1] == nil || v[2] == nil {
			gone = append(gone, ids[i])
			continue
		}
		sc, _ := v[0].(string)
		expS, _ := v[1].(string)
		usesS, _ := v[2].(string)
		data, _ := v[3].(string)
		exp, err1 := strconv.ParseInt(expS, 10, 64)
		uses, err2 := strconv.Atoi(usesS)
		if err1 != nil || err2 != nil {
			return nil, ledger.Unavailable("redis", "list standing", fmt.Errorf("standing grant %s is malformed", ids[i]))
		}
		if exp <= now || uses <= 0 {
			continue
		}
		out = append(out, ledger.Standing{ID: ids[i], Scope: sc, Expires: time.Unix(0, exp), Uses: uses, Data: []byte(data)})
	}
	if len(gone) > 0 {
		// Best effort: an index entry without its grant is skipped anyway.
		r.client.SRem(ctx, index, gone...)
	}
	return out, nil
}

// UseStanding takes one use in one script.
func (r *Store) UseStanding(ctx context.Context, id string) (int, bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return 0, false, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return 0, false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	left, err := redisUseStanding.Run(ctx, r.client, []string{r.standingKey(id)}).Int()
	if err != nil {
		return 0, false, ledger.Unavailable("redis", "use standing", err)
	}
	if left < 0 {
		return 0, false, nil
	}
	return left, true, nil
}

// RevokeStanding ends a live standing grant in one script and takes it out
// of its scope's index.
func (r *Store) RevokeStanding(ctx context.Context, id string, rev ledger.Revocation) (bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return false, err
	}
	if err := ledger.CheckRevocation(&rev); err != nil {
		return false, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	n, err := redisRevokeStanding.Run(ctx, r.client, []string{r.standingKey(id)},
		id, r.prefix+"standing-scope:", rev.Reason, rev.By).Int()
	if err != nil {
		return false, ledger.Unavailable("redis", "revoke standing", err)
	}
	return n == 1, nil
}

// EndedStanding lists unclaimed ends from the set of all grants, and drops
// index entries whose key is gone.
func (r *Store) EndedStanding(ctx context.Context) ([]ledger.StandingEnd, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	ids, err := r.client.SMembers(ctx, r.standingAll()).Result()
	if err != nil {
		return nil, ledger.Unavailable("redis", "list ended standing", err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := r.client.Pipeline()
	cmds := make([]*goredis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HMGet(ctx, r.standingKey(id), "exp", "uses", "scope", "data", "ended", "by", "at", "claimed")
	}
	clock := pipe.Time(ctx)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, goredis.Nil) {
		return nil, ledger.Unavailable("redis", "list ended standing", err)
	}
	now, err := serverNow(clock)
	if err != nil {
		return nil, ledger.Unavailable("redis", "list ended standing", err)
	}
	var out []ledger.StandingEnd
	var gone []any
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if err != nil || len(v) != 8 || v[0] == nil || v[1] == nil {
			gone = append(gone, ids[i])
			continue
		}
		if v[7] != nil {
			continue // claimed
		}
		strs := make([]string, 7)
		for j := range strs {
			strs[j], _ = v[j].(string)
		}
		e, err := redisEnd(ids[i], strs)
		if err != nil {
			return nil, ledger.Unavailable("redis", "list ended standing", err)
		}
		if e.Expires.UnixNano() > now && e.Uses > 0 {
			continue // live
		}
		out = append(out, e)
	}
	if len(gone) > 0 {
		// Best effort: an index entry without its grant is skipped anyway.
		r.client.SRem(ctx, r.standingAll(), gone...)
	}
	slices.SortFunc(out, func(a, b ledger.StandingEnd) int { return a.Expires.Compare(b.Expires) })
	if len(out) > ledger.MaxEndedListed {
		out = out[:ledger.MaxEndedListed]
	}
	return out, nil
}

// redisEnd parses exp, uses, scope, data, ended, by and at.
func redisEnd(id string, v []string) (ledger.StandingEnd, error) {
	exp, err1 := strconv.ParseInt(v[0], 10, 64)
	uses, err2 := strconv.Atoi(v[1])
	at := int64(0)
	var err3 error
	if v[6] != "" {
		at, err3 = strconv.ParseInt(v[6], 10, 64)
	}
	if err1 != nil || err2 != nil || err3 != nil {
		return ledger.StandingEnd{}, fmt.Errorf("standing grant %s is malformed", id)
	}
	e := ledger.StandingEnd{Standing: ledger.Standing{ID: id, Scope: v[2], Expires: time.Unix(0, exp), Uses: uses, Data: []byte(v[3])}}
	e.Reason = ledger.EndReason(v[4], uses)
	e.By = v[5]
	e.At = ledger.EndAt(e.Reason, e.Expires, time.Unix(0, at))
	return e, nil
}

// ClaimStandingEnd claims an end in one script: it sets the claimed field
// only where none is, so exactly one client sees it succeed.
func (r *Store) ClaimStandingEnd(ctx context.Context, id string) (ledger.StandingEnd, bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return ledger.StandingEnd{}, false, err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ledger.StandingEnd{}, false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := redisClaimStanding.Run(ctx, r.client, []string{r.standingKey(id), r.standingAll()},
		id, r.prefix+"standing-scope:", ledger.StandingClaimedRetention.Milliseconds()).StringSlice()
	if errors.Is(err, goredis.Nil) {
		return ledger.StandingEnd{}, false, nil
	}
	if err != nil {
		return ledger.StandingEnd{}, false, ledger.Unavailable("redis", "claim standing end", err)
	}
	if len(v) != 7 {
		return ledger.StandingEnd{}, false, ledger.Unavailable("redis", "claim standing end", fmt.Errorf("script answered %d values", len(v)))
	}
	e, err := redisEnd(id, v)
	if err != nil {
		return ledger.StandingEnd{}, false, ledger.Unavailable("redis", "claim standing end", err)
	}
	return e, true, nil
}
