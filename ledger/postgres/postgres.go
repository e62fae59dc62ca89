package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/internal/storeurl"
)

// DefaultTable is the table the PostgreSQL store creates and uses.
const DefaultTable = "mcpsafe_grants"

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Store is a ledger.Store in a PostgreSQL table shared by replicas. Redeem
// is one DELETE ... WHERE nonce = $1 AND expires_at > now() RETURNING: row
// locking lets exactly one concurrent DELETE return the row. Expiry is
// judged by the database clock, and a background DELETE removes expired
// rows.
type Store struct {
	pool    *pgxpool.Pool
	table   string
	timeout time.Duration
	sqlIss  string
	sqlRed  string
	sqlSwp  string
	sqlMine string
	st      standingSQL
	oc      outcomeSQL
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	mu      sync.RWMutex
	closed  bool
}

func init() {
	ledger.Register("postgres", openURL)
	ledger.Register("postgresql", openURL)
}

func openURL(ctx context.Context, raw string) (ledger.Store, error) {
	p, err := Open(ctx, raw)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Open connects to the PostgreSQL database a postgres:// or postgresql://
// URL names (pgx's URL syntax, plus the ledger's ledger_timeout,
// ledger_sweep and ledger_table parameters), pings it and creates the
// tables if missing.
func Open(ctx context.Context, raw string) (*Store, error) {
	u, o, err := storeurl.Split(raw, "postgres")
	if err != nil {
		return nil, err
	}
	if o.Prefix != "" {
		return nil, errors.New("ledger: postgres URL does not take ledger_prefix (use ledger_table)")
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		// pgx errors can echo the connection string; keep the password out.
		return nil, fmt.Errorf("ledger: postgres URL %s: cannot parse", storeurl.Redact(raw))
	}
	table := o.Table
	if table == "" {
		table = DefaultTable
	}
	if !tableName.MatchString(table) {
		return nil, fmt.Errorf("ledger: ledger_table %q: want [a-z_][a-z0-9_]{0,62}", table)
	}
	// PostgreSQL cuts identifiers at 63 bytes: a longer name for the
	// standing table's index could collide with another table's.
	if n := len(StandingTable(table) + "_scope"); n > 63 {
		return nil, fmt.Errorf("ledger: ledger_table %q is too long to name its standing-grants table (at most %d bytes)", table, 63-(n-len(table)))
	}
	cfg.ConnConfig.ConnectTimeout = o.Timeout
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, ledger.Unavailable("postgres", "connect "+storeurl.Redact(raw), err)
	}
	p := &Store{pool: pool, table: table, timeout: o.Timeout, stop: make(chan struct{}), done: make(chan struct{})}
	t := pgx.Identifier{table}.Sanitize()
	p.sqlIss = `INSERT INTO ` + t + ` AS g (nonce, expires_at) VALUES ($1, $2)
		ON CONFLICT (nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE g.expires_at <= now()`
	p.sqlRed = `DELETE FROM ` + t + ` WHERE nonce = $1 AND expires_at > now() RETURNING nonce`
	p.sqlSwp = `DELETE FROM ` + t + ` WHERE expires_at <= now()`
	p.sqlMine = `SELECT expires_at = $2 FROM ` + t + ` WHERE nonce = $1`
	p.st = newStandingSQL(table)
	p.oc = newOutcomeSQL(table)
	if err := p.init(ctx, t); err != nil {
		pool.Close()
		return nil, err
	}
	go p.sweeper(o.Sweep)
	return p, nil
}

func (p *Store) init(ctx context.Context, t string) error {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if err := p.pool.Ping(ctx); err != nil {
		return ledger.Unavailable("postgres", "ping", err)
	}
	// Replicas starting together would race CREATE TABLE IF NOT EXISTS
	// (it is not atomic against itself); an advisory lock serializes them.
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('mcpsafe ledger schema'))`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+t+` (
			nonce      text PRIMARY KEY,
			expires_at timestamptz NOT NULL
		)`); err != nil {
			return err
		}
		idx := pgx.Identifier{p.table + "_expires_at"}.Sanitize()
		if _, err := tx.Exec(ctx, `CREATE INDEX IF NOT EXISTS `+idx+` ON `+t+` (expires_at)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, p.st.schema); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, p.oc.schema)
		return err
	})
	if err != nil {
		return ledger.Unavailable("postgres", "create schema", err)
	}
	return nil
}

