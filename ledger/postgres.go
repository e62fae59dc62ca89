package ledger

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultPostgresTable is the table the PostgreSQL store creates and uses.
const DefaultPostgresTable = "mcpsafe_grants"

var tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Postgres is a Store in a PostgreSQL table shared by replicas. Redeem is one
// DELETE ... WHERE nonce = $1 AND expires_at > now() RETURNING: row locking
// lets exactly one concurrent DELETE return the row. Expiry is judged by the
// database clock, and a background DELETE removes expired rows.
type Postgres struct {
	pool    *pgxpool.Pool
	table   string
	timeout time.Duration
	sqlIss  string
	sqlRed  string
	sqlSwp  string
	st      standingSQL
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	mu      sync.RWMutex
	closed  bool
}

func openPostgres(ctx context.Context, raw string) (Store, error) {
	u, o, err := splitURL(raw, "postgres")
	if err != nil {
		return nil, err
	}
	if o.prefix != "" {
		return nil, errors.New("ledger: postgres URL does not take ledger_prefix (use ledger_table)")
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		// pgx errors can echo the connection string; keep the password out.
		return nil, fmt.Errorf("ledger: postgres URL %s: cannot parse", redactURL(raw))
	}
	table := o.table
	if table == "" {
		table = DefaultPostgresTable
	}
	if !tableName.MatchString(table) {
		return nil, fmt.Errorf("ledger: ledger_table %q: want [a-z_][a-z0-9_]{0,62}", table)
	}
	// PostgreSQL cuts identifiers at 63 bytes: a longer name for the
	// standing table's index could collide with another table's.
	if n := len(StandingTable(table) + "_scope"); n > 63 {
		return nil, fmt.Errorf("ledger: ledger_table %q is too long to name its standing-grants table (at most %d bytes)", table, 63-(n-len(table)))
	}
	cfg.ConnConfig.ConnectTimeout = o.timeout
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, unavailable("postgres", "connect "+redactURL(raw), err)
	}
	p := &Postgres{pool: pool, table: table, timeout: o.timeout, stop: make(chan struct{}), done: make(chan struct{})}
	t := pgx.Identifier{table}.Sanitize()
	p.sqlIss = `INSERT INTO ` + t + ` AS g (nonce, expires_at) VALUES ($1, $2)
		ON CONFLICT (nonce) DO UPDATE SET expires_at = EXCLUDED.expires_at WHERE g.expires_at <= now()`
	p.sqlRed = `DELETE FROM ` + t + ` WHERE nonce = $1 AND expires_at > now() RETURNING nonce`
	p.sqlSwp = `DELETE FROM ` + t + ` WHERE expires_at <= now()`
	p.st = newStandingSQL(table)
	if err := p.init(ctx, t); err != nil {
		pool.Close()
		return nil, err
	}
	go p.sweeper(o.sweep)
	return p, nil
}

func (p *Postgres) init(ctx context.Context, t string) error {
	ctx, cancel := opContext(ctx, p.timeout)
	defer cancel()
	if err := p.pool.Ping(ctx); err != nil {
		return unavailable("postgres", "ping", err)
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
		_, err := tx.Exec(ctx, p.st.schema)
		return err
	})
	if err != nil {
		return unavailable("postgres", "create schema", err)
	}
	return nil
}

// Issue inserts the row; an existing unexpired row makes it ErrExists.
func (p *Postgres) Issue(ctx context.Context, nonce string, expires time.Time) error {
	if err := checkIssue(nonce, expires, time.Now()); err != nil {
		return err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	ctx, cancel := opContext(ctx, p.timeout)
	defer cancel()
	tag, err := p.pool.Exec(ctx, p.sqlIss, nonce, expires)
	if err != nil {
		return unavailable("postgres", "issue", err)
	}
	if tag.RowsAffected() != 1 {
		return ErrExists
	}
	return nil
}

// Redeem deletes the unexpired row for nonce in one statement.
func (p *Postgres) Redeem(ctx context.Context, nonce string) (bool, error) {
	if err := checkNonce(nonce); err != nil {
		return false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false, ErrClosed
	}
	ctx, cancel := opContext(ctx, p.timeout)
	defer cancel()
	var got string
	err := p.pool.QueryRow(ctx, p.sqlRed, nonce).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, unavailable("postgres", "redeem", err)
	}
	if got != nonce {
		return false, unavailable("postgres", "redeem", fmt.Errorf("deleted row %q, asked for %q", got, nonce))
	}
	return true, nil
}

func (p *Postgres) sweeper(every time.Duration) {
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
			cancel()
		}
	}
}

