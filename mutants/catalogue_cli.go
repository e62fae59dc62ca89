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
				File: "serverconf/http.go",
				Old:  "if h.Addr != \"\" && h.Auth.Issuer == \"\" && !channel.IsLoopbackAddr(h.Addr) {",
				New:  "if false && h.Addr != \"\" && !channel.IsLoopbackAddr(h.Addr) {",
			},
		},
	},
	{
		Name:     "http-body-no-deadline",
		Packages: []string{"./serverconf"},
		Run:      "TestLimitBodiesCutsOffSlowBody",
		Why:      "a request body may trickle in forever (slowloris holds connections)",
		Edits: []Edit{
			{
				File: "serverconf/http.go",
				Old:  "\t\t\t_ = rc.SetReadDeadline(time.Now().Add(timeout))\n",
				New:  "",
			},
		},
	},
	{
		Name:     "http-sessions-uncapped-per-client",
		Packages: []string{"./serverconf"},
		Run:      "TestSessionCaps",
		Why:      "one client may open stateful sessions until the server is full",
		Edits: []Edit{
			{
				File: "serverconf/http.go",
				Old:  "if l.byClient[client] >= l.perClient {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "http-sessions-never-idle",
		Packages: []string{"./serverconf"},
		Run:      "TestIdleSessionsExpire",
		Why:      "idle stateful sessions are never closed",
		Edits: []Edit{
			{
				File: "serverconf/http.go",
				Old:  "\t\t\tSessionTimeout:      h.SessionIdle,\n",
				New:  "",
			},
		},
	},
	{
		Name:     "chanwait-timeout-over-ttl",
		Packages: []string{"./serverconf"},
		Run:      "TestChannelTimesFromFlags",
		Why:      "--approver-timeout longer than --ttl is accepted and silently cut to --ttl",
		Edits: []Edit{
			{
				File: "serverconf/serverconf.go",
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
				File: "serverconf/http.go",
				Old:  "\t\t\tPropagateRequestCancellation: true,\n",
				New:  "",
			},
		},
	},
}
