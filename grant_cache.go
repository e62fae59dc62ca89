package mcpsafe

import (
	"sync"
	"time"
)

// grantCacheTTL bounds how long a replica may not see a grant made on
// another replica (it asks meanwhile).
const grantCacheTTL = time.Second

type grantCache struct {
	mu sync.Mutex
	m  map[string]grantCacheEntry
}

type grantCacheEntry struct {
	at   time.Time
	list []*standingGrant
}

func (c *grantCache) get(scope string) ([]*standingGrant, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[scope]
	if !ok || time.Since(e.at) >= grantCacheTTL {
		return nil, false
	}
	return e.list, true
}

func (c *grantCache) put(scope string, list []*standingGrant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 10_000 {
		c.m = map[string]grantCacheEntry{}
	}
	c.m[scope] = grantCacheEntry{at: time.Now(), list: list}
}

func (c *grantCache) forget(scope string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, scope)
}
