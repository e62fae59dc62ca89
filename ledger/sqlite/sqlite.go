package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/internal/storeurl"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Store is a ledger.Store in one SQLite database file. Several processes
// on one host may open the same path: SQLite's file locks serialize their
// writes, and a redemption is a single DELETE ... RETURNING statement, so
// exactly one of them removes a given row.
type Store struct {
	db      *sql.DB
	path    string
	timeout time.Duration
	issue   *sql.Stmt
	redeem  *sql.Stmt
	sweep   *sql.Stmt
	stPut   *sql.Stmt
	stList  *sql.Stmt
	stUse   *sql.Stmt
	stRev   *sql.Stmt
	stSwp   *sql.Stmt
	stEnded *sql.Stmt
	stClaim *sql.Stmt
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	mu      sync.RWMutex // guards closed against use during Close
	closed  bool
}

const fileSchema = `CREATE TABLE IF NOT EXISTS grants (
	nonce      TEXT PRIMARY KEY NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS standing (
	id         TEXT PRIMARY KEY NOT NULL,
	scope      TEXT NOT NULL,
	expires_at INTEGER NOT NULL,
	uses       INTEGER NOT NULL,
	data       BLOB NOT NULL,
	ended      TEXT NOT NULL DEFAULT '',
	ended_by   TEXT NOT NULL DEFAULT '',
	ended_at   INTEGER NOT NULL DEFAULT 0,
	claimed_at INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX IF NOT EXISTS standing_scope ON standing(scope);
CREATE TABLE IF NOT EXISTS outcomes (
	id         TEXT PRIMARY KEY NOT NULL,
	expires_at INTEGER NOT NULL,
	data       BLOB NOT NULL
) STRICT`

// fileStandingEndColumns are added to a standing table made before grants'
// ends were kept.
const fileStandingEndColumns = `ALTER TABLE standing ADD COLUMN ended TEXT NOT NULL DEFAULT '';
ALTER TABLE standing ADD COLUMN ended_by TEXT NOT NULL DEFAULT '';
ALTER TABLE standing ADD COLUMN ended_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE standing ADD COLUMN claimed_at INTEGER NOT NULL DEFAULT 0`

// filePath extracts the path from file:PATH, file:///PATH or
// file://localhost/PATH, and the ledger's own query parameters.
func filePath(raw string) (string, storeurl.Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", storeurl.Options{}, fmt.Errorf("ledger: file URL: %w", err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", storeurl.Options{}, fmt.Errorf("ledger: file URL names host %q; a file ledger is local to one host", u.Host)
	}
	if u.Fragment != "" {
		return "", storeurl.Options{}, fmt.Errorf("ledger: file URL has a fragment %q", u.Fragment)
	}
	q, err := storeurl.ParseQuery(u.RawQuery)
	if err != nil {
		return "", storeurl.Options{}, err
	}
	o, err := storeurl.TakeOptions(q)
	if err != nil {
		return "", o, err
	}
	if o.Prefix != "" || o.Table != "" {
		return "", o, errors.New("ledger: file URL does not take ledger_prefix or ledger_table")
	}
	if len(q) != 0 {
		return "", o, fmt.Errorf("ledger: file URL has unknown parameters %q", q.Encode())
	}
	p := u.Path
	if u.Opaque != "" {
		if p, err = url.PathUnescape(u.Opaque); err != nil {
			return "", o, fmt.Errorf("ledger: file URL path: %w", err)
		}
	}
	if p == "" {
		return "", o, errors.New("ledger: file URL has no path (want file:PATH)")
	}
	// The driver cuts a DSN at '?', so such a path would open another file.
	if strings.ContainsAny(p, "?#\x00") {
		return "", o, fmt.Errorf("ledger: file path %q contains '?', '#' or NUL", p)
	}
	return p, o, nil
}

func init() { ledger.Register("file", openURL) }

// Open opens (creating with mode 0600 if needed) the SQLite ledger at
// path, with the default timeout and sweep interval. ledger.Open opens one
// from a file:PATH URL, which may also set them.
func Open(ctx context.Context, path string) (*Store, error) {
	return openFileWith(ctx, path, storeurl.Defaults())
}

