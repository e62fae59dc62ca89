// Package ledgertest is the conformance suite every ledger.Store must pass,
// and the helpers its backends' tests share: one copy, run by each backend
// package (ledger's memory store, ledger/sqlite, ledger/redis,
// ledger/postgres) against its real store, as testing/fstest is for file
// systems. A backend outside this module can run it too:
//
//	func TestConformance(t *testing.T) {
//		ledgertest.Conformance(t, ledgertest.URLBackend(func(t *testing.T) string {
//			return "mystore://..." // a fresh, empty backend for this test
//		}))
//	}
//
// The network backends' tests read their servers from
// LEDGER_TEST_REDIS_URL and LEDGER_TEST_POSTGRES_URL (defaults: a local
// Redis and PostgreSQL, as scripts/services starts them). A missing server
// skips loudly outside CI and fails the test in CI (CI=true).
package ledgertest

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// RedisURL is the Redis server the tests use.
func RedisURL() string {
	if v := os.Getenv("LEDGER_TEST_REDIS_URL"); v != "" {
		return v
	}
	return "redis://127.0.0.1:6379/0"
}

// PostgresURL is the PostgreSQL database the tests use.
func PostgresURL() string {
	if v := os.Getenv("LEDGER_TEST_POSTGRES_URL"); v != "" {
		return v
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// Missing skips tb loudly outside CI and fails it in CI, where the services
// must be present (scripts/services starts them).
func Missing(tb testing.TB, what string, err error) {
	tb.Helper()
	msg := fmt.Sprintf("%s is not reachable (%v); run scripts/services", what, err)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	fmt.Fprintf(os.Stderr, "\n*** SKIPPING %s: %s ***\n\n", tb.Name(), msg)
	tb.Skip("SKIPPED (not CI): " + msg)
}

// RandHex returns n random bytes in hex.
func RandHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// NewNonce returns a fresh nonce shaped like the gate's (128 bits, hex).
func NewNonce() string { return RandHex(16) }

// WithParams returns raw with the query parameters kv (key, value, ...)
// set.
func WithParams(raw string, kv ...string) string {
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

//go:embed testdata/nonces.json
var nonceVectors []byte

var validNonces, invalidNonces = loadNonces()

func loadNonces() (valid, invalid []string) {
	var v struct{ Valid, Invalid []string }
	if err := json.Unmarshal(nonceVectors, &v); err != nil {
		panic(err)
	}
	if len(v.Valid) == 0 || len(v.Invalid) == 0 {
		panic("testdata/nonces.json: empty vectors")
	}
	return v.Valid, v.Invalid
}

// ValidNonces are nonces every store must accept (testdata/nonces.json).
func ValidNonces() []string { return append([]string(nil), validNonces...) }

// InvalidNonces are nonces every store must refuse with
// ledger.ErrInvalidNonce.
func InvalidNonces() []string { return append([]string(nil), invalidNonces...) }

// OpenRefusesConfig checks that ledger.Open(url) fails with a
// configuration error, not ledger.ErrUnavailable (which would read as an
// outage), whose message contains want.
func OpenRefusesConfig(t *testing.T, url, want string) {
	t.Helper()
	s, err := ledger.Open(context.Background(), url)
	if err == nil {
		s.Close()
		t.Fatalf("Open(%q) succeeded", url)
	}
	if errors.Is(err, ledger.ErrUnavailable) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open(%q) = %v; want a configuration error containing %q", url, err, want)
	}
}
