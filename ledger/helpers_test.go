package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Test services: real Redis and PostgreSQL (scripts/services starts them).
func redisTestURL() string {
	if v := os.Getenv("LEDGER_TEST_REDIS_URL"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}

func postgresTestURL() string {
	if v := os.Getenv("LEDGER_TEST_POSTGRES_URL"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// missing skips loudly outside CI and fails in CI, where the services must
// be present (scripts/services starts them).
func missing(tb testing.TB, what string, err error) {
	tb.Helper()
	msg := fmt.Sprintf("%s is not reachable (%v); run scripts/services", what, err)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	fmt.Fprintf(os.Stderr, "\n*** SKIPPING %s: %s ***\n\n", tb.Name(), msg)
	tb.Skip("SKIPPED (not CI): " + msg)
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// newNonce returns a fresh nonce shaped like the gate's (128 bits, hex).
func newNonce() string { return randHex(16) }

func withParams(raw string, kv ...string) string {
	u, err := url.Parse(raw)
	if err != nil {
		panic(err)
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// redisBackend returns a URL with a key prefix unique to this test and
// deletes the test's keys when it ends.
func redisBackend(tb testing.TB) (string, *redis.Client, string) {
	tb.Helper()
	opt, err := redis.ParseURL(redisTestURL())
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		missing(tb, "Redis at "+redisTestURL(), err)
	}
	prefix := "mcpsafe:test:" + randHex(6) + ":"
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
	return withParams(redisTestURL(), "ledger_prefix", prefix), c, prefix
}

// postgresBackend returns a URL naming a table unique to this test and drops
// it when the test ends.
func postgresBackend(tb testing.TB) (string, *pgx.Conn, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, postgresTestURL())
	if err != nil {
		missing(tb, "PostgreSQL at "+postgresTestURL(), err)
	}
	table := "ledger_test_" + randHex(6)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{table}.Sanitize()+`, `+pgx.Identifier{StandingTable(table)}.Sanitize()); err != nil {
			tb.Errorf("drop %s: %v", table, err)
		}
		conn.Close(ctx)
	})
	return withParams(postgresTestURL(), "ledger_table", table), conn, table
}

func fileBackend(tb testing.TB) string {
	return "file:" + filepath.Join(tb.TempDir(), "ledger.db")
}