// Close stops the sweeper and the pool; later calls fail with ErrClosed.
func (p *Postgres) Close() error {
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

// PutStanding records a standing grant.
func (p *Postgres) PutStanding(ctx context.Context, s Standing) error {
	if err := checkStanding(s, time.Now()); err != nil {
		return err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrClosed
	}
	ctx, cancel := opContext(ctx, p.timeout)
	defer cancel()
	data := s.Data
	if data == nil {
		data = []byte{}
	}
	tag, err := p.pool.Exec(ctx, p.st.put, s.ID, s.Scope, s.Expires, s.Uses, data)
	if err != nil {
		return unavailable("postgres", "put standing", err)
	}
	if tag.RowsAffected() != 1 {
		return ErrExists
	}
	return nil
}

// StandingFor lists live standing grants of scope, or all when scope is "".
func (p *Postgres) StandingFor(ctx context.Context, scope string) ([]Standing, error) {
	if err := checkScope(scope); err != nil {
		return nil, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ErrClosed
	}
	ctx, cancel := opContext(ctx, p.timeout)
	defer cancel()
	rows, err := p.pool.Query(ctx, p.st.list, scope)
	if err != nil {
		return nil, unavailable("postgres", "list standing", err)
	}
	defer rows.Close()
	var out []Standing
	for rows.Next() {
		var s Standing
		if err := rows.Scan(&s.ID, &s.Scope, &s.Expires, &s.Uses, &s.Data); err != nil {
			return nil, unavailable("postgres", "list standing", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("postgres", "list standing", err)
	}
	return out, nil
}

// UseStanding takes one use in one UPDATE ... RETURNING statement.
func (p *Postgres) UseStanding(ctx context.Context, id string) (int, bool, error) {
	if err := checkNonce(id); err != nil {
		return 0, false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return 0, false, ErrClosed
	}
	ctx, cancel := opContext(ctx, p.timeout)
	defer cancel()
	var left int
	err := p.pool.QueryRow(ctx, p.st.use, id).Scan(&left)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, unavailable("postgres", "use standing", err)
	}
	return left, true, nil
}

// RevokeStanding ends a live standing grant in one UPDATE statement.
func (p *Postgres) RevokeStanding(ctx context.Context, id string, r Revocation) (bool, error) {
	if err := checkNonce(id); err != nil {
		return false, err
	}
	if err := checkRevocation(&r); err != nil {
		return false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return false, ErrClosed
	}
	ctx, cancel := opContext(ctx, p.timeout)
	defer cancel()
	var one int
	err := p.pool.QueryRow(ctx, p.st.revoke, id, r.Reason, r.By).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, unavailable("postgres", "revoke standing", err)
	}
	return true, nil
}

// EndedStanding lists unclaimed ends.
func (p *Postgres) EndedStanding(ctx context.Context) ([]StandingEnd, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ErrClosed
	}
	ctx, cancel := opContext(ctx, p.timeout)
	defer cancel()
	rows, err := p.pool.Query(ctx, p.st.ended, MaxEndedListed)
	if err != nil {
		return nil, unavailable("postgres", "list ended standing", err)
	}
	defer rows.Close()
	var out []StandingEnd
	for rows.Next() {
		var e StandingEnd
		var at *time.Time
		if err := rows.Scan(&e.ID, &e.Scope, &e.Expires, &e.Uses, &e.Data, &e.Reason, &e.By, &at); err != nil {
			return nil, unavailable("postgres", "list ended standing", err)
		}
		out = append(out, postgresEnd(e, at))
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("postgres", "list ended standing", err)
	}
	return out, nil
}

func postgresEnd(e StandingEnd, at *time.Time) StandingEnd {
	e.Reason = endReason(e.Reason, e.Uses)
	var revoked time.Time
	if at != nil {
		revoked = *at
	}
	e.At = endAt(e.Reason, e.Expires, revoked)
	return e
}

// ClaimStandingEnd claims an end in one UPDATE ... RETURNING statement.
func (p *Postgres) ClaimStandingEnd(ctx context.Context, id string) (StandingEnd, bool, error) {
	if err := checkNonce(id); err != nil {
		return StandingEnd{}, false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return StandingEnd{}, false, ErrClosed
	}
	ctx, cancel := opContext(ctx, p.timeout)
	defer cancel()
	e := StandingEnd{Standing: Standing{ID: id}}
	var at *time.Time
	err := p.pool.QueryRow(ctx, p.st.claim, id).Scan(&e.Scope, &e.Expires, &e.Uses, &e.Data, &e.Reason, &e.By, &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return StandingEnd{}, false, nil
	}
	if err != nil {
		return StandingEnd{}, false, unavailable("postgres", "claim standing end", err)
	}
	return postgresEnd(e, at), true, nil
}

// sweepStanding forgets tombstones past their retention, judged at now
// (this process's clock: a skew only moves when a dead row goes).
func (p *Postgres) sweepStanding(ctx context.Context, now time.Time) error {
	_, err := p.pool.Exec(ctx, p.st.sweep, now.Add(-StandingClaimedRetention), now.Add(-StandingEndHorizon))
	return err
}
