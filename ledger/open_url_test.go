package ledger

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Malformed URLs of every store are configuration errors with a precise
// message, reported before any connection attempt (not ErrUnavailable,
// which would read as an outage).
func TestOpenMalformedURLsPrecise(t *testing.T) {
	cases := []struct{ url, want string }{
		{"file://[::1/x.db", "ledger: file URL: "},
		{"file:/tmp/x.db#frag", `ledger: file URL has a fragment "frag"`},
		{"file:/tmp/x.db?a=%zz", "ledger: URL query: "},
		{"file:%zz", "ledger: file URL path: "},
		{"file:%2Ftmp%2Fx%3Fmode=memory", "contains '?', '#' or NUL"},
		{"redis://[::1/0", "ledger: redis URL: "},
		{"redis://127.0.0.1:1/0?a=%zz", "ledger: URL query: "},
		{"redis://127.0.0.1:1/0?ledger_timeout=soon", `ledger: ledger_timeout="soon": want a positive duration`},
		{"postgres://[::1/test", "ledger: postgres URL: "},
		{"postgres://postgres@127.0.0.1:1/test?a=%zz", "ledger: URL query: "},
		{"postgres://postgres@127.0.0.1:1/test?ledger_sweep=0s", `ledger: ledger_sweep="0s": want a positive duration`},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			s, err := Open(context.Background(), c.url)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", c.url)
			}
			if errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open(%q) = %v; want a configuration error containing %q", c.url, err, c.want)
			}
		})
	}
}

// file:PATH with the path percent-encoded (an opaque URL) opens exactly
// the decoded path (the '?' check runs on the decoded bytes: see the
// %3F case in TestOpenMalformedURLsPrecise).
func TestOpenFileOpaquePath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "opaque ledger.db")
	raw := "file:" + url.PathEscape(path)
	if !strings.HasPrefix(raw, "file:%2F") {
		t.Fatalf("test setup: %q is not opaque", raw)
	}
	s, err := Open(context.Background(), raw)
	if err != nil {
		t.Fatalf("Open(%q): %v", raw, err)
	}
	defer s.Close()
	if f, ok := s.(*File); !ok || f.path != path {
		t.Fatalf("Open(%q) = %T at %v; want a File at %q", raw, s, s, path)
	}
	n := newNonce()
	ctx := context.Background()
	if err := s.Issue(ctx, n, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Redeem(ctx, n); !ok || err != nil {
		t.Fatalf("first Redeem = %v, %v", ok, err)
	}
	if ok, err := s.Redeem(ctx, n); ok || err != nil {
		t.Fatalf("second Redeem = %v, %v; want false, nil", ok, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the decoded path was not used: %v", err)
	}
}

// OpenFile takes a plain path; a '?' in it would reach the SQLite driver
// as DSN options (mode=memory: a ledger that forgets every spent grant on
// restart), so it is refused before anything is created.
func TestOpenFileRefusesDSNOptionsInPath(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{
		filepath.Join(dir, "a.db?mode=memory"),
		filepath.Join(dir, "a.db#x"),
		filepath.Join(dir, "a.db\x00b"),
	} {
		f, err := OpenFile(context.Background(), p)
		if err == nil {
			f.Close()
			t.Fatalf("OpenFile(%q) succeeded", p)
		}
		if !strings.Contains(err.Error(), "contains '?', '#' or NUL") {
			t.Fatalf("OpenFile(%q) = %v", p, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused path still created %v", entries[0].Name())
	}
	// Control: the plain path opens.
	f, err := OpenFile(context.Background(), filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// A sub-millisecond ledger_timeout must not become busy_timeout(0), which
// in SQLite means "fail at once on a locked database": it is rounded up to
// 1 ms. Opening itself gets at least openFloor, so it succeeds on a loaded
// machine however short the operation timeout.
func TestOpenFileSubMillisecondTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	raw := "file:" + path + "?ledger_timeout=900us&ledger_sweep=1h"
	s, err := Open(context.Background(), raw)
	if err != nil {
		t.Fatalf("Open(%q) = %v", raw, err)
	}
	defer s.Close()
	f := s.(*File)
	var busy int64
	if err := f.db.QueryRowContext(context.Background(), "PRAGMA busy_timeout").Scan(&busy); err != nil {
		t.Fatal(err)
	}
	if busy != 1 {
		t.Fatalf("busy_timeout = %d ms for a 900us ledger_timeout; want 1", busy)
	}
	if f.timeout != 900*time.Microsecond {
		t.Fatalf("operation timeout %s, want the 900us asked for", f.timeout)
	}
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
			s, err := Open(ctx, withParams(u, "ledger_timeout", "5s"))
			if err == nil {
				s.Close()
				t.Fatalf("Open over a %s named %s succeeded", name, table)
			}
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "postgres create schema") || !strings.Contains(err.Error(), sq.want) {
				t.Fatalf("Open over a %s = %v; want ErrUnavailable from create schema containing %q", name, err, sq.want)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		u, _, _ := postgresBackend(t)
		ctx := context.Background()
		s, err := Open(ctx, withParams(u, "ledger_timeout", "5s"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n := newNonce()
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
