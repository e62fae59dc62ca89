package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

// postgresBackend returns a URL naming a table unique to this test and drops
// it when the test ends.
func postgresBackend(tb testing.TB) (string, *pgx.Conn, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, ledgertest.PostgresURL())
	if err != nil {
		ledgertest.Missing(tb, "PostgreSQL at "+ledgertest.PostgresURL(), err)
	}
	table := "ledger_test_" + ledgertest.RandHex(6)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{table}.Sanitize()+`, `+pgx.Identifier{StandingTable(table)}.Sanitize()+`, `+pgx.Identifier{OutcomesTable(table)}.Sanitize()); err != nil {
			tb.Errorf("drop %s: %v", table, err)
		}
		conn.Close(ctx)
	})
	return ledgertest.WithParams(ledgertest.PostgresURL(), "ledger_table", table), conn, table
}

func TestConformance(t *testing.T) {
	ledgertest.Conformance(t, ledgertest.URLBackend(func(t *testing.T) string { u, _, _ := postgresBackend(t); return u }))
}

// Malformed PostgreSQL URLs, and options a PostgreSQL URL does not take,
// are configuration errors with a precise message, reported before any
// connection attempt; a password stays out of every error.
func TestOpenRejectsBadURLs(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"postgres://[::1/test", "ledger: postgres URL: "},
		{"postgres://postgres@127.0.0.1:1/test?a=%zz", "ledger: URL query: "},
		{"postgres://postgres@127.0.0.1:1/test?ledger_sweep=0s", `ledger: ledger_sweep="0s": want a positive duration`},
		{"postgres://postgres@127.0.0.1:1/test?ledger_prefix=p", "postgres URL does not take ledger_prefix"},
		{"postgres://postgres@127.0.0.1:1/test?ledger_table=Bad-Name", `ledger_table "Bad-Name": want`},
		{"postgres://postgres@127.0.0.1:1/test?ledger_table=x;drop", "ledger: URL query: "},
		{"postgresql://postgres@127.0.0.1:1/test?ledger_table=" + strings.Repeat("a", 64), "ledger_table"},
		{"postgres://postgres@127.0.0.1:1/test?sslmode=bogus", "cannot parse"},
	} {
		t.Run(c.url, func(t *testing.T) { ledgertest.OpenRefusesConfig(t, c.url, c.want) })
	}
	t.Run("password not in errors", func(t *testing.T) {
		for _, u := range []string{
			"postgres://postgres:hunter2secret@127.0.0.1:1/test?ledger_timeout=200ms",
			"postgres://postgres:hunter2secret@127.0.0.1:1/test?sslmode=bogus",
		} {
			_, err := ledger.Open(context.Background(), u)
			if err == nil || strings.Contains(err.Error(), "hunter2secret") {
				t.Fatalf("Open error %v leaks the password", err)
			}
		}
	})
}

func TestOpenDeadServerRefuses(t *testing.T) {
	ledgertest.OpenRefusesDeadServer(t, func(hp string) string { return "postgres://postgres@" + hp + "/test?sslmode=disable" })
}

func TestServerFreezesMidRun(t *testing.T) {
	u, _, _ := postgresBackend(t)
	ledgertest.ServerFreezesMidRun(t, u)
}

// Ended grants are kept only so long (see ledgertest.TombstonesBounded).
func TestStandingTombstonesBounded(t *testing.T) {
	u, _, _ := postgresBackend(t)
	p, err := Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ledgertest.TombstonesBounded(t, p, p.sweepStanding)
}

