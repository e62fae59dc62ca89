// Package redis is the ledger in a Redis server shared by replicas.
// Importing it registers the redis:// and rediss:// schemes with
// ledger.Open:
//
//	import _ "github.com/mcpsafe/mcpsafe/ledger/redis"
//
//	store, err := ledger.Open(ctx, "redis://127.0.0.1:6379/0?ledger_prefix=myapp:grant:")
//
// or call Open. A grant is one SET NX PX, its redemption one GETDEL, and a
// standing grant's use one script, each atomic in Redis, so among any
// number of replicas exactly one wins; the value is a marker with the
// exact expiry, and anything else under a key is an error, never an
// approval. A URL is go-redis's, plus ledger_timeout and ledger_prefix
// (default DefaultPrefix). The package ledger documentation covers the
// semantics every store shares, durability (mind Redis persistence and
// failover) and failure modes.
package redis
