package redis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

// redisBackend returns a URL with a key prefix unique to this test and
// deletes the test's keys when it ends.
func redisBackend(tb testing.TB) (string, *goredis.Client, string) {
	tb.Helper()
	opt, err := goredis.ParseURL(ledgertest.RedisURL())
	if err != nil {
		tb.Fatal(err)
	}
	c := goredis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		ledgertest.Missing(tb, "Redis at "+ledgertest.RedisURL(), err)
	}
	prefix := "mcpsafe:test:" + ledgertest.RandHex(6) + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		for len(keys) > 0 {
			n := min(len(keys), 1000)
			c.Del(ctx, keys[:n]...)
			keys = keys[n:]
		}
		c.Close()
	})
	return ledgertest.WithParams(ledgertest.RedisURL(), "ledger_prefix", prefix), c, prefix
}

// postgresBackend returns a URL naming a table unique to this test and drops
// it when the test ends.

func TestConformance(t *testing.T) {
	ledgertest.Conformance(t, ledgertest.URLBackend(func(t *testing.T) string { u, _, _ := redisBackend(t); return u }))
}

// Malformed Redis URLs, and options a Redis URL does not take, are
// configuration errors with a precise message, reported before any
// connection attempt; a password stays out of every error.
func TestOpenRejectsBadURLs(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"redis://[::1/0", "ledger: redis URL: "},
		{"redis://127.0.0.1:1/0?a=%zz", "ledger: URL query: "},
		{"redis://127.0.0.1:1/0?ledger_timeout=soon", `ledger: ledger_timeout="soon": want a positive duration`},
		{"redis://127.0.0.1:1/0?ledger_table=t", "redis URL does not take ledger_table"},
		{"redis://127.0.0.1:1/0?bogus_option=1", "ledger: redis URL "},
	} {
		t.Run(c.url, func(t *testing.T) { ledgertest.OpenRefusesConfig(t, c.url, c.want) })
	}
	t.Run("password not in errors", func(t *testing.T) {
		u := "redis://user:hunter2secret@127.0.0.1:1/0?ledger_timeout=200ms"
		_, err := ledger.Open(context.Background(), u)
		if err == nil || strings.Contains(err.Error(), "hunter2secret") {
			t.Fatalf("Open error %v leaks the password", err)
		}
	})
}

func TestOpenDeadServerRefuses(t *testing.T) {
	ledgertest.OpenRefusesDeadServer(t, func(hp string) string { return "redis://" + hp + "/0" })
}

func TestServerFreezesMidRun(t *testing.T) {
	u, _, _ := redisBackend(t)
	ledgertest.ServerFreezesMidRun(t, u)
}

