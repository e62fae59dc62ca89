// Package postgres is the ledger in a PostgreSQL table shared by replicas.
// Importing it registers the postgres:// and postgresql:// schemes with
// ledger.Open:
//
//	import _ "github.com/mcpsafe/mcpsafe/ledger/postgres"
//
//	store, err := ledger.Open(ctx, "postgres://mcpsafe@db.internal/app?ledger_table=mcpsafe_grants")
//
// or call Open. Open creates the tables if missing (the grants table, and
// StandingTable for standing grants). A redemption is one
// DELETE ... WHERE nonce = $1 AND expires_at > now() RETURNING, so the row
// lock lets exactly one replica have it; expiry is judged by the database
// clock, and a background DELETE removes expired rows every ledger_sweep.
// A URL is pgx's (pool_max_conns sizes the pool), plus ledger_timeout,
// ledger_sweep and ledger_table (default DefaultTable). The package ledger
// documentation covers the semantics every store shares, durability and
// failure modes.
package postgres
