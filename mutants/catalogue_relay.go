package mutants

// relayMutants break what the proxy relays besides tool calls: the order
// of the upstream's notifications and its answers, the log level.
var relayMutants = []Mutant{
	{
		Name:     "relay-answer-before-notifications",
		Packages: []string{"./proxy"},
		Run:      "TestNotificationsArriveBeforeTheAnswer",
		Why:      "a relayed answer does not wait for the upstream's notifications before it (the client loses log messages)",
		Edits: []Edit{
			{
				File: "proxy/notify_order.go",
				Old:  "\tif v, ok := s.orders.byLeg.Load(leg); ok {",
				New:  "\tif v, ok := s.orders.byLeg.Load(leg); ok && leg == nil {",
			},
		},
	},
	{
		Name:     "relay-log-level-not-carried",
		Packages: []string{"./proxy"},
		Run:      "TestNotificationsArriveBeforeTheAnswer",
		Why:      "a 2025-11-25 client's log level is not put on requests to a 2026-07-28 upstream (it logs nothing)",
		Edits: []Edit{
			{
				File: "proxy/calls.go",
				Old:  "\taddLevel := modern && hasLevel && !ownLevel",
				New:  "\taddLevel := false && modern && hasLevel && !ownLevel",
			},
		},
	},
	{
		Name:     "relay-command-leg-not-used",
		Packages: []string{"./proxy"},
		Run:      "TestLegacyClientIsAskedThroughACommandUpstream",
		Why:      "a 2025-11-25 client shares the 2026-07-28 session of a command upstream, which cannot ask it mid-call",
		Edits: []Edit{
			{
				File: "proxy/relay.go",
				Old:  "\tif !ok || s.relay.legacyTransport == nil || v.ProtocolVersion() >= modernProtocol",
				New:  "\tif _, cmd := s.relay.legacyTransport.(*CommandLeg); cmd || !ok || s.relay.legacyTransport == nil || v.ProtocolVersion() >= modernProtocol",
			},
		},
	},
	{
		Name:     "relay-client-protocol-not-used",
		Packages: []string{"./proxy"},
		Run:      "TestLegacyClientIsAskedThroughACommandUpstream",
		Why:      "a stdio proxy opens its one upstream session in the newest generation, not its 2025-11-25 client's: the upstream cannot ask the client mid-call (and the CLI would need a second process, which a server holding a lock cannot be)",
		Edits: []Edit{
			{
				File: "proxy/proxy.go",
				Old:  "\tif cfg.ClientProtocol != \"\" {",
				New:  "\tif false && cfg.ClientProtocol != \"\" {",
			},
		},
	},
	{
		Name:     "relay-client-progress-token-upstream",
		Packages: []string{"./proxy"},
		Run:      "TestRelayedRequestsCarryTheProxysProgressToken",
		Why:      "a relayed resources/read, prompts/get or completion carries the client's own progress token into the upstream session clients share, where it can name another call's route",
		Edits: []Edit{
			{
				File: "proxy/calls.go",
				Old:  "\t\tdefer s.ownProgress(ctx, req)()\n",
				New:  "",
			},
		},
	},
	{
		Name:     "relay-upstream-asks-unmarked",
		Packages: []string{"./proxy"},
		Run:      "TestUpstreamAsksInItsOwnName|TestURLElicitationRefusedAlone|TestHTTPFastLaneMarksUpstreamAsks",
		Why:      "an upstream's elicitation reaches the person verbatim, in the gate's words, without saying whose it is",
		Edits: []Edit{
			{
				File: "proxy/upstream_asks.go",
				Old:  "\tc.Message = fmt.Sprintf(\"Server %s asks: %s\", prompt.Quote(s.askerName()), prompt.Text(ep.Message))\n",
				New:  "\tc.Message = ep.Message\n",
			},
		},
	},
	{
		Name:     "relay-upstream-takes-gate-elicitation-id",
		Packages: []string{"./proxy"},
		Run:      "TestUpstreamAsksInItsOwnName",
		Why:      "an upstream's elicitation with an id of the gate's shape (mcpsafe-…) reaches the person",
		Edits: []Edit{
			{
				File: "proxy/upstream_asks.go",
				Old:  "\tif strings.HasPrefix(strings.ToLower(strings.TrimSpace(ep.ElicitationID)), mcpsafe.ElicitationIDPrefix) {",
				New:  "\tif false && strings.HasPrefix(strings.ToLower(strings.TrimSpace(ep.ElicitationID)), mcpsafe.ElicitationIDPrefix) {",
			},
		},
	},
	{
		Name:     "relay-url-elicitation-as-form",
		Packages: []string{"./proxy"},
		Run:      "TestURLElicitationRefusedAlone",
		Why:      "upstream_requests url_elicitation: refuse does not hold: an upstream's URL elicitation counts as elicitation and reaches the person",
		Edits: []Edit{
			{
				File: "proxy/relay.go",
				Old:  "\t\t\treturn policy.KindURLElicitation // (a mode a client may not read as form, too)",
				New:  "\t\t\treturn policy.KindElicitation",
			},
		},
	},
	{
		Name:     "proxy-gate-owned-names-free",
		Packages: []string{"./proxy"},
		Run:      "TestUpstreamCannotTakeTheCardDecisionTool|TestGatewayMembersCannotTakeTheCardDecisionTool",
		Why:      "an upstream tool named mcpsafe_card_decision replaces the gate's card decision tool: card decisions go to the upstream, which answers \"Approved\" while nothing ran",
		Edits: []Edit{
			{
				File: "proxy/tools.go",
				Old:  "\t\tif err == nil {\n\t\t\terr = reservedName(t.Name, s.down(t.Name))\n\t\t}\n",
				New:  "",
			},
		},
	},
	{
		Name:     "proxy-sdk-path-unclear-ids",
		Packages: []string{"./proxy"},
		Run:      "TestStdioUnclearIDRefused|TestHTTPUnclearIDRefused",
		Why:      "a client id beyond ±(2^53−1) (or 1.5, 1e3, -0) reaches the SDK, which reads it as another id (9007199254740993 as 9007199254740992) and answers, tracks and cancels it as that",
		Edits: []Edit{
			{
				File: "proxy/client_lines.go",
				Old:  "\t\tif id := string(v); !frame.PlainID(id) {",
				New:  "\t\tif id := string(v); false && !frame.PlainID(id) {",
			},
		},
	},
	{
		Name:     "proxy-stdio-bad-line-ends-session",
		Packages: []string{"./proxy"},
		Run:      "TestStdioBadLineKeepsSession",
		Why:      "a client line with a byte-order mark or two values reaches the SDK's reader, which ends the client's stdio session",
		Edits: []Edit{
			{
				File: "proxy/client_lines.go",
				Old:  "\tif !json.Valid(msg) {\n\t\treturn nil, lineEnd(errorBody(\"null\", jsonrpc.CodeParseError, msgParseError))\n\t}",
				New:  "\tif !json.Valid(msg) {\n\t\treturn line, nil\n\t}",
			},
		},
	},
}
