package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

func TestFileBadDatabaseRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not a database\n", 300)), 0o600); err != nil {
		t.Fatal(err)
	}
	wrongShape := filepath.Join(dir, "shape.db")
	db, err := sql.Open("sqlite", wrongShape)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE grants (nonce TEXT PRIMARY KEY, expires_at TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for name, url := range map[string]string{
		"garbage file":      "file:" + garbage,
		"wrong table shape": "file:" + wrongShape,
		"directory":         "file:" + dir,
		// (A missing parent directory is created, 0700: TestFileCreatedPrivate.)
		"parent is a file": "file:" + filepath.Join(garbage, "l.db"),
	} {
		t.Run(name, func(t *testing.T) {
			s, err := ledger.Open(ctx, url+"?ledger_timeout=300ms")
			if err == nil {
				s.Close()
				t.Fatalf("Open(%s) succeeded", url)
			}
		})
	}
}

// TestFileCorruptedAfterIssue damages the table's pages after a grant was
// issued: the store must report an error (or not find the grant), never
// approve.
func TestFileCorruptedAfterIssue(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	nonces := make([]string, 200)
	for i := range nonces {
		nonces[i] = ledgertest.NewNonce()
		if err := s.Issue(ctx, nonces[i], time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the 100-byte header and page 1 (schema); scramble the rest.
	const page = 4096
	if len(raw) <= page {
		t.Fatalf("database is %d bytes; expected table pages after page 1", len(raw))
	}
	for i := page; i < len(raw); i++ {
		raw[i] = byte(i*31) ^ 0x5a
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path)
	if err != nil {
		t.Logf("corrupt ledger refused at Open: %v", err)
		return
	}
	defer s2.Close()
	errs := 0
	for _, n := range nonces {
		ok, err := s2.Redeem(ctx, n)
		if ok {
			t.Fatalf("corrupt ledger approved nonce %s", n)
		}
		if err != nil {
			errs++
		}
	}
	t.Logf("corrupt ledger: %d of %d redemptions failed with an error, none approved", errs, len(nonces))
	if errs == 0 {
		t.Fatal("corrupt ledger answered every redemption without an error")
	}
}

// TestFileLockedRefuses holds SQLite's write lock from another connection (as
// a stuck process would): redemptions fail within the bound, and succeed once
// the lock is released.
func TestFileLockedRefuses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := ledger.Open(ctx, "file:"+path+"?ledger_timeout=300ms")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := ledgertest.NewNonce()
	if err := s.Issue(ctx, n, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	locker, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close()
	conn, err := locker.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	ledgertest.Timed(t, "Redeem on a locked file", func() {
		ok, err := s.Redeem(ctx, n)
		if ok || !errors.Is(err, ledger.ErrUnavailable) {
			t.Fatalf("Redeem while locked = %v, %v; want false, ledger.ErrUnavailable", ok, err)
		}
	})
	ledgertest.Timed(t, "Issue on a locked file", func() {
		if err := s.Issue(ctx, ledgertest.NewNonce(), time.Now().Add(time.Hour)); !errors.Is(err, ledger.ErrUnavailable) {
			t.Fatalf("Issue while locked = %v; want ledger.ErrUnavailable", err)
		}
	})
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if ok, err := s.Redeem(ctx, n); !ok || err != nil {
		t.Fatalf("control: Redeem after unlock = %v, %v; want true, nil", ok, err)
	}
}

// TestSweepRemovesExpired: the file ledger deletes expired rows on its own
// and keeps live ones.
func TestSweepRemovesExpired(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	ledgertest.SweepRemovesExpired(t, "file:"+path, func() int {
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM grants`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
}

// TestFileTwoProcesses has two OS processes redeem the same grants from one
// file: each grant is won exactly once.
func TestFileTwoProcesses(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const total = 300
	list := make([]string, total)
	for i := range list {
		list[i] = ledgertest.NewNonce()
		if err := s.Issue(ctx, list[i], time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	listFile := filepath.Join(t.TempDir(), "nonces")
	if err := os.WriteFile(listFile, []byte(strings.Join(list, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		won []string
		err error
	}
	results := make(chan result, 2)
	for p := 0; p < 2; p++ {
		go func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "LEDGER_HELPER_FILE="+path, "LEDGER_HELPER_LIST="+listFile)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var won []string
			sc := bufio.NewScanner(strings.NewReader(string(out)))
			for sc.Scan() {
				if w, ok := strings.CutPrefix(sc.Text(), "WON "); ok {
					won = append(won, w)
				}
			}
			if err != nil {
				err = fmt.Errorf("%w: %s", err, stderr.String())
			}
			results <- result{won, err}
		}()
	}
	seen := map[string]int{}
	for p := 0; p < 2; p++ {
		r := <-results
		if r.err != nil {
			t.Fatalf("helper process: %v", r.err)
		}
		for _, w := range r.won {
			seen[w]++
		}
	}
	for _, n := range list {
		if seen[n] != 1 {
			t.Errorf("nonce %s redeemed %d times across processes; want 1", n, seen[n])
		}
	}
	if len(seen) != total {
		t.Errorf("%d distinct nonces won; want %d", len(seen), total)
	}
}

// fileRedeemHelper is the child process of TestFileTwoProcesses (dispatched
// from TestMain): it redeems every listed nonce and prints those it won.
func fileRedeemHelper(path, list string) error {
	raw, err := os.ReadFile(list)
	if err != nil {
		return err
	}
	// SQLite's lock is not fair between processes (a waiter polls while the
	// other process keeps re-taking it), so under load a 2 s bound can expire;
	// this test is about exactly-once, not latency.
	s, err := ledger.Open(context.Background(), "file:"+path+"?ledger_timeout="+ledgertest.ConformanceTimeout)
	if err != nil {
		return err
	}
	defer s.Close()
	for _, n := range strings.Split(string(raw), "\n") {
		ok, err := s.Redeem(context.Background(), n)
		if err != nil {
			return err
		}
		if ok {
			fmt.Printf("WON %s\n", n)
		}
	}
	return nil
}

func TestMain(m *testing.M) {
	if path := os.Getenv("LEDGER_HELPER_FILE"); path != "" {
		if err := fileRedeemHelper(path, os.Getenv("LEDGER_HELPER_LIST")); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestConcurrentOpen starts several processes' stores at once on a fresh
// file (SQLite switches to WAL on first open).
func TestConcurrentOpen(t *testing.T) {
	ledgertest.ConcurrentOpen(t, fileBackend(t))
}
