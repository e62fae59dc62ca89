// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// cliMutants break the CLI wiring: HTTP serving, authentication, metrics.
var cliMutants = []Mutant{
	{
		Name:     "http-nonloopback-no-auth",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestHTTPNonLoopbackNeedsAuth",
		Why:      "files/proxy --http serve a non-loopback address without authentication (every caller is anonymous)",
		Edits: []Edit{
			{
				File: "mcphttp/http.go",
				Old:  "if h.Addr != \"\" && h.Auth.Issuer == \"\" && !loopback.Addr(h.Addr) {",
				New:  "if false && h.Addr != \"\" && !loopback.Addr(h.Addr) {",
			},
		},
	},
	{
		Name:     "http-body-no-deadline",
		Packages: []string{"./mcphttp"},
		Run:      "TestLimitBodiesCutsOffSlowBody",
		Why:      "a request body may trickle in forever (slowloris holds connections)",
		Edits: []Edit{
			{
				File: "mcphttp/http.go",
				Old:  "\t\t\t_ = rc.SetReadDeadline(time.Now().Add(timeout))\n",
				New:  "",
			},
		},
	},
	{
		Name:     "http-sessions-uncapped-per-client",
		Packages: []string{"./mcphttp"},
		Run:      "TestSessionCaps",
		Why:      "one client may open stateful sessions until the server is full",
		Edits: []Edit{
			{
				File: "mcphttp/http.go",
				Old:  "if l.byClient[client] >= l.perClient {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "http-sessions-never-idle",
		Packages: []string{"./mcphttp"},
		Run:      "TestIdleSessionsExpire",
		Why:      "idle stateful sessions are never closed",
		Edits: []Edit{
			{
				File: "mcphttp/http.go",
				Old:  "\t\t\tSessionTimeout:      h.SessionIdle,\n",
				New:  "",
			},
		},
	},
	{
		Name:     "chanwait-timeout-over-ttl",
		Packages: []string{"./internal/serverconf"},
		Run:      "TestChannelTimesFromFlags",
		Why:      "--approver-timeout longer than --ttl is accepted and silently cut to --ttl",
		Edits: []Edit{
			{
				File: "internal/serverconf/serverconf.go",
				Old:  "\tcase cfg.ApproverTimeout > ttl:",
				New:  "\tcase false:",
			},
		},
	},
	{
		Name:     "chanwait-http-cancel-not-propagated",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestHTTPChannelCallerGone",
		Why:      "over stateless --http a client that drops its request is not noticed: its channel request stays approvable",
		Edits: []Edit{
			{
				File: "mcphttp/http.go",
				Old:  "\t\t\tPropagateRequestCancellation: true,\n",
				New:  "",
			},
		},
	},
	{
		Name:     "ledger-standing-hidden-by-wrapper",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestFilesGrantsWithMetrics|TestProxyGrantsWithMetrics",
		Why:      "the metrics wrapper hides the ledger's standing grants: --grants with --metrics does not start",
		Edits: []Edit{
			{
				File: "metrics/metrics.go",
				Old:  "\treturn &timedStanding{m: t.m, s: s}",
				New:  "\treturn nil",
			},
		},
	},
	{
		Name:     "default-journal-ignores-roots",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestDefaultStateSideBySide",
		Why:      "mcpsafe files keys its default journal by audience alone: servers over different roots are told apart by slot, not by what they serve",
		Edits: []Edit{
			{
				File: "cmd/mcpsafe/files.go",
				Old:  "\tgc.Instance = rootsInstance(roots)\n",
				New:  "",
			},
		},
	},
	{
		Name:     "default-journal-twin-refused",
		Packages: []string{"./cmd/mcpsafe", "./internal/serverconf"},
		Run:      "TestDefaultStateSideBySide|TestDefaultJournalPerInstance",
		Why:      "a twin on default settings gets no slot of its own: one configuration in two MCP clients fails to start",
		Edits: []Edit{
			{
				File: "internal/serverconf/serverconf.go",
				Old:  "\tfor n := 1; n <= journal.DefaultSlots; n++ {",
				New:  "\tfor n := 1; n <= 1; n++ {",
			},
		},
	},
}
