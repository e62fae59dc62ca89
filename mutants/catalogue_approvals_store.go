package mutants

// approvalStoreMutants break the approval service's store: the exactly-once
// and replay rules that replicas sharing a PostgreSQL database rely on.
var approvalStoreMutants = []Mutant{
	{
		Name:     "approvals-pg-decide-unlocked",
		Packages: []string{"./approvals"},
		Run:      "TestStoreConformance/postgres|TestReplicasDecideOnce|TestReplicasCountDistinctApprovers",
		Why:      "a decision step reads the request without locking its row: two approvers on two replicas both decide it",
		Edits: []Edit{
			{
				File: "approvals/pgstore.go",
				Old:  "`SELECT data FROM mcpsafe_approvals_requests WHERE id = $1 FOR UPDATE`",
				New:  "`SELECT data FROM mcpsafe_approvals_requests WHERE id = $1`",
			},
		},
	},
	{
		Name:     "approvals-pg-replay-upsert",
		Packages: []string{"./approvals"},
		Run:      "TestStoreConformance/postgres|TestReplicasRefuseReplay",
		Why:      "the replay window overwrites a live signature instead of refusing it: a replayed webhook call is fresh on every replica",
		Edits: []Edit{
			{
				File: "approvals/pgstore.go",
				Old:  "ON CONFLICT (sig) DO UPDATE SET until = EXCLUDED.until WHERE s.until < clock_timestamp()`",
				New:  "ON CONFLICT (sig) DO UPDATE SET until = EXCLUDED.until`",
			},
		},
	},
	{
		Name:     "approvals-pg-expire-unlocked",
		Packages: []string{"./approvals"},
		Run:      "TestStoreConformance/postgres",
		Why:      "replicas expiring at the same moment do not skip each other's rows: one request expires (and is counted) twice",
		Edits: []Edit{
			{
				File: "approvals/pgstore.go",
				Old:  "ORDER BY deadline LIMIT 500 FOR UPDATE SKIP LOCKED`",
				New:  "ORDER BY deadline LIMIT 500`",
			},
		},
	},
	{
		Name:     "approvals-withdrawn-redelivered",
		Packages: []string{"./approvals"},
		Run:      "TestDecisionReachesEveryReattach",
		Why:      "a decision the gate withdrew (it had the approval and did not run the call) still reaches a re-attach: a call the gate gave up on runs after all",
		Edits: []Edit{
			{
				File: "approvals/service.go",
				Old:  "\t\tcase cur.Withdrawn != \"\" || cur.Status == channel.StatusWithdrawn:\n",
				New:  "\t\tcase false:\n",
			},
			{
				File: "approvals/service.go",
				Old:  "\t\tcase cur.Withdrawn != \"\":\n\t\t\treturn nil, fail(http.StatusConflict, \"decision withdrawn",
				New:  "\t\tcase false:\n\t\t\treturn nil, fail(http.StatusConflict, \"decision withdrawn",
			},
		},
	},

	{
		Name:     "approvals-pg-no-retry",
		Packages: []string{"./approvals"},
		Run:      "TestPGKilledConnectionsRecover",
		Why:      "a step whose pooled connection was killed before its commit is refused instead of run once more: every killed connection costs an approver a refused decision",
		Edits: []Edit{
			{
				File: "approvals/pgstore.go",
				Old:  "\t\tif attempt == 0 && !committing && connLost(err) && ctx.Err() == nil {",
				New:  "\t\tif false && !committing {",
			},
		},
	},
	{
		Name:     "approvals-pg-lease-loud",
		Packages: []string{"./approvals"},
		Run:      "TestPGLeaseRenewalIsQuiet",
		Why:      "every renewal of a long poll's hold notifies every replica, and each open page refreshes at each one",
		Edits: []Edit{
			{
				File: "approvals/pgstore.go",
				Old:  "\tif len(quiet) > 0 && quiet[0] {\n\t\treturn nil\n\t}",
				New:  "\tif false {\n\t\treturn nil\n\t}",
			},
		},
	},
	{
		Name:     "approvals-sessions-per-replica",
		Packages: []string{"./approvals"},
		Run:      "TestReplicasLiveUpdates|TestStoreConformance/postgres",
		Why:      "login sessions stay in each replica's memory: a login on one replica is unknown to the next one the load balancer picks",
		Edits: []Edit{
			{
				File: "approvals/pgstore.go",
				Old:  "func (p *pgStore) sessions() sessionStore { return p.sess }",
				New:  "func (p *pgStore) sessions() sessionStore { return newMemSessions() }",
			},
		},
	},
}
