package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// tombstoneSweeper is what the stores with a sweep of their own implement.
type tombstoneSweeper interface {
	sweepStanding(ctx context.Context, now time.Time) error
}

// Ended grants are kept only so long: a claimed end for
// StandingClaimedRetention, an unclaimed one until StandingEndHorizon
// after its expiry. Live grants are never swept (control).
func TestStandingTombstonesBounded(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"memory", "file", "postgres"} {
		t.Run(name, func(t *testing.T) {
			st := backends()[name](t)(t)
			s, sw := standingOf(t, st), st.(tombstoneSweeper)
			put := func(exp time.Time) string {
				id := newNonce()
				if err := s.PutStanding(ctx, Standing{ID: id, Scope: newNonce(), Expires: exp, Uses: 2}); err != nil {
					t.Fatal(err)
				}
				return id
			}
			claimed, unclaimed, live := put(time.Now().Add(time.Hour)), put(time.Now().Add(time.Hour)), put(time.Now().Add(30*24*time.Hour))
			for _, id := range []string{claimed, unclaimed} {
				if ok, err := s.RevokeStanding(ctx, id, Revocation{}); !ok || err != nil {
					t.Fatal(ok, err)
				}
			}
			if _, ok, err := s.ClaimStandingEnd(ctx, claimed); !ok || err != nil {
				t.Fatal(ok, err)
			}
			kept := func(id string) bool {
				// A kept ID refuses a put of the same ID.
				err := s.PutStanding(ctx, Standing{ID: id, Scope: newNonce(), Expires: time.Now().Add(time.Minute), Uses: 1})
				if err == nil {
					if ok, err := s.RevokeStanding(ctx, id, Revocation{}); !ok || err != nil {
						t.Fatal(ok, err)
					}
				}
				return err != nil
			}
			if err := sw.sweepStanding(ctx, time.Now().Add(StandingClaimedRetention-time.Minute)); err != nil {
				t.Fatal(err)
			}
			if !kept(claimed) || !kept(unclaimed) {
				t.Fatal("a tombstone was swept before its retention")
			}
			if err := sw.sweepStanding(ctx, time.Now().Add(StandingClaimedRetention+time.Minute)); err != nil {
				t.Fatal(err)
			}
			if kept(claimed) || !kept(unclaimed) {
				t.Fatalf("after the claimed retention: claimed kept = %v, unclaimed kept = %v; want false, true", kept(claimed), kept(unclaimed))
			}
			if err := sw.sweepStanding(ctx, time.Now().Add(time.Hour+StandingEndHorizon+time.Minute)); err != nil {
				t.Fatal(err)
			}
			if kept(unclaimed) {
				t.Fatal("an unclaimed end outlived its horizon")
			}
			if _, ok, err := s.UseStanding(ctx, live); !ok || err != nil {
				t.Fatalf("control: the live grant after sweeps = %v, %v", ok, err)
			}
		})
	}
	t.Run("redis", func(t *testing.T) {
		url, c, prefix := redisBackend(t)
		st, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		s := standingOf(t, st)
		id := newNonce()
		exp := time.Now().Add(time.Minute)
		if err := s.PutStanding(ctx, Standing{ID: id, Scope: newNonce(), Expires: exp, Uses: 2}); err != nil {
			t.Fatal(err)
		}
		key := prefix + "standing:" + id
		// The key outlives the grant by the horizon, no longer.
		if ttl := c.PTTL(ctx, key).Val(); ttl <= StandingEndHorizon || ttl > StandingEndHorizon+time.Minute+time.Second {
			t.Fatalf("TTL of a new grant = %v; want its minute plus the horizon", ttl)
		}
		if ok, err := s.RevokeStanding(ctx, id, Revocation{}); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if _, ok, err := s.ClaimStandingEnd(ctx, id); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 || ttl > StandingClaimedRetention {
			t.Fatalf("TTL of a claimed end = %v; want at most %v", ttl, StandingClaimedRetention)
		}
		if n := c.SCard(ctx, prefix+"standing-all").Val(); n != 0 {
			t.Fatalf("a claimed end stays in the index of all grants (%d members)", n)
		}
	})
}

// A file ledger whose standing table predates kept ends is upgraded when
// opened, and its grants keep working.
func TestFileUpgradesStandingTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	id, scope := newNonce(), newNonce()
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
		f, err := OpenFile(ctx, path)
		if err != nil {
			t.Fatalf("open #%d: %v", i+1, err)
		}
		if i == 0 {
			if left, ok, err := f.UseStanding(ctx, id); !ok || err != nil || left != 2 {
				t.Fatalf("use of the old grant = %d, %v, %v", left, ok, err)
			}
			if ok, err := f.RevokeStanding(ctx, id, Revocation{By: "admin"}); !ok || err != nil {
				t.Fatalf("revoke = %v, %v", ok, err)
			}
		} else if e, ok, err := f.ClaimStandingEnd(ctx, id); !ok || err != nil || e.Reason != EndRevoked || e.By != "admin" {
			t.Fatalf("claim = %+v, %v, %v", e, ok, err)
		}
		f.Close()
	}
}
