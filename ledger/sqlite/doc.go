// Package sqlite is the ledger in one SQLite file (modernc.org/sqlite, pure
// Go): durable, and shared by the processes of one host. Importing it
// registers the file: scheme with ledger.Open:
//
//	import _ "github.com/mcpsafe/mcpsafe/ledger/sqlite"
//
//	store, err := ledger.Open(ctx, "file:/var/lib/mcpsafe/ledger.db?ledger_timeout=2s")
//
// or open a path directly with Open. The database runs in WAL mode with
// synchronous=FULL, so a committed redemption survives a crash; the file
// (and its directory, when created) is private to its owner. A URL takes
// ledger_timeout and ledger_sweep, nothing else. Busy multi-process
// deployments belong on ledger/redis or ledger/postgres: SQLite's lock is
// not fair between processes. The package ledger documentation covers the
// semantics every store shares, durability and failure modes.
package sqlite