// TestSweepRemovesExpired: expired rows are deleted by the store's own
// sweep; live ones are kept.
func TestSweepRemovesExpired(t *testing.T) {
	u, conn, table := postgresBackend(t)
	ledgertest.SweepRemovesExpired(t, u, func() int {
		var n int
		if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// TestConcurrentOpen starts several replicas at once on a fresh database:
// CREATE TABLE IF NOT EXISTS is not atomic against itself.
func TestConcurrentOpen(t *testing.T) {
	u, _, _ := postgresBackend(t)
	ledgertest.ConcurrentOpen(t, u)
}

// An object squatting on the ledger's PostgreSQL table name must make Open
// refuse, not run on top of it: a type of that name makes CREATE TABLE
// fail; a view of that name (here one that would report a grant as
// outstanding forever) is skipped by CREATE TABLE IF NOT EXISTS, and the
// index creation on it fails.
func TestPostgresSquattedTableName(t *testing.T) {
	squatters := map[string]struct{ create, drop, want string }{
		"type": {
			`CREATE TYPE %s AS ENUM ('x')`, `DROP TYPE IF EXISTS %s`,
			"already exists",
		},
		"view": {
			`CREATE VIEW %s AS SELECT 'forever'::text AS nonce, now() + interval '1 day' AS expires_at`, `DROP VIEW IF EXISTS %s`,
			"ledger unavailable: postgres create schema: ",
		},
	}
	for name, sq := range squatters {
		t.Run(name, func(t *testing.T) {
			u, conn, table := postgresBackend(t)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			id := pgx.Identifier{table}.Sanitize()
			if _, err := conn.Exec(ctx, strings.ReplaceAll(sq.create, "%s", id)); err != nil {
				t.Fatal(err)
			}
			// Runs before postgresBackend's DROP TABLE (cleanups are LIFO),
			// which would fail on a view.
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if _, err := conn.Exec(ctx, strings.ReplaceAll(sq.drop, "%s", id)); err != nil {
					t.Errorf("drop squatter: %v", err)
				}
			})
			s, err := ledger.Open(ctx, ledgertest.WithParams(u, "ledger_timeout", "5s"))
			if err == nil {
				s.Close()
				t.Fatalf("Open over a %s named %s succeeded", name, table)
			}
			if !errors.Is(err, ledger.ErrUnavailable) || !strings.Contains(err.Error(), "postgres create schema") || !strings.Contains(err.Error(), sq.want) {
				t.Fatalf("Open over a %s = %v; want ledger.ErrUnavailable from create schema containing %q", name, err, sq.want)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		u, _, _ := postgresBackend(t)
		ctx := context.Background()
		s, err := ledger.Open(ctx, ledgertest.WithParams(u, "ledger_timeout", "5s"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n := ledgertest.NewNonce()
		if err := s.Issue(ctx, n, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.Redeem(ctx, n); !ok || err != nil {
			t.Fatalf("Redeem = %v, %v", ok, err)
		}
		if ok, err := s.Redeem(ctx, n); ok || err != nil {
			t.Fatalf("second Redeem = %v, %v; want false, nil", ok, err)
		}
	})
}

// BenchmarkRedeem: the PostgreSQL store's redemption next to a raw
// one-row DELETE ... RETURNING over the same pool (see
// ledgertest.BenchRedeem).
func BenchmarkRedeem(b *testing.B) {
	ledgertest.BenchRedeem(b, "postgres", func(b *testing.B) (ledger.Store, func(*testing.B, []string, bool), ledgertest.RedeemFunc) {
		u, _, table := postgresBackend(b)
		s, err := ledger.Open(context.Background(), u)
		if err != nil {
			b.Fatal(err)
		}
		p := s.(*Store)
		t := pgx.Identifier{table}.Sanitize()
		fill := func(b *testing.B, nonces []string, _ bool) {
			_, err := p.pool.Exec(context.Background(),
				`INSERT INTO `+t+` (nonce, expires_at) SELECT unnest($1::text[]), $2`, nonces, time.Now().Add(time.Hour))
			if err != nil {
				b.Fatal(err)
			}
		}
		q := `DELETE FROM ` + t + ` WHERE nonce = $1 RETURNING nonce`
		rawOp := func(ctx context.Context, n string) (bool, error) {
			var got string
			err := p.pool.QueryRow(ctx, q, n).Scan(&got)
			return err == nil, err
		}
		return s, fill, rawOp
	})
}
