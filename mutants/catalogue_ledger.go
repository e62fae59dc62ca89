// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// ledgerMutants break the single-use ledgers.
var ledgerMutants = []Mutant{
	{
		Name:     "ledger-memory-read-then-delete",
		Packages: []string{"./ledger"},
		Run:      "TestConformance",
		Why:      "memory ledger redeems with a read, an unlock and a later delete (racy)",
		Edits: []Edit{
			{
				File: "ledger/memory.go",
				Old:  "\texpires, ok := m.grants[nonce]\n\tif !ok {\n\t\treturn false, nil\n\t}\n\tdelete(m.grants, nonce)\n",
				New:  "\texpires, ok := m.grants[nonce]\n\tm.mu.Unlock()\n\tif !ok {\n\t\tm.mu.Lock()\n\t\treturn false, nil\n\t}\n\truntime.Gosched()\n\tm.mu.Lock()\n\tdelete(m.grants, nonce)\n",
			},
			{
				File: "ledger/memory.go",
				Old:  "\t\"fmt\"\n",
				New:  "\t\"fmt\"\n\t\"runtime\"\n",
			},
		},
	},
	{
		Name:     "ledger-memory-ignores-expiry",
		Packages: []string{"./ledger"},
		Run:      "TestConformance",
		Why:      "memory ledger redeems expired grants",
		Edits: []Edit{
			{
				File: "ledger/memory.go",
				Old:  "\treturn now.Before(expires), nil\n}",
				New:  "\treturn true || now.Before(expires), nil\n}",
			},
		},
	},
	{
		Name:     "ledger-redis-get-then-del",
		Packages: []string{"./ledger/redis"},
		Run:      "TestConformance",
		Why:      "redis ledger redeems with GET then DEL (racy) instead of GETDEL",
		Edits: []Edit{
			{
				File: "ledger/redis/redis.go",
				Old:  "\tv, err := r.client.GetDel(ctx, r.prefix+nonce).Result()\n",
				New:  "\tv, err := r.client.Get(ctx, r.prefix+nonce).Result()\n\tif err == nil {\n\t\tr.client.Del(ctx, r.prefix+nonce)\n\t}\n",
			},
		},
	},
	{
		Name:     "ledger-redis-foreign-value-approves",
		Packages: []string{"./ledger/redis"},
		Run:      "TestRedisForeignValuesNeverApprove|TestConformance",
		Why:      "redis ledger approves a value that is not its marker",
		Edits: []Edit{
			{
				File: "ledger/redis/redis.go",
				Old:  "\texp, err := parseRedisValue(v)\n\tif err != nil {\n\t\treturn false, ledger.Unavailable(\"redis\", \"redeem\", err)\n\t}",
				New:  "\texp, err := parseRedisValue(v)\n\tif err != nil {\n\t\treturn true, nil\n\t}",
			},
		},
	},
	{
		Name:     "standing-memory-uses-not-counted",
		Packages: []string{"."},
		Run:      "TestStandingGrantFitsThenUsedUp",
		Why:      "the memory ledger never takes a use, so a grant covers calls forever",
		Edits: []Edit{
			{
				File: "ledger/memory.go",
				Old:  "\ts.Uses--\n",
				New:  "",
			},
		},
	},
	{
		Name:     "standing-redis-refusal-is-use",
		Packages: []string{"./ledger/redis"},
		Run:      "TestConformance/standing",
		Why:      "a refused Redis use (the script's -1) counts as a use, so a used-up, revoked or expired grant covers calls",
		Edits: []Edit{
			{
				File: "ledger/redis/redis.go",
				Old:  "\tif left < 0 {\n\t\treturn 0, false, nil",
				New:  "\tif left < -1 {\n\t\treturn 0, false, nil",
			},
		},
	},
	{
		Name:     "standing-postgres-use-past-zero",
		Packages: []string{"./ledger/postgres"},
		Run:      "TestConformance/standing",
		Why:      "the PostgreSQL use statement does not check the count",
		Edits: []Edit{
			{
				File: "ledger/postgres/postgres.go",
				Old:  "SET uses = uses - 1 WHERE id = $1 AND uses > 0 AND expires_at > now()",
				New:  "SET uses = uses - 1 WHERE id = $1 AND expires_at > now()",
			},
		},
	},
	{
		Name:     "standing-file-use-past-zero",
		Packages: []string{"./ledger/sqlite"},
		Run:      "TestConformance/standing",
		Why:      "the SQLite use statement does not check the count",
		Edits: []Edit{
			{
				File: "ledger/sqlite/sqlite.go",
				Old:  "SET uses = uses - 1 WHERE id = ?1 AND uses > 0 AND expires_at > ?2",
				New:  "SET uses = uses - 1 WHERE id = ?1 AND expires_at > ?2",
			},
		},
	},
	{
		Name:     "standing-redis-revoke-noop",
		Packages: []string{"./ledger/redis"},
		Run:      "TestConformance/standing",
		Why:      "a revocation in Redis leaves the grant usable by the replicas",
		Edits: []Edit{
			{
				File: "ledger/redis/redis.go",
				Old:  "redis.call('HSET', KEYS[1], 'uses', 0, 'ended', ARGV[3], 'by', ARGV[4], 'at', nowText)\n",
				New:  "",
			},
		},
	},
	{
		Name:     "grant-end-claimed-twice",
		Packages: []string{"./ledger"},
		Run:      "TestConformance/standing",
		Why:      "two gates may both claim one grant's end and journal it twice",
		Edits: []Edit{
			{
				File: "ledger/memory.go",
				Old:  "if !ok || s.live(now) || !s.claimed.IsZero() {",
				New:  "if !ok || s.live(now) {",
			},
		},
	},
	{
		Name:     "grant-end-claimed-twice-redis",
		Packages: []string{"./ledger/redis"},
		Run:      "TestConformance/standing",
		Why:      "two gates sharing Redis may both claim one grant's end",
		Edits: []Edit{
			{
				File: "ledger/redis/redis.go",
				Old:  "if not v[1] or not v[2] or v[3] then return false end",
				New:  "if not v[1] or not v[2] then return false end",
			},
		},
	},
	{
		Name:     "grant-end-claimed-twice-postgres",
		Packages: []string{"./ledger/postgres"},
		Run:      "TestConformance/standing",
		Why:      "two gates sharing PostgreSQL may both claim one grant's end",
		Edits: []Edit{
			{
				File: "ledger/postgres/postgres.go",
				Old:  "WHERE id = $1 AND claimed_at IS NULL AND (uses <= 0 OR expires_at <= now())",
				New:  "WHERE id = $1 AND (uses <= 0 OR expires_at <= now())",
			},
		},
	},
	{
		Name:     "grant-end-live-claimable",
		Packages: []string{"./ledger"},
		Run:      "TestConformance/standing",
		Why:      "a live grant's end may be claimed (and journaled as ended while it still covers calls)",
		Edits: []Edit{
			{
				File: "ledger/memory.go",
				Old:  "if !ok || s.live(now) || !s.claimed.IsZero() {",
				New:  "if !ok || !s.claimed.IsZero() {",
			},
		},
	},
	{
		Name:     "tombstone-still-usable",
		Packages: []string{"./ledger"},
		Run:      "TestConformance/standing",
		Why:      "a revoked grant keeps its uses, so its tombstone still covers calls",
		Edits: []Edit{
			{
				File: "ledger/memory.go",
				Old:  "s.Uses, s.ended, s.by, s.endedAt = 0, r.Reason, r.By, now",
				New:  "s.ended, s.by, s.endedAt = r.Reason, r.By, now",
			},
		},
	},
	{
		Name:     "tombstone-still-usable-redis",
		Packages: []string{"./ledger/redis"},
		Run:      "TestConformance/standing",
		Why:      "a grant revoked in Redis keeps its uses",
		Edits: []Edit{
			{
				File: "ledger/redis/redis.go",
				Old:  "redis.call('HSET', KEYS[1], 'uses', 0, 'ended', ARGV[3]",
				New:  "redis.call('HSET', KEYS[1], 'ended', ARGV[3]",
			},
		},
	},
	{
		Name:     "tombstone-resurrected-by-put",
		Packages: []string{"./ledger"},
		Run:      "TestConformance/standing",
		Why:      "a put of an ended grant's ID replaces its tombstone with a live grant",
		Edits: []Edit{
			{
				File: "ledger/memory.go",
				Old:  "\tif _, ok := m.standing[s.ID]; ok {\n\t\treturn ErrExists",
				New:  "\tif old, ok := m.standing[s.ID]; ok && old.live(now) {\n\t\treturn ErrExists",
			},
		},
	},
	{
		Name:     "tombstones-unbounded",
		Packages: []string{"./ledger/sqlite"},
		Run:      "TestStandingTombstonesBounded",
		Why:      "unclaimed ends are never swept from a file ledger",
		Edits: []Edit{
			{
				File: "ledger/sqlite/sqlite.go",
				Old:  "WHERE (claimed_at > 0 AND claimed_at <= ?1) OR expires_at <= ?2`",
				New:  "WHERE (claimed_at > 0 AND claimed_at <= ?1)`",
			},
		},
	},
	{
		Name:     "redis-grant-expiry-by-local-clock",
		Packages: []string{"./ledger/redis"},
		Run:      "TestRedisStandingExpiryByServerClock|TestConformance/standing",
		Why:      "a replica judges a standing grant's expiry in Redis by its own clock: one running behind uses an expired grant, one running ahead is refused a live one",
		Edits: []Edit{
			{
				File: "ledger/redis/redis.go",
				Old:  "\tleft, err := redisUseStanding.Run(ctx, r.client, []string{r.standingKey(id)}).Int()",
				New:  "\tleft, err := redisUseStanding.Run(ctx, r.client, []string{r.standingKey(id)}, r.now().UnixNano()).Int()",
			},
			{
				File: "ledger/redis/redis.go",
				Old:  "if tonumber(v[1]) <= now or tonumber(v[2]) <= 0 then return -1 end",
				New:  "if tonumber(v[1]) <= tonumber(ARGV[1]) or tonumber(v[2]) <= 0 then return -1 end",
			},
		},
	},
}