func openURL(ctx context.Context, raw string) (ledger.Store, error) {
	p, o, err := filePath(raw)
	if err != nil {
		return nil, err
	}
	f, err := openFileWith(ctx, p, o)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func openFileWith(ctx context.Context, path string, o storeurl.Options) (*Store, error) {
	if strings.ContainsAny(path, "?#\x00") {
		return nil, fmt.Errorf("ledger: file path %q contains '?', '#' or NUL", path)
	}
	// Create the file ourselves so that it starts private; SQLite gives the
	// -wal and -shm files the main file's permissions. Its directory too,
	// on a fresh machine.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("ledger: file %s: %w", path, err)
	}
	fh, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: file %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return nil, fmt.Errorf("ledger: file %s: %w", path, err)
	}
	busy := o.Timeout.Milliseconds()
	if busy < 1 {
		busy = 1
	}
	// WAL lets readers and the single writer proceed together and is
	// shared between processes through the -shm file; synchronous=FULL
	// makes every committed issue/redeem survive power loss, so a crash
	// cannot resurrect a spent grant. busy_timeout makes a second process
	// wait for the write lock, bounded by the operation timeout.
	dsn := path + "?_pragma=busy_timeout(" + strconv.FormatInt(busy, 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: file %s: %w", path, err)
	}
	// One connection per process: SQLite has one writer at a time anyway,
	// and goroutines queueing in database/sql (bounded by their context)
	// are far cheaper than connections polling the lock in busy_timeout.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	f := &Store{db: db, path: path, timeout: o.Timeout, stop: make(chan struct{}), done: make(chan struct{})}
	if err := f.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	go f.sweeper(o.Sweep)
	return f, nil
}

// openFloor is the least time opening gets (schema, checks, statements):
// ledger_timeout bounds each redemption, and a sub-millisecond one would
// otherwise make a server fail to start on a loaded machine for no gain.
const openFloor = 5 * time.Second

