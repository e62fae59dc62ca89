package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// OutcomesTable names the table of outcomes that goes with a ledger table.
func OutcomesTable(table string) string { return table + "_outcomes" }

// outcomeSQL holds the statements on the outcomes table.
type outcomeSQL struct{ schema, put, get, sweep string }

func newOutcomeSQL(table string) outcomeSQL {
	t := pgx.Identifier{OutcomesTable(table)}.Sanitize()
	return outcomeSQL{
		schema: `CREATE TABLE IF NOT EXISTS ` + t + ` (
			id         text PRIMARY KEY,
			expires_at timestamptz NOT NULL,
			data       bytea NOT NULL
		)`,
		// The first put wins; an expired row (by the database's clock) is
		// replaced.
		put: `INSERT INTO ` + t + ` AS o (id, expires_at, data) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at, data = EXCLUDED.data
			WHERE o.expires_at <= now()`,
		get:   `SELECT data FROM ` + t + ` WHERE id = $1 AND expires_at > now()`,
		sweep: `DELETE FROM ` + t + ` WHERE expires_at <= now()`,
	}
}

// Outcomes returns p itself: outcomes live in the database, beside the
// grants.
func (p *Store) Outcomes() ledger.OutcomeStore { return p }

// PutOutcome inserts the row; an unexpired row of id makes it
// ledger.ErrExists.
func (p *Store) PutOutcome(ctx context.Context, id string, data []byte, expires time.Time) error {
	if err := ledger.CheckOutcome(id, data, expires, time.Now()); err != nil {
		return err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	if data == nil {
		data = []byte{}
	}
	tag, err := p.pool.Exec(ctx, p.oc.put, id, expires, data)
	if err != nil {
		return ledger.Unavailable("postgres", "put outcome", err)
	}
	if tag.RowsAffected() != 1 {
		return ledger.ErrExists
	}
	return nil
}

// Outcome reads the unexpired row of id. A read changes nothing, so a
// connection lost on the way is retried once.
func (p *Store) Outcome(ctx context.Context, id string) ([]byte, bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return nil, false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	var data []byte
	err := retryLost(ctx, func() error { return p.pool.QueryRow(ctx, p.oc.get, id).Scan(&data) })
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, ledger.Unavailable("postgres", "outcome", err)
	}
	return data, true, nil
}
