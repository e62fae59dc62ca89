package approvals

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgMigrations are the PostgreSQL schema's versions, in order: entry i
// takes the schema from version i to i+1. Each runs in one transaction
// with its version bump (PostgreSQL's DDL is transactional), so a
// migration that fails leaves the schema as it was. Never edit one that
// shipped: add the next.
var pgMigrations = []string{
	// 1: requests (the record as JSON text, byte for byte, with the
	// columns the steps select on), votes, webhook signatures, logins.
	`CREATE TABLE mcpsafe_approvals_requests (
		id         text PRIMARY KEY,
		status     text NOT NULL,
		received   timestamptz NOT NULL,
		deadline   timestamptz NOT NULL,
		decided_at timestamptz,
		poll_until timestamptz,
		data       text NOT NULL
	);
	CREATE INDEX mcpsafe_approvals_pending ON mcpsafe_approvals_requests (received, id) WHERE status = 'pending';
	CREATE INDEX mcpsafe_approvals_due ON mcpsafe_approvals_requests (deadline) WHERE status = 'pending';
	CREATE INDEX mcpsafe_approvals_decided ON mcpsafe_approvals_requests (decided_at DESC) WHERE status <> 'pending';
	CREATE TABLE mcpsafe_approvals_votes (
		request_id text NOT NULL REFERENCES mcpsafe_approvals_requests (id) ON DELETE CASCADE,
		approver   text NOT NULL,
		PRIMARY KEY (request_id, approver)
	);
	CREATE TABLE mcpsafe_approvals_signatures (
		sig   text PRIMARY KEY,
		until timestamptz NOT NULL
	);
	CREATE TABLE mcpsafe_approvals_sessions (
		key     bytea PRIMARY KEY,
		name    text NOT NULL,
		csrf    text NOT NULL,
		expires timestamptz NOT NULL
	);`,
	// 2: ceremonies in progress (sign-on, passkey registration and
	// approval), taken once by whichever replica finishes them; passkeys.
	`CREATE TABLE mcpsafe_approvals_flows (
		kind    text NOT NULL,
		key     text NOT NULL,
		value   bytea NOT NULL,
		expires timestamptz NOT NULL,
		PRIMARY KEY (kind, key)
	);
	CREATE TABLE mcpsafe_approvals_passkeys (
		credential_id text PRIMARY KEY,
		approver      text NOT NULL,
		data          text NOT NULL,
		flags         text NOT NULL,
		registered    timestamptz NOT NULL DEFAULT now()
	);`,
}

// pgSchemaLock is the advisory lock replicas take to migrate: N replicas
// starting at once migrate one after another, and all but the first find
// nothing to do.
const pgSchemaLock = `SELECT pg_advisory_lock(hashtext('mcpsafe approvals schema'))`

// ErrSchemaNewer: the database's schema is newer than this binary knows.
var ErrSchemaNewer = errors.New("the approval store's schema is newer than this mcpsafe")

func migratePG(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, pgSchemaLock); err != nil {
		return fmt.Errorf("schema lock: %w", err)
	}
	defer conn.Exec(context.Background(), `SELECT pg_advisory_unlock(hashtext('mcpsafe approvals schema'))`)
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS mcpsafe_approvals_schema (version integer NOT NULL)`); err != nil {
		return fmt.Errorf("schema version table: %w", err)
	}
	var have int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM mcpsafe_approvals_schema`).Scan(&have); err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if have > len(pgMigrations) {
		return fmt.Errorf("%w: the database is at schema version %d, this binary knows versions up to %d; run the newer mcpsafe (every replica must be upgraded before or with the database), or point --store at another database", ErrSchemaNewer, have, len(pgMigrations))
	}
	for v := have; v < len(pgMigrations); v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, pgMigrations[v]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `DELETE FROM mcpsafe_approvals_schema; INSERT INTO mcpsafe_approvals_schema (version) VALUES (`+fmt.Sprint(v+1)+`)`)
			return err
		})
		if err != nil {
			return fmt.Errorf("schema migration to version %d failed (the schema stays at version %d): %w", v+1, v, err)
		}
	}
	return nil
}
