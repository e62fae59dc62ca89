package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
)

// Outcomes returns f itself: outcomes live in the file, beside the grants.
func (f *Store) Outcomes() ledger.OutcomeStore { return f }

// PutOutcome inserts the row; an unexpired row of id makes it
// ledger.ErrExists, an expired one is replaced.
func (f *Store) PutOutcome(ctx context.Context, id string, data []byte, expires time.Time) error {
	now := time.Now()
	if err := ledger.CheckOutcome(id, data, expires, now); err != nil {
		return err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	res, err := f.db.ExecContext(ctx, `INSERT INTO outcomes (id, expires_at, data) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at, data = excluded.data
		WHERE outcomes.expires_at <= ?`, id, expires.UnixNano(), data, now.UnixNano())
	if err != nil {
		return ledger.Unavailable("file", "put outcome", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return ledger.Unavailable("file", "put outcome", err)
	}
	if n != 1 {
		return ledger.ErrExists
	}
	return nil
}

// Outcome reads the unexpired row of id.
func (f *Store) Outcome(ctx context.Context, id string) ([]byte, bool, error) {
	if err := ledger.CheckNonce(id); err != nil {
		return nil, false, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, false, ledger.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	var data []byte
	err := f.db.QueryRowContext(ctx, `SELECT data FROM outcomes WHERE id = ? AND expires_at > ?`, id, time.Now().UnixNano()).Scan(&data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, ledger.Unavailable("file", "outcome", err)
	}
	return data, true, nil
}
