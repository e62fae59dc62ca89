// Package ledger records issued approval grants and redeems each at most
// once, in memory, in a local SQLite file, in Redis or in PostgreSQL.
//
// The gate issues a grant's 128-bit nonce when it asks a human, and redeems
// it when the approved call comes back. Redeem reports true exactly once for
// an issued, unexpired nonce (valid while now < expires); false with a nil
// error for an unknown, already redeemed or expired nonce; and false with an
// error when the store cannot answer. The ledger holds outstanding grants
// only: a redeemed nonce is deleted, so a replay finds nothing, and the
// gate never issues a nonce twice because nonces are random.
//
// # Choosing a store: import the backend you want
//
// This package holds the Store and StandingStore interfaces, the memory
// store and Open. Each shared store is a package of its own, so that a
// program links in only the drivers it uses (the gate itself imports
// none):
//
//	ledger/sqlite    file:PATH                       modernc.org/sqlite
//	ledger/redis     redis://, rediss://             go-redis
//	ledger/postgres  postgres://, postgresql://      pgx
//
// Use a backend's Open directly, or import it for its side effect and
// name the store by URL, as with database/sql drivers:
//
//	import _ "github.com/mcpsafe/mcpsafe/ledger/redis"
//
//	store, err := ledger.Open(ctx, "redis://127.0.0.1:6379/0")
//
// Each backend registers its schemes with Register from its init
// function. Open of a scheme whose backend is not linked in fails with an
// error naming the import. The mcpsafe command links in all three.
//
// A backend outside this module implements Store (and StandingStore),
// validates its arguments with CheckNonce, CheckIssue, CheckStanding,
// CheckScope and CheckRevocation, wraps every store failure with
// Unavailable, and passes the conformance suite in ledger/ledgertest.
//
// # Stores
//
//   - memory: exact, private to one process. Capacity-bounded: when full it
//     refuses new grants with ErrFull and never evicts an outstanding one,
//     since eviction would revoke an approval a human already gave. Expired
//     grants are purged lazily.
//   - file:PATH (ledger/sqlite): SQLite (modernc.org/sqlite, pure Go) in WAL mode with
//     synchronous=FULL, so a committed redemption survives a crash and a
//     spent grant cannot come back. Safe for several processes on one host:
//     SQLite's locks serialize writers and redemption is the single
//     statement DELETE ... WHERE nonce=? AND expires_at > ? RETURNING, so
//     exactly one process gets the row. The file is created 0600.
//     SQLite was chosen over bbolt because bbolt holds an exclusive file
//     lock for as long as a database is open, so a second process could not
//     open the ledger at all; SQLite is also faster per fsync'd write
//     (about 2,600 vs 1,500 per second on the team's machine).
//     Within a process, redemptions queue on one connection; between
//     processes SQLite's lock is not fair (a waiter polls), so under
//     sustained contention a call can reach its timeout and is refused.
//     Busy multi-process deployments belong on redis or postgres.
//   - redis:// and rediss:// (ledger/redis): one SET NX PX per issue (ErrExists when the key
//     exists), one GETDEL per redemption, atomic in Redis, so among any
//     number of replicas exactly one receives the value. Redis expires keys
//     by their TTL. The value is a marker with the exact expiry, checked on
//     redemption: a key holding anything else is an error, never an
//     approval.
//   - postgres:// and postgresql:// (ledger/postgres): one INSERT per issue, one
//     DELETE ... WHERE nonce = $1 AND expires_at > now() RETURNING per
//     redemption; the row lock lets exactly one DELETE return the row.
//     Expiry is judged by the database clock. A background DELETE removes
//     expired rows every ledger_sweep (default 1m) and stops on Close.
//     Open creates the table (nonce primary key, expires_at) if missing.
//     The pool is pgxpool's (pool_max_conns in the URL sizes it).
//
// # Durability is the backend's
//
// A store can only promise what its backend keeps. Losing grants refuses
// (the approval must be asked again); restoring deleted ones would not: a
// grant redeemed after the backend's last durable point comes back after a
// crash or failover, and could be redeemed once more until it expires.
//
//   - memory: a restart loses every outstanding grant (refuses).
//   - file: synchronous=FULL; a committed redemption is on disk.
//   - redis: with persistence off (as scripts/services runs it) a restart
//     loses grants (refuses). With RDB snapshots, or asynchronous replicas
//     and failover, a recent redemption can be undone; where that matters run
//     appendonly yes with appendfsync always and no automatic failover, or
//     use PostgreSQL.
//   - postgres: synchronous_commit=on (the default) makes a redemption
//     durable before DELETE returns; an asynchronous standby promoted after
//     a crash can undo it, as above.
//
// The grant's short expiry bounds every such window.
//
// Replicas behind a load balancer must share a redis or postgres ledger (and
// the sealing key); memory and file ledgers are only for one process or one
// host.
//
// # Failure modes: every store problem refuses
//
// Each operation is bounded by ledger_timeout (default 2s) or the caller's
// earlier context deadline. A store that is down, unreachable, slow, locked
// by another process, closed, or that answers with something the ledger did
// not write makes Issue and Redeem return an error wrapping ErrUnavailable
// and Redeem return false. The gate maps any error to the refusal
// ledger_unavailable and runs nothing. Specifically:
//
//   - connection refused, DNS failure, TLS failure: Open fails (it pings), or
//     the operation fails with ErrUnavailable.
//   - a server that accepts the connection and never answers: the context
//     deadline closes the socket; ErrUnavailable after at most the timeout.
//   - a reply lost after the store executed a redemption: the grant is
//     spent and the caller sees an error, so the approval is lost, never
//     doubled. Retrying cannot double it either: the retry finds nothing.
//   - a Redis key holding a foreign value or type: ErrUnavailable (the key
//     is consumed), never true.
//   - a corrupt, unreadable, or locked SQLite file: Open or the operation
//     fails; busy waiting is bounded by the timeout.
//   - a full memory store: ErrFull for new grants; outstanding grants stay
//     redeemable.
//
// Expiry uses the real clock of the process (memory, file, redis one-time
// grants) or of the server (postgres; redis standing grants, by TIME in
// each script), never an injected one: the gate checks a grant's expiry
// with its own clock before it redeems, so the ledger's check is a second,
// independent bound, and replicas sharing a server agree on it.
//
// A failed Issue means the grant must not be handed out: the caller refuses
// rather than issue a token the ledger does not know.
//
// Nonces must match [A-Za-z0-9_-]{1,128} (ErrInvalidNonce otherwise), which
// keeps arbitrary bytes out of keys and statements.
package ledger
