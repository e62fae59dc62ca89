package sqlite

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

func fileBackend(tb testing.TB) string {
	return "file:" + filepath.Join(tb.TempDir(), "ledger.db")
}

func TestConformance(t *testing.T) {
	ledgertest.Conformance(t, ledgertest.URLBackend(func(t *testing.T) string { return fileBackend(t) }))
}

// Ended grants are kept only so long (see ledgertest.TombstonesBounded).
func TestStandingTombstonesBounded(t *testing.T) {
	f, err := Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ledgertest.TombstonesBounded(t, f, f.sweepStanding)
}

// Malformed file URLs are configuration errors with a precise message,
// reported before anything is opened; so are the options a file URL does
// not take.
func TestOpenMalformedURLsPrecise(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"file://[::1/x.db", "ledger: file URL: "},
		{"file:/tmp/x.db#frag", `ledger: file URL has a fragment "frag"`},
		{"file:/tmp/x.db?a=%zz", "ledger: URL query: "},
		{"file:%zz", "ledger: file URL path: "},
		{"file:%2Ftmp%2Fx%3Fmode=memory", "contains '?', '#' or NUL"},
		{"file:", "ledger: file URL has no path"},
		{"file://otherhost/tmp/x.db", `file URL names host "otherhost"`},
		{"file:/tmp/x.db?mode=ro", "file URL has unknown parameters"},
		{"file:/tmp/x.db?ledger_prefix=a", "does not take ledger_prefix or ledger_table"},
		{"file:/tmp/x%3F.db", "contains '?', '#' or NUL"},
		{"file:/tmp/x.db?ledger_timeout=0s", `ledger_timeout="0s": want a positive duration`},
		{"file:/tmp/x.db?ledger_timeout=-1s", `ledger_timeout="-1s": want a positive duration`},
		{"file:/tmp/x.db?ledger_timeout=soon", `ledger_timeout="soon": want a positive duration`},
		{"file:/tmp/x.db?ledger_bogus=1", "ledger: unknown parameter ledger_bogus"},
		{"file:/tmp/x.db?ledger_timeout=1s&ledger_timeout=2s", "parameter ledger_timeout given 2 times"},
	} {
		t.Run(c.url, func(t *testing.T) { ledgertest.OpenRefusesConfig(t, c.url, c.want) })
	}
	t.Run("control", func(t *testing.T) {
		u := "file:" + t.TempDir() + "/a.db?ledger_timeout=1s&ledger_sweep=1h"
		s, err := ledger.Open(context.Background(), u)
		if err != nil {
			t.Fatalf("Open(%q): %v", u, err)
		}
		s.Close()
	})
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
	s, err := ledger.Open(context.Background(), raw)
	if err != nil {
		t.Fatalf("Open(%q): %v", raw, err)
	}
	defer s.Close()
	if f, ok := s.(*Store); !ok || f.path != path {
		t.Fatalf("Open(%q) = %T at %v; want a Store at %q", raw, s, s, path)
	}
	n := ledgertest.NewNonce()
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
		f, err := Open(context.Background(), p)
		if err == nil {
			f.Close()
			t.Fatalf("Open(%q) succeeded", p)
		}
		if !strings.Contains(err.Error(), "contains '?', '#' or NUL") {
			t.Fatalf("Open(%q) = %v", p, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused path still created %v", entries[0].Name())
	}
	// Control: the plain path opens.
	f, err := Open(context.Background(), filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// A sub-millisecond ledger_timeout must not become busy_timeout(0), which
// in SQLite means "fail at once on a locked database": it is rounded up to
// 1 ms. Opening itself gets at least openFloor, so it succeeds on a loaded
// machine however short the operation timeout.

// A sub-millisecond ledger_timeout must not become busy_timeout(0), which
// in SQLite means "fail at once on a locked database": it is rounded up to
// 1 ms. Opening itself gets at least openFloor, so it succeeds on a loaded
// machine however short the operation timeout.
func TestOpenFileSubMillisecondTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	raw := "file:" + path + "?ledger_timeout=900us&ledger_sweep=1h"
	s, err := ledger.Open(context.Background(), raw)
	if err != nil {
		t.Fatalf("Open(%q) = %v", raw, err)
	}
	defer s.Close()
	f := s.(*Store)
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

// A file ledger whose standing table predates kept ends is upgraded when
// opened, and its grants keep working.
func TestFileUpgradesStandingTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	id, scope := ledgertest.NewNonce(), ledgertest.NewNonce()
	for _, q := range []string{
		`CREATE TABLE grants (nonce TEXT PRIMARY KEY NOT NULL, expires_at INTEGER NOT NULL) STRICT`,
		`CREATE TABLE standing (id TEXT PRIMARY KEY NOT NULL, scope TEXT NOT NULL, expires_at INTEGER NOT NULL, uses INTEGER NOT NULL, data BLOB NOT NULL) STRICT`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`INSERT INTO standing VALUES (?, ?, ?, 3, x'')`, id, scope, time.Now().Add(time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for i := 0; i < 2; i++ { // the second open finds the columns there
		f, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		if i == 0 {
			if left, ok, err := f.UseStanding(ctx, id); !ok || err != nil || left != 2 {
				t.Fatalf("use of the old grant = %d, %v, %v", left, ok, err)
			}
			if ok, err := f.RevokeStanding(ctx, id, ledger.Revocation{By: "admin"}); !ok || err != nil {
				t.Fatalf("revoke = %v, %v", ok, err)
			}
		} else if e, ok, err := f.ClaimStandingEnd(ctx, id); !ok || err != nil || e.Reason != ledger.EndRevoked || e.By != "admin" {
			t.Fatalf("claim = %+v, %v, %v", e, ok, err)
		}
		f.Close()
	}
}

// BenchmarkRedeem: the file store's redemption next to a raw
// DELETE FROM grants WHERE nonce=? RETURNING nonce (see
// ledgertest.BenchRedeem).
func BenchmarkRedeem(b *testing.B) {
	ledgertest.BenchRedeem(b, "file", func(b *testing.B) (ledger.Store, func(*testing.B, []string, bool), ledgertest.RedeemFunc) {
		f, err := Open(context.Background(), filepath.Join(b.TempDir(), "ledger.db"))
		if err != nil {
			b.Fatal(err)
		}
		fill := func(b *testing.B, nonces []string, _ bool) {
			// Raw rows share the table; the raw DELETE ignores expires_at.
			exp := time.Now().Add(time.Hour).UnixNano()
			tx, err := f.db.Begin()
			if err != nil {
				b.Fatal(err)
			}
			for _, n := range nonces {
				if _, err := tx.Exec(`INSERT INTO grants(nonce, expires_at) VALUES (?, ?)`, n, exp); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
		stmt, err := f.db.Prepare(`DELETE FROM grants WHERE nonce = ? RETURNING nonce`)
		if err != nil {
			b.Fatal(err)
		}
		rawOp := func(ctx context.Context, n string) (bool, error) {
			var got string
			err := stmt.QueryRowContext(ctx, n).Scan(&got)
			return err == nil, err
		}
		return f, fill, rawOp
	})
}
