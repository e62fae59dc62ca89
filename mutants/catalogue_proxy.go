// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// proxyMutants break the proxy: policy, mirroring, fast lanes, relays.
var proxyMutants = []Mutant{
	{
		Name:     "proxy-unknown-policy-keys",
		Packages: []string{"./proxy/policy", "./proxy"},
		Run:      "TestBadPolicies|TestAutoApproveExactTrue|TestDefaultPolicy|TestDenyAllowRules|TestGateReadOnlyAndElicitMode",
		Why:      "the policy file accepts unknown keys (a typo such as auto_aprove silently does nothing)",
		Edits: []Edit{
			{
				File: "proxy/policy/hints.go",
				Old:  "\tdec.KnownFields(true)\n\tif err := dec.Decode(v); err != nil {",
				New:  "\tif err := dec.Decode(v); err != nil {",
			},
		},
	},
	{
		Name:     "proxy-rule-truthy",
		Packages: []string{"./proxy"},
		Run:      "TestBadPolicies|TestAutoApproveExactTrue|TestDefaultPolicy|TestDenyAllowRules|TestGateReadOnlyAndElicitMode",
		Why:      "a CEL rule yielding a non-bool (\"true\", 1) counts as a match when it looks true",
		Edits: []Edit{
			{
				File: "proxy/policy/cel.go",
				Old:  "\t\tb, ok := v.(types.Bool)\n\t\tif !ok {\n",
				New:  "\t\tb, ok := v.(types.Bool)\n\t\tif !ok && fmt.Sprint(v.Value()) != \"\" && fmt.Sprint(v.Value()) != \"false\" && fmt.Sprint(v.Value()) != \"<nil>\" && fmt.Sprint(v.Value()) != \"0\" {\n\t\t\treturn true, nil\n\t\t}\n\t\tif !ok {\n",
			},
		},
	},
	{
		Name:     "proxy-missing-destructive-hint-reversible",
		Packages: []string{"./proxy"},
		Run:      "TestBadPolicies|TestAutoApproveExactTrue|TestDefaultPolicy|TestDenyAllowRules|TestGateReadOnlyAndElicitMode",
		Why:      "an upstream tool without destructiveHint is treated as reversible (gets tokens)",
		Edits: []Edit{
			{
				File: "proxy/tools.go",
				Old:  "\treturn a == nil || a.DestructiveHint == nil || *a.DestructiveHint\n",
				New:  "\treturn a != nil && a.DestructiveHint != nil && *a.DestructiveHint\n",
			},
		},
	},
	{
		Name:     "proxy-gate-only-destructive",
		Packages: []string{"./proxy"},
		Run:      "TestBadPolicies|TestAutoApproveExactTrue|TestDefaultPolicy|TestDenyAllowRules|TestGateReadOnlyAndElicitMode",
		Why:      "only tools with destructiveHint are gated; a tool that is neither read-only nor destructive passes ungated",
		Edits: []Edit{
			{
				File: "proxy/tools.go",
				Old:  "\treturn (!readOnly(t) && !s.pol().TrustsUpstreamGate(t)) || (tp != nil && tp.HasSettings())",
				New:  "\treturn (irreversible(t, tp) && !s.pol().TrustsUpstreamGate(t)) || (tp != nil && tp.HasSettings())",
			},
		},
	},
	{
		Name:     "proxy-preview-raw-arguments",
		Packages: []string{"./proxy"},
		Run:      "TestPreviewTemplateRedactsSecrets",
		Why:      "a policy's preview template sees the raw arguments and can show part of a password",
		Edits: []Edit{
			{
				File: "proxy/effects.go",
				Old:  "\treturn journal.Redact(c.Arguments, extra)\n",
				New:  "\t_, _ = extra, journal.Redact\n\treturn c.Arguments\n",
			},
		},
	},
	{
		Name:     "proxy-audience-constant",
		Packages: []string{"./proxy"},
		Run:      "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel",
		Why:      "the default audience digests nothing but the label, so proxies in front of different servers run alike share it",
		Edits: []Edit{
			{
				File: "proxy/identity.go",
				Old:  "\traw, _ := json.Marshal(id)\n",
				New:  "\traw, _ := json.Marshal(nil)\n",
			},
		},
	},
	{
		Name:     "proxy-shared-ledger-default-audience",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestSharedLedgerNeedsAudience",
		Why:      "a shared ledger starts with the derived default audience (replicas silently disagree, or unrelated proxies collide)",
		Edits: []Edit{
			{
				File: "internal/serverconf/serverconf.go",
				Old:  "\treturn scheme != \"\" && scheme != \"memory\"",
				New:  "\treturn false",
			},
		},
	},
	{
		Name:     "proxy-plan-unnamed-server",
		Packages: []string{"./proxy"},
		Run:      "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel",
		Why:      "plans do not say which upstream server the call goes to",
		Edits: []Edit{
			{
				File: "proxy/effects.go",
				Old:  "\t\t\tDetails: []string{s.serverLine},\n",
				New:  "",
			},
		},
	},
	{
		Name:     "proxy-rugpull-ungates",
		Packages: []string{"./proxy"},
		Run:      "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel",
		Why:      "a gated tool that upstream re-announces as read-only passes through ungated",
		Edits: []Edit{
			{
				File: "proxy/tools.go",
				Old:  "\t\tgated := s.member.sticky.gate(name, s.gated(t))\n",
				New:  "\t\tgated := s.gated(t)\n",
			},
		},
	},
	{
		Name:     "proxy-rugpull-reversible",
		Packages: []string{"./proxy"},
		Run:      "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel",
		Why:      "an irreversible tool that upstream re-announces with destructiveHint:false becomes reversible (tokens)",
		Edits: []Edit{
			{
				File: "proxy/rugpull.go",
				Old:  "\tif now {\n\t\tk.irreversible[name] = true\n\t}\n\treturn k.irreversible[name]",
				New:  "\treturn now",
			},
		},
	},
	{
		Name:     "proxy-upstream-text-raw",
		Packages: []string{"./proxy"},
		Run:      "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel",
		Why:      "upstream tool names, titles and descriptions reach people unsanitized",
		Edits: []Edit{
			{
				File: "proxy/rugpull.go",
				Old:  "func screenTool(t *mcp.Tool) (*mcp.Tool, error) {\n",
				New:  "func screenTool(t *mcp.Tool) (*mcp.Tool, error) {\n\tif t != nil {\n\t\treturn t, nil\n\t}\n",
			},
		},
	},
	{
		Name:     "relay-continuation-ignores-arguments",
		Packages: []string{"./proxy"},
		Run:      "TestGatedContinuation",
		Why:      "a continuation issued for one call's arguments carries another call upstream without approval",
		Edits: []Edit{
			{
				File: "proxy/continuation.go",
				Old:  "\tcase k.Digest != digest:\n",
				New:  "\tcase k.Digest != digest && false:\n",
			},
		},
	},
	{
		Name:     "fastlane-case-variant-keys",
		Packages: []string{"./proxy"},
		Run:      "TestFastLanePeek|TestFastLaneFilesystem",
		Why:      "a tools/call naming a gated tool through a case-variant key takes the ungated fast lane",
		Edits: []Edit{
			{
				File: "internal/frame/check.go",
				Old:  "\tcase bytes.EqualFold(first, key):\n",
				New:  "\tcase false:\n",
			},
		},
	},
	{
		Name:     "gateway-reload-policy-ignored",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayReloadVoidsOnlyChangedTools",
		Why:      "a reload that changes a tool's policy leaves the tool registered under the old one, so its old approvals stay good",
		Edits: []Edit{
			{
				File: "proxy/tools.go",
				Old:  "def: string(def), pol: s.pol().Tools[name]}",
				New:  "def: string(def)}",
			},
		},
	},
	{
		Name:     "gateway-allow-grants-dropped",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayGrantScopeChangeVoidsGrant",
		Why:      "a gateway server's allow_grants_for never reaches its gate: irreversible tools it names offer no grants, silently",
		Edits: []Edit{
			{
				File: "proxy/proxy.go",
				Old:  "opts.AllowGrantsFor = append(opts.AllowGrantsFor, s.down(n))",
				New:  "_ = n",
			},
		},
	},
	{
		Name:     "policy-file-scopes-unbound",
		Packages: []string{"./proxy"},
		Run:      "TestGatewayGrantScopeChangeVoidsGrant",
		Why:      "a policy file's grant scopes are not digested into ScopesBinding, so a reload that narrows them keeps the old grants",
		Edits: []Edit{
			{
				File: "proxy/policy/policy.go",
				Old:  "\t\tgp.ScopesBinding = scopesBinding(scopes)\n",
				New:  "",
			},
		},
	},
	{
		Name:     "unknown-methods-relayed-by-default",
		Packages: []string{"./proxy"},
		Run:      "TestUnknownMethodRefused",
		Why:      "the default policy relays methods the proxy does not know, which may run a tool around the gate",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "if !s.pol().RelayUnknownMethods {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "unknown-method-params-unscanned",
		Packages: []string{"./proxy"},
		Run:      "TestUnknownMethodRefused",
		Why:      "a relayed unknown method whose params name a gated tool or tools/call reaches the upstream",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "if folded == canon.FoldKey(\"tools/call\") || blocked[folded] {",
				New:  "if false && folded == canon.FoldKey(\"tools/call\") || blocked[folded] && false {",
			},
		},
	},
	{
		Name:     "unknown-method-gated-names-ignored",
		Packages: []string{"./proxy"},
		Run:      "TestUnknownMethodRefused",
		Why:      "the params scan blocks only withheld tools, not gated ones",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "\t\tif r.gated || r.selfGated {\n\t\t\tout[canon.FoldKey(name)] = true",
				New:  "\t\tif (r.gated || r.selfGated) && false {\n\t\t\tout[canon.FoldKey(name)] = true",
			},
		},
	},
	{
		Name:     "unknown-method-name-case-sensitive",
		Packages: []string{"./proxy"},
		Run:      "TestUnknownMethodRefused",
		Why:      "the params scan compares tool names exactly, so a case variant of a gated tool's name passes",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "folded := canon.FoldKey(strings.TrimSpace(str))",
				New:  "folded := str",
			},
		},
	},
	{
		Name:     "unknown-method-tools-namespace",
		Packages: []string{"./proxy"},
		Run:      "TestUnknownMethodRefused",
		Why:      "an unknown method in the tools/ namespace is relayed",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "if strings.HasPrefix(m, \"tools/\") {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "unknown-method-case-variant-of-known",
		Packages: []string{"./proxy"},
		Run:      "TestUnknownMethodRefused",
		Why:      "a case variant of a known method (which a lax upstream may take as the method) is relayed",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "\t\tif strings.EqualFold(k, m) {",
				New:  "\t\tif false {",
			},
		},
	},
	{
		Name:     "http-fastlane-gated-tool",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneRefusesGatedAndOdd",
		Why:      "a call to a gated tool is forwarded raw, around the gate",
		Edits: []Edit{
			{
				File: "proxy/fastlane.go",
				Old:  "\tif !s.passesThrough(name) {\n\t\treturn fastCall{}, false\n\t}\n",
				New:  "",
			},
		},
	},
	{
		Name:     "http-fastlane-extra-members",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneRefusesGatedAndOdd",
		Why:      "params members the SDK path drops reach the upstream raw",
		Edits: []Edit{
			{
				File: "internal/frame/read.go",
				Old:  "if !toolsCallParams[k] {",
				New:  "if !toolsCallParams[k] && false {",
			},
		},
	},
	{
		Name:     "http-fastlane-refused-capabilities",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneRefusesGatedAndOdd|TestHTTPFastLanePassThrough",
		Why:      "a client capability the policy refuses to relay reaches the upstream unfiltered",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane.go",
				Old:  "if strings.EqualFold(k, string(kind)) && !ur.Allows(kind) {",
				New:  "if strings.EqualFold(k, string(kind)) && false && !ur.Allows(kind) {",
			},
		},
	},
	{
		Name:     "http-fastlane-refused-asks",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneInputRequired",
		Why:      "an upstream's input request of a kind the policy refuses reaches the client",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane.go",
				Old:  "\tasks, err := s.screenAsks(res.InputRequests)\n\tif err != nil {\n\t\treturn nil, err\n\t}\n\telicits := false",
				New:  "\tasks := res.InputRequests\n\telicits := false",
			},
		},
	},
	{
		Name:     "fastlane-continuation-upstream",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneRefusesGatedAndOdd",
		Why:      "a proxy continuation (sealed state) is sent upstream instead of to continueCall",
		Edits: []Edit{
			{
				File: "proxy/fastlane.go",
				Old:  "if json.Unmarshal(v, &st) != nil || isContinuation(st) {",
				New:  "if json.Unmarshal(v, &st) != nil {",
			},
		},
	},
	{
		Name:     "http-fastlane-session-id",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneRefusesGatedAndOdd",
		Why:      "a request carrying a session id (spoofed or not) takes the stateless fast lane",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane_headers.go",
				Old:  "if r.Method != http.MethodPost || len(r.Header.Values(\"Mcp-Session-Id\")) > 0 {",
				New:  "if r.Method != http.MethodPost {",
			},
		},
	},
	{
		Name:     "http-fastlane-client-headers",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneHeaders",
		Why:      "the client's headers (credentials, cookies) are forwarded to the upstream",
		Edits: []Edit{
			{
				// postUpstream is handed the client's request again, and
				// copies its headers.
				File: "proxy/http_fastlane.go",
				Old:  "func (s *Server) postUpstream(ctx context.Context, body []byte, c laneRequest) (*http.Response, error) {",
				New:  "func (s *Server) postUpstream(ctx context.Context, r *http.Request, body []byte, c laneRequest) (*http.Response, error) {",
			},
			{
				File: "proxy/http_fastlane.go",
				Old:  "\treq.Header.Set(\"Content-Type\", \"application/json\")\n\treq.Header.Set(\"Accept\"",
				New:  "\treq.Header = r.Header.Clone()\n\treq.Header.Set(\"Content-Type\", \"application/json\")\n\treq.Header.Set(\"Accept\"",
			},
			{
				File: "proxy/http_fastlane.go",
				Old:  "s.postUpstream(ctx, body, c)",
				New:  "s.postUpstream(ctx, r, body, c)",
			},
			{
				File: "proxy/http_fastlane.go",
				Old:  "s.postUpstream(r.Context(), body, c)",
				New:  "s.postUpstream(r.Context(), r, body, c)",
			},
			{
				// The proxy's own messages to a session carry no client's.
				File: "proxy/http_lane_stateful.go",
				Old:  "c.s.postUpstream(ctx, msg, laneRequest{st: c})",
				New:  "c.s.postUpstream(ctx, &http.Request{Header: http.Header{}}, msg, laneRequest{st: c})",
			},
		},
	},
	{
		Name:     "http-fastlane-host-check",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneRefusesGatedAndOdd",
		Why:      "the fast lane skips the SDK's DNS rebinding protection",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane_headers.go",
				Old:  "\treturn loopback.HostPort(r.Host)\n",
				New:  "\treturn true\n",
			},
		},
	},
	{
		Name:     "http-fastlane-stateful",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneStatefulOff",
		Why:      "the fast lane answers 2026-07-28 requests that --http-stateful refuses",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane.go",
				Old:  "\tif h.Stateful {\n\t\treturn next\n\t}\n\treturn http.HandlerFunc",
				New:  "\treturn http.HandlerFunc",
			},
		},
	},
	{
		Name:     "http-fastlane-header-name",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneRefusesGatedAndOdd",
		Why:      "the fast lane takes a call whose Mcp-Name header names another tool than its body",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane.go",
				Old:  "if r.Header.Get(\"Mcp-Name\") != f.Tool {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "http-stateful-lane-undeclared",
		Packages: []string{"./proxy"},
		Run:      "TestStatefulLaneLeavesAskableClientsToSDK",
		Why:      "the stateful HTTP lane takes a call of a client the upstream may ask in-call (it declared elicitation, which the policy relays), and answers the upstream's question with a refusal instead of relaying it",
		Edits: []Edit{
			{
				File: "proxy/http_lane_stateful.go",
				Old:  "\tif s.mayAsk(ls.caps) {",
				New:  "\tif false && s.mayAsk(ls.caps) {",
			},
		},
	},
	{
		Name:     "http-stateful-lane-client-id-upstream",
		Packages: []string{"./proxy"},
		Run:      "TestStatefulLaneKeepsSessionsApart",
		Why:      "the stateful HTTP lane sends the client's own id into the upstream session every 2025-11-25 client shares, where two clients' calls with the same id collide",
		Edits: []Edit{
			{
				File: "proxy/http_lane_stateful.go",
				Old:  "upID: `\"` + laneIDPrefix + strconv.FormatUint(seq, 10) + `\"`}, true",
				New:  "upID: f.ID + strconv.FormatUint(seq, 10)[:0]}, true",
			},
		},
	},
	{
		Name:     "http-stateful-lane-client-token-upstream",
		Packages: []string{"./proxy"},
		Run:      "TestStatefulLaneKeepsProgressTokensApart",
		Why:      "the stateful HTTP lane sends the client's own progress token into the upstream session every 2025-11-25 client and the SDK path (mcpsafe-N) share, where one's progress can reach another",
		Edits: []Edit{
			{
				File: "proxy/http_lane_stateful.go",
				Old:  "\tif !ok || c.token == \"\" {\n\t\treturn up, ok\n\t}",
				New:  "\tif true {\n\t\treturn up, ok\n\t}",
			},
			{
				File: "proxy/http_lane_stateful.go",
				Old:  "return c.token != \"\" && f.Progress == c.upID",
				New:  "return c.token != \"\" && f.Progress == c.token",
			},
			{
				File: "proxy/http_lane_stateful.go",
				Old:  "\t\tpart, with = f.Params[\"progressToken\"], []byte(c.token)\n",
				New:  "",
			},
		},
	},
	{
		Name:     "http-stateful-lane-other-user",
		Packages: []string{"./proxy"},
		Run:      "TestStatefulLaneRefusesAnotherUsersSession",
		Why:      "the stateful HTTP lane serves a session to a user other than the one who opened it (the SDK handler answers 403)",
		Edits: []Edit{
			{
				File: "proxy/http_lane_stateful.go",
				Old:  "ls.user != userOf(r) ||",
				New:  "false ||",
			},
		},
	},
	{
		Name:     "http-stateful-lane-fresh-from-refused",
		Packages: []string{"./proxy"},
		Run:      "TestStatefulLaneFreshOnlyFromAcceptedPOSTs",
		Why:      "a POST the SDK handler refuses makes a lane session look fresh, so whoever knows a session id keeps the lane serving it while the SDK's idle timer runs out",
		Edits: []Edit{
			{
				File: "proxy/http_lane_stateful.go",
				Old:  "if code >= 200 && code < 300 {\n\t\t\tls.sawSDK()",
				New:  "if true {\n\t\t\tls.sawSDK()",
			},
		},
	},
	{
		Name:     "http-unknown-unchecked",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPUnknownMethods",
		Why:      "over HTTP, a method the proxy does not know reaches the upstream whatever the policy and its params say",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "\twhy = s.refuseUnknown(f)\n",
				New:  "\twhy = \"\"\n",
			},
		},
	},
	{
		Name:     "http-unknown-refused-capabilities",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPUnknownMethods",
		Why:      "an unknown request declaring a capability the policy does not relay reaches the upstream unfiltered",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "\t\tif k := s.refusedCapability(caps); k != \"\" {",
				New:  "\t\tif k := s.refusedCapability(caps); false && k != \"\" {",
			},
		},
	},
	{
		Name:     "http-unknown-header-mismatch",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPUnknownMethods",
		Why:      "an unknown request whose Mcp-Method header names another method is relayed",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane.go",
				Old:  "if v := r.Header.Values(\"Mcp-Method\"); len(v) != 1 || v[0] != f.Method {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "http-unknown-ambiguous-params",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPUnknownMethods",
		Why:      "unknown-method params with duplicate keys (read differently by different parsers) are relayed",
		Edits: []Edit{
			{
				File: "internal/frame/read.go",
				Old:  "\t\tf.Params, _ = validMembers(p)\n",
				New:  "\t\tjson.Unmarshal(p, &f.Params)\n",
			},
			{
				File: "internal/frame/read.go",
				Old:  "\tif err != nil && !folded(err, f) {",
				New:  "\tif false && err != nil && !folded(err, f) {",
			},
		},
	},
	{
		Name:     "upstream-line-read-leniently",
		Packages: []string{"./proxy"},
		Run:      "TestUpstreamLinesReadAlikeOrNotRaw",
		Why:      "an upstream line that encoding/json reads as progress (case-folded or duplicate keys) reaches the client raw, where it reads as an elicitation with the gate's request id",
		Edits: []Edit{
			{
				File: "proxy/fastlane.go",
				Old:  "\tf := frame.Read(line)\n\tif !f.Alike {\n\t\treturn u.routeUnclear(line)",
				New:  "\tf := leniently(line)\n\tif !f.Alike {\n\t\treturn u.routeUnclear(line)",
			},
			{
				File: "proxy/fastlane.go",
				Old:  "// routeUnclear handles an upstream line",
				New:  "func leniently(line []byte) frame.Frame {\n\tvar m struct {\n\t\tID     json.RawMessage\n\t\tMethod *string\n\t\tParams struct{ ProgressToken json.RawMessage }\n\t}\n\tif json.Unmarshal(line, &m) != nil {\n\t\treturn frame.Frame{}\n\t}\n\tf := frame.Frame{Alike: true, Kind: frame.Response, ID: string(bytes.TrimSpace(m.ID)), Progress: string(bytes.TrimSpace(m.Params.ProgressToken))}\n\tif m.Method != nil {\n\t\tf.Method, f.Kind = *m.Method, frame.Notification\n\t\tif len(m.ID) > 0 {\n\t\t\tf.Kind = frame.Request\n\t\t}\n\t}\n\treturn f\n}\n\n// routeUnclear handles an upstream line",
			},
		},
	},
	{
		Name:     "http-lane-lone-cr",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneReadsUpstreamAsClientsDo",
		Why:      "the HTTP fast lane relays an event stream with a lone CR, which the client's SSE parser splits into events the proxy never checked",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane.go",
				Old:  "if i := bytes.IndexByte(line, '\\r'); i >= 0 && i != len(line)-2 {",
				New:  "if i := bytes.IndexByte(line, '\\r'); false && i >= 0 && i != len(line)-2 {",
			},
		},
	},
	{
		Name:     "http-lane-asks-read-leniently",
		Packages: []string{"./proxy"},
		Run:      "TestHTTPFastLaneReadsUpstreamAsClientsDo",
		Why:      "the HTTP fast lane checks input requests as encoding/json reads them: \"Method\" beside \"method\" passes a roots/list the policy refuses",
		Edits: []Edit{
			{
				File: "internal/frame/check.go",
				Old:  "\tcase bytes.EqualFold(first, key):\n",
				New:  "\tcase false:\n",
			},
		},
	},
	{
		Name:     "unknown-method-name-unscanned",
		Packages: []string{"./proxy"},
		Run:      "TestUnknownMethodRefused",
		Why:      "an unknown method named after a gated tool (x-vendor/delete_thing) is relayed",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "if name, ok := methodNamesTool(f.Method, blocked); ok {",
				New:  "if name, ok := methodNamesTool(f.Method, blocked); false && ok {",
			},
		},
	},
	{
		Name:     "unknown-method-params-exact-only",
		Packages: []string{"./proxy", "./cmd/mcpsafe"},
		Run:      "TestUnknownMethodRefused|TestUnknownRelayRefusesMembersNotSpeltExactly",
		Why:      "the unknown-method relay scans only the member spelt exactly params and relays other members unread: an upstream that matches names under case folding runs the gated tool named under Params or paramſ",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "\tif !f.Alike {\n",
				New:  "\tif false && !f.Alike {\n",
			},
			{
				File: "proxy/unknown_methods.go",
				Old:  "for _, k := range slices.Sorted(maps.Keys(f.Top)) {",
				New:  "for _, k := range slices.DeleteFunc(slices.Sorted(maps.Keys(f.Top)), func(k string) bool { return k != \"params\" }) {",
			},
		},
	},
	{
		Name:     "unknown-method-extra-members",
		Packages: []string{"./proxy", "./cmd/mcpsafe"},
		Run:      "TestUnknownMethodRefused|TestUnknownRelayRefusesMembersNotSpeltExactly",
		Why:      "a relayed unknown-method line may carry members JSON-RPC does not have (which an upstream may read as its parameters)",
		Edits: []Edit{
			{
				File: "internal/frame/read.go",
				Old:  "if !allowed[k] {",
				New:  "if !allowed[k] && false {",
			},
		},
	},
	{
		Name:     "unknown-method-split-dotted-names",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestUnknownRelayRefusesMethodNamingDottedTool",
		Why:      "the method-name check compares each part of the method with whole tool names, so a gated tool whose name holds a dot (x-acme/fs.delete) is relayed and runs",
		Edits: []Edit{
			{
				File: "proxy/unknown_methods.go",
				Old:  "if slices.Equal(parts[i:i+len(np)], np) {",
				New:  "if len(np) == 1 && parts[i] == np[0] {",
			},
		},
	},
	{
		Name:     "http-lane-unread-bom-event",
		Packages: []string{"./proxy", "./cmd/mcpsafe"},
		Run:      "TestHTTPFastLaneReadsUpstreamAsClientsDo|TestHTTPFastLaneFailsAnswersClientsReadOtherwise",
		Why:      "the HTTP fast lane relays, unread, an event whose first line starts with a byte-order mark (a WHATWG parser drops it and reads the event's data)",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane.go",
				Old:  "if !plainEventLine(trimmed) {",
				New:  "if false && !plainEventLine(trimmed) {",
			},
		},
	},
	{
		Name:     "http-lane-unread-folded-input-requests",
		Packages: []string{"./proxy", "./cmd/mcpsafe"},
		Run:      "TestHTTPFastLaneReadsUpstreamAsClientsDo|TestHTTPFastLaneFailsAnswersClientsReadOtherwise",
		Why:      "the HTTP fast lane relays input requests under a member equal to inputRequests only under case folding, which it does not check and case-insensitive clients read",
		Edits: []Edit{
			{
				File: "internal/frame/read.go",
				Old:  "if k != name && bytes.EqualFold([]byte(k), []byte(name)) {",
				New:  "if false && k != name && bytes.EqualFold([]byte(k), []byte(name)) {",
			},
		},
	},
	{
		Name:     "http-lane-unread-request-answer",
		Packages: []string{"./proxy", "./cmd/mcpsafe"},
		Run:      "TestHTTPFastLaneReadsUpstreamAsClientsDo|TestHTTPFastLaneFailsAnswersClientsReadOtherwise",
		Why:      "the HTTP fast lane relays a JSON answer shaped as a request (roots/list) carrying the call's id",
		Edits: []Edit{
			{
				File: "proxy/http_fastlane.go",
				Old:  "if !f.Alike || f.Kind != frame.Response || f.ID != id {",
				New:  "if !f.Alike || f.ID != id {",
			},
		},
	},
	{
		Name:     "resolver-bind-ignored",
		Packages: []string{"./proxy", "./cmd/mcpsafe"},
		Run:      "TestResolverBindSurvivesAccessTime|TestFSResolverBindsReportedFieldsOnly|TestApprovalSurvivesARead",
		Why:      "the policy's bind: is ignored and the whole report binds: a read (last-access time) voids the approval",
		Edits: []Edit{
			{
				File: "proxy/resolver.go",
				Old:  "\tif len(rs.Bind) == 0 {\n\t\treturn r, nil",
				New:  "\tif true {\n\t\treturn r, nil",
			},
		},
	},
	{
		Name:     "resolver-bind-nothing",
		Packages: []string{"./proxy", "./cmd/mcpsafe"},
		Run:      "TestResolverBindSurvivesAccessTime|TestFSResolverBindsReportedFieldsOnly|TestApprovalSurvivesARead",
		Why:      "bind: keeps none of the fields it names: no state binds the approval and a write in between goes unseen",
		Edits: []Edit{
			{
				File: "proxy/resolver.go",
				Old:  "\t\tfields[name] = v\n",
				New:  "\t\t_ = v\n",
			},
		},
	},
	{
		Name:     "rule-argument-names-unchecked",
		Packages: []string{"./proxy", "./cmd/mcpsafe"},
		Run:      "TestRuleArgumentNamesChecked|TestProxyRuleNamingAMissingArgument",
		Why:      "a rule naming an argument the tool lacks (args.pth) loads, then denies every call at run time",
		Edits: []Edit{
			{
				File: "proxy/policy/hints.go",
				Old:  "\tfor _, a := range tp.argRefs {",
				New:  "\tfor _, a := range tp.argRefs[:0] {",
			},
		},
	},
	{
		Name:     "proxy-trusts-undeclared-upstream-gate",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestProxyTrustsUpstreamGate|TestProxyFrontsMcpsafeFiles",
		Why:      "a tool that declares its own approval_token passes through without trust_upstream_gate in the policy",
		Edits: []Edit{
			{
				File: "proxy/policy/policy.go",
				Old:  "if p == nil || !p.TrustUpstreamGate || !toolschema.HasProperty(",
				New:  "if p == nil || !toolschema.HasProperty(",
			},
		},
	},
	{
		Name:     "proxy-trust-ignores-tool-schema",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestProxyTrustsOnlyToolsThatGateThemselves",
		Why:      "trust_upstream_gate passes every tool through, also those without a gate of their own",
		Edits: []Edit{
			{
				File: "proxy/policy/policy.go",
				Old:  "if p == nil || !p.TrustUpstreamGate || !toolschema.HasProperty(t.InputSchema, mcpsafe.TokenField) {",
				New:  "if _ = toolschema.HasProperty; p == nil || !p.TrustUpstreamGate {",
			},
		},
	},
	{
		Name:     "proxy-effect-path-unchecked",
		Packages: []string{"./proxy"},
		Run:      "TestEffectWriteRefusesUncleanPaths|TestEffectMoveSaysWhetherTheDestinationExists",
		Why:      "an effect path with .. or // reaches the prompt: the read tool may find nothing where the write overwrites, and the plan says \"Create\"",
		Edits: []Edit{
			{
				File: "proxy/effects.go",
				Old:  "\tif why := unclean(p); why != \"\" {\n",
				New:  "\tif why := unclean(p); false && why != \"\" {\n",
			},
		},
	},
	{
		Name:     "proxy-move-destination-unknown-said-free",
		Packages: []string{"./proxy"},
		Run:      "TestEffectMoveSaysWhetherTheDestinationExists",
		Why:      "a move onto an existing destination is shown as a move to a free name",
		Edits: []Edit{
			{
				File: "proxy/effects.go",
				Old:  "\tcase !exists:\n\t\treturn []string{move + \"which does not exist yet",
				New:  "\tcase !exists || true:\n\t\treturn []string{move + \"which does not exist yet",
			},
		},
	},
	{
		Name:     "policy-rule-principal-unbound",
		Packages: []string{"./proxy"},
		Run:      "TestRuleSeesPrincipal",
		Why:      "a policy rule sees an empty principal: a deny rule naming a caller never denies it, and an auto-approve rule naming one never runs its calls (or, written as principal != X, approves everyone)",
		Edits: []Edit{
			{
				File: "proxy/policy/cel.go",
				Old:  "Principal: c.Principal, Args: args",
				New:  "Principal: \"\", Args: args",
			},
		},
	},
}
