package serverconf

// The CLI opens --ledger URLs of every kind, so it links in every ledger
// backend this module has. A library user imports only the one it needs.
import (
	_ "github.com/mcpsafe/mcpsafe/ledger/postgres" // postgres://, postgresql://
	_ "github.com/mcpsafe/mcpsafe/ledger/redis"    // redis://, rediss://
	_ "github.com/mcpsafe/mcpsafe/ledger/sqlite"   // file:PATH
)
