// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// gatewayMutants break the gateway (one proxy, many upstreams).
var gatewayMutants = []Mutant{
	{
		Name:     "gateway-collision-shadows",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayCollisionRefused|TestGatewayLaterCollisionWithheld",
		Why:      "a second server takes over a name another server already serves, silently shadowing it",
		Edits: []Edit{
			{
				File: "proxy/gateway.go",
				Old:  "if owner, ok := g.names[down]; ok && owner != sl.spec.Name {",
				New:  "if owner, ok := g.names[down]; false && ok && owner != sl.spec.Name {",
			},
		},
	},
	{
		Name:     "gateway-down-server-routed-on",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayCrashRestart|TestGatewayHTTPUpstreamDown",
		Why:      "a call to a server that is down is passed on instead of refused as server_unavailable",
		Edits: []Edit{
			{
				File: "proxy/gateway_relay.go",
				Old:  "\t\t\tcase srv == nil:\n\t\t\t\treturn g.unavailable(sl, r.Params.Name), nil",
				New:  "\t\t\tcase srv == nil:\n\t\t\t\treturn next(ctx, method, req)",
			},
		},
	},
	{
		Name:     "gateway-shared-audience",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayPerServerPolicy",
		Why:      "servers of a gateway whose commands differ only in the environment share an audience, so one's approvals fit the other",
		Edits: []Edit{
			{
				File: "proxy/gateway_lifecycle.go",
				Old:  "cfg.Gate.Audience = cmp.Or(sp.Audience, aud+\"/\"+sp.Name)",
				New:  "cfg.Gate.Audience = cmp.Or(sp.Audience, aud)",
			},
		},
	},
	{
		Name:     "gateway-reload-half-applied",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayReloadBadFileRefused",
		Why:      "a reload with one bad server section still applies the others' policies",
		Edits: []Edit{
			{
				File: "proxy/gateway_reload.go",
				Old:  "\tif err := errors.Join(errs...); err != nil {\n\t\treturn fmt.Errorf(\"proxy: %s refused",
				New:  "\tif err := errors.Join(errs...); false && err != nil {\n\t\treturn fmt.Errorf(\"proxy: %s refused",
			},
		},
	},
	{
		Name:     "gateway-shared-ledger-derived-audience",
		Packages: []string{"./proxy"},
		Run:      "TestGatewaySharedLedgerNeedsAudiences",
		Why:      "a gateway on a shared ledger runs servers under audiences derived per host, which replicas do not agree on",
		Edits: []Edit{
			{
				File: "proxy/policy/gateway.go",
				Old:  "\tif !sharedLedger {\n\t\treturn nil\n\t}\n\tvar errs []error\n\tfor _, sp := range file.Servers {",
				New:  "\tif true || !sharedLedger {\n\t\treturn nil\n\t}\n\tvar errs []error\n\tfor _, sp := range file.Servers {",
			},
		},
	},
	{
		Name:     "gateway-down-names-taken-over",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayLaterCollisionWithheld",
		Why:      "while a bare server is down, another server's re-announcement takes over its tool names",
		Edits: []Edit{
			{
				File: "proxy/gateway.go",
				Old:  "\t\tif other != sl && other.known[down] {",
				New:  "\t\tif false && other != sl && other.known[down] {",
			},
		},
	},
	{
		Name:     "gateway-reload-fresh-rugpull-memory",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayReloadRestartKeepsRugPullMemory|TestGatewayRemovedServerReturnsAsStrict",
		Why:      "fresh memory on reload: a server restarted by a reload (or removed and added back) starts with no rug-pull memory, so an upstream that now says readOnlyHint: true runs its once-gated tool unasked",
		Edits: []Edit{
			{
				File: "proxy/gateway.go",
				Old:  "\tif sticky == nil {",
				New:  "\tif true {",
			},
		},
	},
	{
		Name:     "gateway-reload-grant-optins-in-place",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayReloadWithdrawsAllowGrantsFor",
		Why:      "a reload that withdraws allow_grants_for is applied in place, where the gate keeps its old opt-ins, so grants go on being offered and honoured",
		Edits: []Edit{
			{
				File: "proxy/gateway_reload.go",
				Old:  "p.AllowTokenFor, p.AllowGrantsFor, p.UpstreamRequests}",
				New:  "p.AllowTokenFor, nil, p.UpstreamRequests}",
			},
		},
	},
	{
		Name:     "gateway-pending-gauge-unset",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestGatewayBinaryMetricsPending",
		Why:      "the gateway's pending-approvals gauge reads 0 whatever its gates issued",
		Edits: []Edit{
			{
				File: "cmd/mcpsafe/proxy.go",
				Old:  "\t\tconf.Metrics.SetPending(gw.Pending)\n",
				New:  "",
			},
		},
	},
	{
		Name:     "gateway-relays-unknown-methods",
		Packages: []string{"./proxy/policy"},
		Run:      "TestUnknownMethodsPolicy",
		Why:      "a gateway accepts unknown_methods: relay though it cannot tell which server such a method is for",
		Edits: []Edit{
			{
				File: "proxy/policy/gateway.go",
				Old:  "\t\tif pol.RelayUnknownMethods {",
				New:  "\t\tif false {",
			},
		},
	},
	{
		Name:     "gateway-unreachable-member-fatal",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayStartsWithoutUnreachableServers",
		Why:      "one unreachable member stops the gateway's start, taking the healthy members with it",
		Edits: []Edit{
			{
				File: "proxy/gateway.go",
				Old:  "\t\t\tif _, ok := errors.AsType[*unreachableError](err); !ok {\n",
				New:  "\t\t\tif _, ok := errors.AsType[*unreachableError](err); true || !ok {\n",
			},
		},
	},
	{
		Name:     "gateway-unavailable-keeps-structured-content-under-output-schema",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayDownRefusalsFollowOutputSchemas",
		Why:      "a server_unavailable refusal of a tool that had an output schema carries structuredContent that does not follow it (TypeScript SDK 1.x fails the call)",
		Edits: []Edit{
			{
				File: "proxy/gateway.go",
				Old:  "\tif schema {\n\t\tres.StructuredContent = nil\n",
				New:  "\tif false && schema {\n\t\tres.StructuredContent = nil\n",
			},
		},
	},
}