// Issue inserts the row; an existing unexpired row makes it ledger.ErrExists.
func (p *Store) Issue(ctx context.Context, nonce string, expires time.Time) error {
	if err := ledger.CheckIssue(nonce, expires, time.Now()); err != nil {
		return err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	tag, err := p.pool.Exec(ctx, p.sqlIss, nonce, expires)
	if err != nil && lostConnection(err) && ctx.Err() == nil {
		// The insert may have committed before the connection died. The
		// retry then finds the row: it is this call's when it holds this
		// exact expiry (nonces are 128-bit random, so nobody else issues
		// one), and a retry can never make one grant redeemable twice.
		if tag, err = p.pool.Exec(ctx, p.sqlIss, nonce, expires); err == nil && tag.RowsAffected() != 1 {
			var ours bool
			if err = p.pool.QueryRow(ctx, p.sqlMine, nonce, expires).Scan(&ours); err == nil && ours {
				return nil
			}
		}
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return ledger.Unavailable("postgres", "issue", err)
	}
	if err != nil || tag.RowsAffected() != 1 {
		return ledger.ErrExists
	}
	return nil
}

// Redeem deletes the unexpired row for nonce in one statement.
func (p *Store) Redeem(ctx context.Context, nonce string) (bool, error) {
	if err := ledger.CheckNonce(nonce); err != nil {
		return false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var got string
	err := retryLost(ctx, func() error { return p.pool.QueryRow(ctx, p.sqlRed, nonce).Scan(&got) })
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, ledger.Unavailable("postgres", "redeem", err)
	}
	if got != nonce {
		return false, ledger.Unavailable("postgres", "redeem", fmt.Errorf("deleted row %q, asked for %q", got, nonce))
	}
	return true, nil
}

func (p *Store) sweeper(every time.Duration) {
	defer close(p.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
			// A failed sweep only delays cleanup: Redeem checks expiry
			// itself, so an expired row is never honoured.
			_, _ = p.pool.Exec(ctx, p.sqlSwp)
			_ = p.sweepStanding(ctx, time.Now())
			_, _ = p.pool.Exec(ctx, p.oc.sweep)
			cancel()
		}
	}
}

// Close stops the sweeper and the pool; later calls fail with
// ledger.ErrClosed.
func (p *Store) Close() error {
	p.once.Do(func() {
		close(p.stop)
		<-p.done
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.pool.Close()
	})
	return nil
}

// standingSQL holds the statements on the standing grants table, named
// after the ledger table with the suffix _standing.
type standingSQL struct{ schema, put, list, use, revoke, ended, claim, sweep string }

// StandingTable names the table of standing grants that goes with a ledger
// table.
func StandingTable(table string) string { return table + "_standing" }

func newStandingSQL(table string) standingSQL {
	t := pgx.Identifier{StandingTable(table)}.Sanitize()
	idx := pgx.Identifier{StandingTable(table) + "_scope"}.Sanitize()
	return standingSQL{
		schema: `CREATE TABLE IF NOT EXISTS ` + t + ` (
			id         text PRIMARY KEY,
			scope      text NOT NULL,
			expires_at timestamptz NOT NULL,
			uses       integer NOT NULL,
			data       bytea NOT NULL
		); CREATE INDEX IF NOT EXISTS ` + idx + ` ON ` + t + ` (scope);
		ALTER TABLE ` + t + ` ADD COLUMN IF NOT EXISTS ended text NOT NULL DEFAULT '',
			ADD COLUMN IF NOT EXISTS ended_by text NOT NULL DEFAULT '',
			ADD COLUMN IF NOT EXISTS ended_at timestamptz,
			ADD COLUMN IF NOT EXISTS claimed_at timestamptz`,
		// An ended grant's row stays until its tombstone is swept: its ID
		// stays taken, so a put cannot bring it back.
		put: `INSERT INTO ` + t + ` (id, scope, expires_at, uses, data) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (id) DO NOTHING`,
		list: `SELECT id, scope, expires_at, uses, data FROM ` + t + `
			WHERE ($1 = '' OR scope = $1) AND expires_at > now() AND uses > 0 ORDER BY expires_at, id`,
		// Row locking serializes concurrent UPDATEs of one row: each sees
		// the count the previous one left, so K uses succeed exactly K times.
		use: `UPDATE ` + t + ` SET uses = uses - 1 WHERE id = $1 AND uses > 0 AND expires_at > now() RETURNING uses`,
		// A revocation takes every use left, which is what a use checks,
		// and keeps why and by whom for the gate that claims the end.
		revoke: `UPDATE ` + t + ` SET uses = 0, ended = $2, ended_by = $3, ended_at = now()
			WHERE id = $1 AND uses > 0 AND expires_at > now() RETURNING 1`,
		ended: `SELECT id, scope, expires_at, uses, data, ended, ended_by, ended_at FROM ` + t + `
			WHERE claimed_at IS NULL AND (uses <= 0 OR expires_at <= now()) ORDER BY expires_at, id LIMIT $1`,
		// Row locking serializes concurrent claims of one row: the second
		// sees claimed_at set and updates nothing.
		claim: `UPDATE ` + t + ` SET claimed_at = now()
			WHERE id = $1 AND claimed_at IS NULL AND (uses <= 0 OR expires_at <= now())
			RETURNING scope, expires_at, uses, data, ended, ended_by, ended_at`,
		// $1: claimed before this is swept; $2: unclaimed and expired before this.
		sweep: `DELETE FROM ` + t + ` WHERE claimed_at <= $1 OR expires_at <= $2`,
	}
}