// A grant's key outlives it by the horizon, no longer; a claimed end's key
// by the claimed retention, and a claimed end leaves the index of all
// grants (Redis expires keys itself: there is no sweep to call).
func TestStandingTombstonesBounded(t *testing.T) {
	ctx := context.Background()
	url, c, prefix := redisBackend(t)
	st, err := ledger.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := st.Standing()
	id := ledgertest.NewNonce()
	exp := time.Now().Add(time.Minute)
	if err := s.PutStanding(ctx, ledger.Standing{ID: id, Scope: ledgertest.NewNonce(), Expires: exp, Uses: 2}); err != nil {
		t.Fatal(err)
	}
	key := prefix + "standing:" + id
	// The key outlives the grant by the horizon, no longer.
	if ttl := c.PTTL(ctx, key).Val(); ttl <= ledger.StandingEndHorizon || ttl > ledger.StandingEndHorizon+time.Minute+time.Second {
		t.Fatalf("TTL of a new grant = %v; want its minute plus the horizon", ttl)
	}
	if ok, err := s.RevokeStanding(ctx, id, ledger.Revocation{}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, ok, err := s.ClaimStandingEnd(ctx, id); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 || ttl > ledger.StandingClaimedRetention {
		t.Fatalf("TTL of a claimed end = %v; want at most %v", ttl, ledger.StandingClaimedRetention)
	}
	if n := c.SCard(ctx, prefix+"standing-all").Val(); n != 0 {
		t.Fatalf("a claimed end stays in the index of all grants (%d members)", n)
	}
}

func TestRedisForeignValuesNeverApprove(t *testing.T) {
	u, c, prefix := redisBackend(t)
	u = ledgertest.WithParams(u, "ledger_timeout", ledgertest.FaultTimeout.String())
	ctx := context.Background()
	s, err := ledger.Open(ctx, u)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	future := time.Now().Add(time.Hour).UnixNano()
	past := time.Now().Add(-time.Hour).UnixNano()
	cases := []struct {
		name    string
		value   string
		wantErr bool
	}{
		{"garbage", "garbage", true},
		{"empty", "", true},
		{"bare marker", redisMarker, true},
		{"marker without space", strings.TrimSpace(redisMarker) + itoa(future), true},
		{"other version", "mcpsafe-ledger/2 " + itoa(future), true},
		{"non-number expiry", redisMarker + "soon", true},
		{"leading zero", redisMarker + "0" + itoa(future), true},
		{"plus sign", redisMarker + "+" + itoa(future), true},
		{"trailing junk", redisMarker + itoa(future) + " x", true},
		{"overflow", redisMarker + "99999999999999999999", true},
		{"expired marker without TTL", redisMarker + itoa(past), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := ledgertest.NewNonce()
			if err := c.Set(ctx, prefix+n, tc.value, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			ok, err := s.Redeem(ctx, n)
			if ok {
				t.Fatalf("Redeem approved a key holding %q", tc.value)
			}
			if tc.wantErr && !errors.Is(err, ledger.ErrUnavailable) {
				t.Fatalf("Redeem(%q) error = %v; want ledger.ErrUnavailable", tc.value, err)
			}
			if !tc.wantErr && err != nil {
				t.Fatalf("Redeem(%q) error = %v; want nil", tc.value, err)
			}
		})
	}
	t.Run("wrong type", func(t *testing.T) {
		n := ledgertest.NewNonce()
		if err := c.RPush(ctx, prefix+n, "x").Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Redeem(ctx, n); ok || !errors.Is(err, ledger.ErrUnavailable) {
			t.Fatalf("Redeem(list key) = %v, %v; want false, ledger.ErrUnavailable", ok, err)
		}
	})
	t.Run("control: our marker written directly", func(t *testing.T) {
		n := ledgertest.NewNonce()
		if err := c.Set(ctx, prefix+n, redisMarker+itoa(future), time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("Redeem = %v, %v; want true, nil", ok, err)
		}
	})
	t.Run("issued key carries a TTL", func(t *testing.T) {
		n := ledgertest.NewNonce()
		if err := s.Issue(ctx, n, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		ttl, err := c.PTTL(ctx, prefix+n).Result()
		if err != nil || ttl <= 0 || ttl > time.Minute+time.Millisecond {
			t.Fatalf("PTTL = %v, %v; want (0, 1m]", ttl, err)
		}
	})
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// BenchmarkRedeem: the Redis store's redemption next to a raw GETDEL over
// the same client (see ledgertest.BenchRedeem).
func BenchmarkRedeem(b *testing.B) {
	ledgertest.BenchRedeem(b, "redis", func(b *testing.B) (ledger.Store, func(*testing.B, []string, bool), ledgertest.RedeemFunc) {
		u, _, prefix := redisBackend(b)
		s, err := ledger.Open(context.Background(), u)
		if err != nil {
			b.Fatal(err)
		}
		r := s.(*Store)
		fill := func(b *testing.B, nonces []string, _ bool) {
			exp := time.Now().Add(time.Hour)
			v := redisMarker + strconv.FormatInt(exp.UnixNano(), 10)
			ctx := context.Background()
			for i := 0; i < len(nonces); i += 1000 {
				p := r.client.Pipeline()
				for _, n := range nonces[i:min(i+1000, len(nonces))] {
					p.Set(ctx, prefix+n, v, time.Hour)
				}
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		rawOp := func(ctx context.Context, n string) (bool, error) {
			_, err := r.client.GetDel(ctx, prefix+n).Result()
			return err == nil, err
		}
		return s, fill, rawOp
	})
}