func (f *Store) init(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, max(f.timeout, openFloor))
	defer cancel()
	if err := execRetryBusy(ctx, f.db, fileSchema); err != nil {
		return ledger.Unavailable("file", "create schema in "+f.path, err)
	}
	// Refuse a database whose grants table is not the one we create: a
	// different column type could make comparisons lie.
	// One query for both checks: an open with a short ledger_timeout has
	// little time for round trips.
	var cols, upgraded int
	err := f.db.QueryRowContext(ctx,
		`SELECT (SELECT count(*) FROM pragma_table_info('grants') WHERE (name='nonce' AND type='TEXT' AND pk=1) OR (name='expires_at' AND type='INTEGER')),
		        (SELECT count(*) FROM pragma_table_info('standing') WHERE name = 'claimed_at')`).Scan(&cols, &upgraded)
	if err != nil {
		return ledger.Unavailable("file", "check schema in "+f.path, err)
	}
	if cols != 2 {
		return ledger.Unavailable("file", "check schema in "+f.path, errors.New("table grants has an unexpected shape"))
	}
	if upgraded == 0 {
		// One transaction: another process upgrading the same file at
		// once fails on the duplicate column and finds it there.
		if err := execRetryBusy(ctx, f.db, "BEGIN IMMEDIATE; "+fileStandingEndColumns+"; COMMIT"); err != nil {
			_, _ = f.db.ExecContext(ctx, "ROLLBACK")
			if f.db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('standing') WHERE name = 'claimed_at'`).Scan(&cols) != nil || cols == 0 {
				return ledger.Unavailable("file", "upgrade schema in "+f.path, err)
			}
		}
	}
	var err2 error
	if f.issue, err2 = f.db.PrepareContext(ctx,
		// An expired row may be replaced, as an expired Redis key would be.
		`INSERT INTO grants(nonce, expires_at) VALUES (?1, ?2)
		 ON CONFLICT(nonce) DO UPDATE SET expires_at = excluded.expires_at WHERE grants.expires_at <= ?3`); err2 != nil {
		return ledger.Unavailable("file", "prepare", err2)
	}
	if f.redeem, err2 = f.db.PrepareContext(ctx,
		`DELETE FROM grants WHERE nonce = ?1 AND expires_at > ?2 RETURNING nonce`); err2 != nil {
		return ledger.Unavailable("file", "prepare", err2)
	}
	if f.sweep, err2 = f.db.PrepareContext(ctx, `DELETE FROM grants WHERE expires_at <= ?1`); err2 != nil {
		return ledger.Unavailable("file", "prepare", err2)
	}
	for _, p := range []struct {
		st  **sql.Stmt
		sql string
	}{
		// An ended grant's row stays until its tombstone is swept: its ID
		// stays taken, so a put cannot bring it back.
		{&f.stPut, `INSERT INTO standing(id, scope, expires_at, uses, data) VALUES (?1, ?2, ?3, ?4, ?5)
			ON CONFLICT(id) DO NOTHING`},
		{&f.stList, `SELECT id, scope, expires_at, uses, data FROM standing
			WHERE (?1 = '' OR scope = ?1) AND expires_at > ?2 AND uses > 0 ORDER BY expires_at, id`},
		// One statement: SQLite's write lock makes the check and the
		// decrement one step for every process sharing the file.
		{&f.stUse, `UPDATE standing SET uses = uses - 1 WHERE id = ?1 AND uses > 0 AND expires_at > ?2 RETURNING uses`},
		// A revocation takes every use left, which is what a use checks,
		// and keeps why and by whom for the gate that claims the end.
		{&f.stRev, `UPDATE standing SET uses = 0, ended = ?3, ended_by = ?4, ended_at = ?2
			WHERE id = ?1 AND uses > 0 AND expires_at > ?2 RETURNING 1`},
		{&f.stEnded, `SELECT id, scope, expires_at, uses, data, ended, ended_by, ended_at FROM standing
			WHERE claimed_at = 0 AND (uses <= 0 OR expires_at <= ?1) ORDER BY expires_at, id LIMIT ?2`},
		{&f.stClaim, `UPDATE standing SET claimed_at = ?2
			WHERE id = ?1 AND claimed_at = 0 AND (uses <= 0 OR expires_at <= ?2)
			RETURNING scope, expires_at, uses, data, ended, ended_by, ended_at`},
		// ?1: claimed before this is swept; ?2: unclaimed and expired before this.
		{&f.stSwp, `DELETE FROM standing WHERE (claimed_at > 0 AND claimed_at <= ?1) OR expires_at <= ?2`},
	} {
		if *p.st, err2 = f.db.PrepareContext(ctx, p.sql); err2 != nil {
			return ledger.Unavailable("file", "prepare", err2)
		}
	}
	return nil
}

// Issue records nonce until expires (stored in Unix nanoseconds).
func (f *Store) Issue(ctx context.Context, nonce string, expires time.Time) error {
	now := time.Now()
	if err := ledger.CheckIssue(nonce, expires, now); err != nil {
		return err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	res, err := f.issue.ExecContext(ctx, nonce, expires.UnixNano(), now.UnixNano())
	if err != nil {
		return ledger.Unavailable("file", "issue", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return ledger.Unavailable("file", "issue", err)
	}
	if n != 1 {
		return ledger.ErrExists
	}
	return nil
}

// Redeem deletes the row for nonce if it is unexpired, in one statement.
func (f *Store) Redeem(ctx context.Context, nonce string) (bool, error) {
	if err := ledger.CheckNonce(nonce); err != nil {
		return false, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var got string
	err := f.redeem.QueryRowContext(ctx, nonce, time.Now().UnixNano()).Scan(&got)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, ledger.Unavailable("file", "redeem", err)
	}
	if got != nonce {
		return false, ledger.Unavailable("file", "redeem", fmt.Errorf("deleted row %q, asked for %q", got, nonce))
	}
	return true, nil
}

func (f *Store) sweeper(every time.Duration) {
	defer close(f.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
			// A failed sweep only delays cleanup; redemption checks
			// expiry itself, so an expired row is never honoured.
			_, _ = f.sweep.ExecContext(ctx, time.Now().UnixNano())
			_ = f.sweepStanding(ctx, time.Now())
			_, _ = f.db.ExecContext(ctx, `DELETE FROM outcomes WHERE expires_at <= ?`, time.Now().UnixNano())
			cancel()
		}
	}
}

// Close stops the sweeper and closes the database. Later calls fail with
// ledger.ErrClosed.
func (f *Store) Close() error {
	var err error
	f.once.Do(func() {
		close(f.stop)
		<-f.done
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		err = f.db.Close()
	})
	return err
}

// Standing returns f itself: it keeps standing grants.
func (f *Store) Standing() ledger.StandingStore { return f }

// PutStanding records a standing grant; an expired or used-up row with the
// same ID may be replaced.
func (f *Store) PutStanding(ctx context.Context, s ledger.Standing) error {
	now := time.Now()
	if err := ledger.CheckStanding(s, now); err != nil {
		return err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	data := s.Data
	if data == nil {
		data = []byte{}
	}
	res, err := f.stPut.ExecContext(ctx, s.ID, s.Scope, s.Expires.UnixNano(), s.Uses, data, now.UnixNano())
	if err != nil {
		return ledger.Unavailable("file", "put standing", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return ledger.Unavailable("file", "put standing", err)
	} else if n != 1 {
		return ledger.ErrExists
	}
	return nil
}

// StandingFor lists live standing grants of scope, or all when scope is "".
func (f *Store) StandingFor(ctx context.Context, scope string) ([]ledger.Standing, error) {
	if err := ledger.CheckScope(scope); err != nil {
		return nil, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rows, err := f.stList.QueryContext(ctx, scope, time.Now().UnixNano())
	if err != nil {
		return nil, ledger.Unavailable("file", "list standing", err)
	}
	defer rows.Close()
	var out []ledger.Standing
	for rows.Next() {
		var s ledger.Standing
		var exp int64
		if err := rows.Scan(&s.ID, &s.Scope, &exp, &s.Uses, &s.Data); err != nil {
			return nil, ledger.Unavailable("file", "list standing", err)
		}
		s.Expires = time.Unix(0, exp)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, ledger.Unavailable("file", "list standing", err)
	}
	return out, nil
}

// UseStanding takes one use in one UPDATE ... RETURNING statement.
func (f *Store) UseStanding(ctx context.Context, id string) (int, bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return 0, false, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return 0, false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var left int
	err := f.stUse.QueryRowContext(ctx, id, time.Now().UnixNano()).Scan(&left)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, ledger.Unavailable("file", "use standing", err)
	}
	return left, true, nil
}

// RevokeStanding ends a live standing grant in one UPDATE statement.
func (f *Store) RevokeStanding(ctx context.Context, id string, r ledger.Revocation) (bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return false, err
	}
	if err := ledger.CheckRevocation(&r); err != nil {
		return false, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var one int
	err := f.stRev.QueryRowContext(ctx, id, time.Now().UnixNano(), r.Reason, r.By).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, ledger.Unavailable("file", "revoke standing", err)
	}
	return true, nil
}

// EndedStanding lists unclaimed ends.
func (f *Store) EndedStanding(ctx context.Context) ([]ledger.StandingEnd, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	rows, err := f.stEnded.QueryContext(ctx, time.Now().UnixNano(), ledger.MaxEndedListed)
	if err != nil {
		return nil, ledger.Unavailable("file", "list ended standing", err)
	}
	defer rows.Close()
	var out []ledger.StandingEnd
	for rows.Next() {
		var e ledger.StandingEnd
		var exp, at int64
		if err := rows.Scan(&e.ID, &e.Scope, &exp, &e.Uses, &e.Data, &e.Reason, &e.By, &at); err != nil {
			return nil, ledger.Unavailable("file", "list ended standing", err)
		}
		out = append(out, fileEnd(e, exp, at))
	}
	if err := rows.Err(); err != nil {
		return nil, ledger.Unavailable("file", "list ended standing", err)
	}
	return out, nil
}

func fileEnd(e ledger.StandingEnd, exp, at int64) ledger.StandingEnd {
	e.Expires = time.Unix(0, exp)
	e.Reason = ledger.EndReason(e.Reason, e.Uses)
	e.At = ledger.EndAt(e.Reason, e.Expires, time.Unix(0, at))
	return e
}

// ClaimStandingEnd claims an end in one UPDATE ... RETURNING statement:
// SQLite's write lock lets exactly one process change claimed_at from 0.
func (f *Store) ClaimStandingEnd(ctx context.Context, id string) (ledger.StandingEnd, bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return ledger.StandingEnd{}, false, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ledger.StandingEnd{}, false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	e := ledger.StandingEnd{Standing: ledger.Standing{ID: id}}
	var exp, at int64
	err := f.stClaim.QueryRowContext(ctx, id, time.Now().UnixNano()).Scan(&e.Scope, &exp, &e.Uses, &e.Data, &e.Reason, &e.By, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return ledger.StandingEnd{}, false, nil
	}
	if err != nil {
		return ledger.StandingEnd{}, false, ledger.Unavailable("file", "claim standing end", err)
	}
	return fileEnd(e, exp, at), true, nil
}

// sweepStanding forgets tombstones past their retention, judged at now.
func (f *Store) sweepStanding(ctx context.Context, now time.Time) error {
	_, err := f.stSwp.ExecContext(ctx, now.Add(-ledger.StandingClaimedRetention).UnixNano(), now.Add(-ledger.StandingEndHorizon).UnixNano())
	return err
}

// execRetryBusy runs a schema statement, trying again while SQLite answers
// SQLITE_BUSY, until ctx ends. Processes opening one new file at once
// race to create its tables: a statement that read the schema and then
// needs the write lock gets SQLITE_BUSY at once, without the busy
// timeout (SQLite's deadlock avoidance), so waiting is ours to do.
func execRetryBusy(ctx context.Context, db *sql.DB, stmt string) error {
	for {
		_, err := db.ExecContext(ctx, stmt)
		var coded interface{ Code() int }
		if err == nil || !errors.As(err, &coded) || coded.Code()&0xff != 5 { // 5: SQLITE_BUSY
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(10 * time.Millisecond):
		}
	}
}