// Standing returns p itself: it keeps standing grants.
func (p *Store) Standing() ledger.StandingStore { return p }

// PutStanding records a standing grant.
func (p *Store) PutStanding(ctx context.Context, s ledger.Standing) error {
	if err := ledger.CheckStanding(s, time.Now()); err != nil {
		return err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	data := s.Data
	if data == nil {
		data = []byte{}
	}
	tag, err := p.pool.Exec(ctx, p.st.put, s.ID, s.Scope, s.Expires, s.Uses, data)
	if err != nil {
		return ledger.Unavailable("postgres", "put standing", err)
	}
	if tag.RowsAffected() != 1 {
		return ledger.ErrExists
	}
	return nil
}

// StandingFor lists live standing grants of scope, or all when scope is "".
func (p *Store) StandingFor(ctx context.Context, scope string) ([]ledger.Standing, error) {
	if err := ledger.CheckScope(scope); err != nil {
		return nil, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	rows, err := p.pool.Query(ctx, p.st.list, scope)
	if err != nil {
		return nil, ledger.Unavailable("postgres", "list standing", err)
	}
	defer rows.Close()
	var out []ledger.Standing
	for rows.Next() {
		var s ledger.Standing
		if err := rows.Scan(&s.ID, &s.Scope, &s.Expires, &s.Uses, &s.Data); err != nil {
			return nil, ledger.Unavailable("postgres", "list standing", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, ledger.Unavailable("postgres", "list standing", err)
	}
	return out, nil
}

// UseStanding takes one use in one UPDATE ... RETURNING statement.
func (p *Store) UseStanding(ctx context.Context, id string) (int, bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return 0, false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return 0, false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var left int
	err := p.pool.QueryRow(ctx, p.st.use, id).Scan(&left)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, ledger.Unavailable("postgres", "use standing", err)
	}
	return left, true, nil
}

// RevokeStanding ends a live standing grant in one UPDATE statement.
func (p *Store) RevokeStanding(ctx context.Context, id string, r ledger.Revocation) (bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return false, err
	}
	if err := ledger.CheckRevocation(&r); err != nil {
		return false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var one int
	err := p.pool.QueryRow(ctx, p.st.revoke, id, r.Reason, r.By).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, ledger.Unavailable("postgres", "revoke standing", err)
	}
	return true, nil
}

// EndedStanding lists unclaimed ends.
func (p *Store) EndedStanding(ctx context.Context) ([]ledger.StandingEnd, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	rows, err := p.pool.Query(ctx, p.st.ended, ledger.MaxEndedListed)
	if err != nil {
		return nil, ledger.Unavailable("postgres", "list ended standing", err)
	}
	defer rows.Close()
	var out []ledger.StandingEnd
	for rows.Next() {
		var e ledger.StandingEnd
		var at *time.Time
		if err := rows.Scan(&e.ID, &e.Scope, &e.Expires, &e.Uses, &e.Data, &e.Reason, &e.By, &at); err != nil {
			return nil, ledger.Unavailable("postgres", "list ended standing", err)
		}
		out = append(out, postgresEnd(e, at))
	}
	if err := rows.Err(); err != nil {
		return nil, ledger.Unavailable("postgres", "list ended standing", err)
	}
	return out, nil
}

func postgresEnd(e ledger.StandingEnd, at *time.Time) ledger.StandingEnd {
	e.Reason = ledger.EndReason(e.Reason, e.Uses)
	var revoked time.Time
	if at != nil {
		revoked = *at
	}
	e.At = ledger.EndAt(e.Reason, e.Expires, revoked)
	return e
}

// ClaimStandingEnd claims an end in one UPDATE ... RETURNING statement.
func (p *Store) ClaimStandingEnd(ctx context.Context, id string) (ledger.StandingEnd, bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return ledger.StandingEnd{}, false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ledger.StandingEnd{}, false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	e := ledger.StandingEnd{Standing: ledger.Standing{ID: id}}
	var at *time.Time
	err := p.pool.QueryRow(ctx, p.st.claim, id).Scan(&e.Scope, &e.Expires, &e.Uses, &e.Data, &e.Reason, &e.By, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return ledger.StandingEnd{}, false, nil
	}
	if err != nil {
		return ledger.StandingEnd{}, false, ledger.Unavailable("postgres", "claim standing end", err)
	}
	return postgresEnd(e, at), true, nil
}

// sweepStanding forgets tombstones past their retention, judged at now
// (this process's clock: a skew only moves when a dead row goes).
func (p *Store) sweepStanding(ctx context.Context, now time.Time) error {
	_, err := p.pool.Exec(ctx, p.st.sweep, now.Add(-ledger.StandingClaimedRetention), now.Add(-ledger.StandingEndHorizon))
	return err
}
