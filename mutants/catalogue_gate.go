// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// gateMutants break the gate's call path: approvals, bindings, rules, journal, prompt backstop.
var gateMutants = []Mutant{
	{
		Name:     "gate-replay-costs-redemption-records",
		Packages: []string{"."},
		Run:      "TestReplayedHandleCostsNoRedemptionRecordWhereItWasSpent",
		Why:      "a replayed handle writes an uncapped redemption record and refusal each time, a way around the journal's cap on refusals",
		Edits: []Edit{{
			File: "approval_token.go",
			Old:  "\t\tif g.spent.has(gr.Nonce, k.now) {\n",
			New:  "\t\tif false {\n",
		}},
	},
	{
		Name:     "gate-given-back-grant-still-spent-here",
		Packages: []string{"."},
		Run:      "TestApprovedHandleGivenBackWhenNothingRan",
		Why:      "a grant given back to the ledger stays marked spent on the gate that gave it back: the person's decision is refused there though the ledger holds it",
		Edits: []Edit{{
			File: "approval_channel.go",
			Old:  "\t\t\tg.spent.forget(gr.Nonce)\n",
			New:  "",
		}},
	},
	{
		Name:     "gate-redemption-unjournaled",
		Packages: []string{"."},
		Run:      "TestRedemptionCutByAKillIsJournaled|TestRedemptionJournaledBeforeTheApproval",
		Why:      "the gate spends an approval in its ledger with nothing durable before it: a kill between the redemption and the approval record loses the person's decision without a trace",
		Edits: []Edit{{
			File: "approval_token.go",
			Old:  "\tif traced {\n",
			New:  "\tif false {\n",
		}},
	},
	{
		Name:     "reusable-token",
		Packages: []string{"."},
		Why:      "the ledger is never asked: a grant can be redeemed again and again",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "ok, err := g.ledger.Redeem(ctx, gr.Nonce)",
				New:  "ok, err := true, error(nil)",
			},
		},
	},
	{
		Name:     "elicit-error-approves",
		Packages: []string{"."},
		Why:      "a failing client elicitation counts as an approval",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "res, err := k.req.Session.Elicit(ectx, params)\n",
				New:  "res, err := k.req.Session.Elicit(ectx, params)\n\tif err != nil && !errors.Is(ectx.Err(), context.DeadlineExceeded) {\n\t\tres, err = &mcp.ElicitResult{Action: \"accept\", Content: map[string]any{\"approve\": true}}, nil\n\t}\n",
			},
		},
	},
	{
		Name:     "elicit-timeout-approves",
		Packages: []string{"."},
		Why:      "an elicitation that times out counts as an approval",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "res, err := k.req.Session.Elicit(ectx, params)\n",
				New:  "res, err := k.req.Session.Elicit(ectx, params)\n\tif err != nil && errors.Is(ectx.Err(), context.DeadlineExceeded) {\n\t\tres, err = &mcp.ElicitResult{Action: \"accept\", Content: map[string]any{\"approve\": true}}, nil\n\t}\n",
			},
		},
	},
	{
		Name:     "cancel-approves",
		Packages: []string{"."},
		Why:      "action cancel counts as an approval",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "\tcase \"cancel\":\n\t\treturn refusal(ReasonCancelled, \"the user dismissed the approval request\")",
				New:  "\tcase \"cancel\":\n\t\treturn nil",
			},
		},
	},
	{
		Name:     "decline-approves-when-approve-true",
		Packages: []string{"."},
		Why:      "decline with approve:true in the content counts as an approval",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "\tcase \"decline\":\n",
				New:  "\tcase \"decline\":\n\t\tif v, _ := res.Content[\"approve\"].(bool); v {\n\t\t\treturn nil\n\t\t}\n",
			},
		},
	},
	{
		Name:     "accept-equalfold",
		Packages: []string{"."},
		Why:      "\"accept\" compared case-insensitively (Accept, ACCEPT pass)",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "\tswitch res.Action {\n\tcase \"accept\":",
				New:  "\tswitch {\n\tcase strings.EqualFold(res.Action, \"accept\"):",
			},
			{
				File: "approval_elicit.go",
				Old:  "\tcase \"decline\":\n\t\treturn refusal(ReasonDeclined, \"the user declined",
				New:  "\tcase res.Action == \"decline\":\n\t\treturn refusal(ReasonDeclined, \"the user declined",
			},
			{
				File: "approval_elicit.go",
				Old:  "\tcase \"cancel\":\n\t\treturn refusal(ReasonCancelled",
				New:  "\tcase res.Action == \"cancel\":\n\t\treturn refusal(ReasonCancelled",
			},
			{
				File: "approval_elicit.go",
				Old:  "\t\"errors\"\n",
				New:  "\t\"errors\"\n\t\"strings\"\n",
			},
		},
	},
	{
		Name:     "accept-prefix",
		Packages: []string{"."},
		Why:      "any action starting with \"accept\" passes (accepted, accept-all)",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "\tswitch res.Action {\n\tcase \"accept\":",
				New:  "\tswitch {\n\tcase strings.HasPrefix(res.Action, \"accept\"):",
			},
			{
				File: "approval_elicit.go",
				Old:  "\tcase \"decline\":\n\t\treturn refusal(ReasonDeclined, \"the user declined",
				New:  "\tcase res.Action == \"decline\":\n\t\treturn refusal(ReasonDeclined, \"the user declined",
			},
			{
				File: "approval_elicit.go",
				Old:  "\tcase \"cancel\":\n\t\treturn refusal(ReasonCancelled",
				New:  "\tcase res.Action == \"cancel\":\n\t\treturn refusal(ReasonCancelled",
			},
			{
				File: "approval_elicit.go",
				Old:  "\t\"errors\"\n",
				New:  "\t\"errors\"\n\t\"strings\"\n",
			},
		},
	},
	{
		Name:     "approve-truthy",
		Packages: []string{"."},
		Why:      "approve is truthy instead of exactly the JSON boolean true (\"true\", 1, \"yes\" pass)",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "if v, ok := res.Content[\"approve\"].(bool); ok && v {",
				New:  "if v := res.Content[\"approve\"]; v != nil && v != false && v != \"\" && v != \"false\" {",
			},
		},
	},
	{
		Name:     "approve-missing-ok",
		Packages: []string{"."},
		Why:      "a missing approve field counts as yes",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "if v, ok := res.Content[\"approve\"].(bool); ok && v {",
				New:  "if v, ok := res.Content[\"approve\"].(bool); !ok || v {",
			},
		},
	},
	{
		Name:     "extra-answers-ignored",
		Packages: []string{"."},
		Why:      "answers beyond ours are ignored instead of refused",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "if len(answers) != 1 {",
				New:  "if len(answers) == 0 {",
			},
		},
	},
	{
		Name:     "state-spent-after-answer",
		Packages: []string{"."},
		Why:      "MRTR: the answer is read before the state is spent, so a declined state stays redeemable",
		Edits: []Edit{
			{
				File: "approval_elicit.go",
				Old:  "\tgr, r := g.openFor(ctx, k, state, grantElicit, !inCall && approvalAnswer(answers) == nil)\n\tif r != nil {\n\t\treturn nil, r\n\t}\n\tif r := approvalAnswer(answers); r != nil {\n\t\treturn nil, r\n\t}\n",
				New:  "\tif r := approvalAnswer(answers); r != nil {\n\t\treturn nil, r\n\t}\n\tgr, r := g.openFor(ctx, k, state, grantElicit, true)\n\tif r != nil {\n\t\treturn nil, r\n\t}\n",
			},
		},
	},
	{
		Name:     "autoapprove-error-approves",
		Packages: []string{"."},
		Why:      "an auto-approve rule that errors or panics approves instead of asking",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "\t\t\t\tcontinue\n\t\t\t}\n\t\t\tif hit {",
				New:  "\t\t\t}\n\t\t\tif hit || err != nil {",
			},
		},
	},
	{
		Name:     "autoapprove-in-elicit-mode",
		Packages: []string{"."},
		Why:      "elicit-only mode still honours auto-approve rules",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "if t.mode != ModeElicit && t.minAssur <= AssuranceClientRelayed {",
				New:  "if t.minAssur <= AssuranceClientRelayed {",
			},
		},
	},
	{
		Name:     "autoapprove-above-assurance",
		Packages: []string{"."},
		Why:      "auto-approve also skips the human for a tool that requires channel assurance",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "if t.mode != ModeElicit && t.minAssur <= AssuranceClientRelayed {",
				New:  "if t.mode != ModeElicit {",
			},
			{
				File: "gate_call.go",
				Old:  "\tif a.Assurance < k.t.minAssur {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s requires a stronger",
				New:  "\tif a.Assurance < k.t.minAssur && a.Decision != journal.PolicyAutoApproved {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s requires a stronger",
			},
		},
	},
	{
		Name:     "rule-error-matches",
		Packages: []string{"."},
		Why:      "a rule that errors or panics counts as a match (auto-approve on error)",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "\tif err != nil {\n\t\treturn false, err\n\t}\n\treturn hit, nil",
				New:  "\tif err != nil {\n\t\treturn true, nil\n\t}\n\treturn hit, nil",
			},
		},
	},
	{
		Name:     "deny-error-allows",
		Packages: []string{"."},
		Why:      "a deny rule that errors or panics lets the call through",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "\t\tif err != nil {\n\t\t\treturn refusal(ReasonPolicyDenied, \"deny rule %q failed",
				New:  "\t\tif err != nil && false {\n\t\t\treturn refusal(ReasonPolicyDenied, \"deny rule %q failed",
			},
		},
	},
	{
		Name:     "allow-error-allows",
		Packages: []string{"."},
		Why:      "an allow rule that errors counts as a match",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "if hit, err := matchRule(ctx, rule, k.c, k.st.resolved); err == nil && hit {",
				New:  "if hit, err := matchRule(ctx, rule, k.c, k.st.resolved); err != nil || hit {",
			},
		},
	},
	{
		Name:     "deny-after-approval",
		Packages: []string{"."},
		Why:      "deny rules are evaluated after the approval instead of first (a human is asked, an auto-approve rule runs the call)",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "\tfor _, rule := range k.t.Deny {\n\t\thit, err := matchRule(ctx, rule, k.c, k.st.resolved)\n\t\tif err != nil {\n\t\t\treturn refusal(ReasonPolicyDenied, \"deny rule %q failed, so the call is denied: %v\", rule.Name, err)\n\t\t}",
				New:  "\tfor _, rule := range k.t.Deny {\n\t\tif !carriesApproval(k) {\n\t\t\tbreak\n\t\t}\n\t\thit, err := matchRule(ctx, rule, k.c, k.st.resolved)\n\t\tif err != nil {\n\t\t\treturn refusal(ReasonPolicyDenied, \"deny rule %q failed, so the call is denied: %v\", rule.Name, err)\n\t\t}",
			},
			{
				File: "gate_call_check.go",
				Old:  "func (g *Gate) resolve(ctx context.Context, k *call) (state, *Refusal) {",
				New:  "func carriesApproval(k *call) bool {\n\treturn k.token != nil || k.req.Params.RequestState != \"\" || len(k.req.Params.InputResponses) > 0\n}\n\nfunc (g *Gate) resolve(ctx context.Context, k *call) (state, *Refusal) {",
			},
		},
	},
	{
		Name:     "expiry-inclusive",
		Packages: []string{"."},
		Why:      "expiry boundary inclusive: valid while now <= expires",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "case !k.now.Before(gr.expires()):",
				New:  "case k.now.After(gr.expires()):",
			},
		},
	},
	{
		Name:     "expiry-unchecked",
		Packages: []string{"."},
		Why:      "expiry not checked at all (the ledger still expires grants)",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "case !k.now.Before(gr.expires()):",
				New:  "case false:",
			},
		},
	},
	{
		Name:     "args-digest-skipped",
		Packages: []string{"."},
		Why:      "the argument digest is not compared: approve cache.txt, delete thesis.txt",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "case gr.Args != k.c.ArgsDigest:",
				New:  "case false && gr.Args != k.c.ArgsDigest:",
			},
		},
	},
	{
		Name:     "args-digest-noncanonical",
		Packages: []string{"."},
		Why:      "the digest is computed over the non-canonical JSON (nested key order, whitespace, number spelling change it)",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "k.c.ArgsDigest = canon.SHA256(canonical)",
				New:  "rest2, _, _ := canon.SplitMember(req.Params.Arguments, TokenField)\n\tk.c.ArgsDigest = canon.SHA256(rest2)",
			},
		},
	},
	{
		Name:     "principal-unchecked",
		Packages: []string{"."},
		Why:      "a grant issued to one principal is accepted from another",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "case gr.Principal != k.c.Principal:",
				New:  "case false && gr.Principal != k.c.Principal:",
			},
		},
	},
	{
		Name:     "policy-hash-unchecked",
		Packages: []string{"."},
		Why:      "a grant survives a change of the tool's policy",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "case gr.Policy != k.t.policy:",
				New:  "case false && gr.Policy != k.t.policy:",
			},
			{
				File: "approval_token.go",
				Old:  "case gr.Policy != g.currentPolicy(k.t.Name):",
				New:  "case false && gr.Policy != g.currentPolicy(k.t.Name):",
			},
		},
	},
	{
		Name:     "policy-hash-omits-rules",
		Packages: []string{"."},
		Why:      "the policy hash leaves out the rule names, so adding a deny rule keeps old grants valid",
		Edits: []Edit{
			{
				File: "gate_register.go",
				Old:  "Deny: names(t.Deny), Allow: names(t.Allow), Auto: names(t.AutoApprove),",
				New:  "Deny: names(nil), Allow: names(nil), Auto: names(nil),",
			},
		},
	},
	{
		Name:     "tool-unchecked",
		Packages: []string{"."},
		Why:      "a grant for one tool is accepted by another (tool neither compared nor in the policy hash)",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "case gr.Tool != k.t.Name:",
				New:  "case false && gr.Tool != k.t.Name:",
			},
			{
				File: "gate_register.go",
				Old:  "Tool: t.Name, Mode: t.mode,",
				New:  "Mode: t.mode,",
			},
		},
	},
	{
		Name:     "grant-mode-unchecked",
		Packages: []string{"."},
		Why:      "a request state is accepted as a token and vice versa",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "case gr.Mode != mode:",
				New:  "case false && gr.Mode != mode:",
			},
		},
	},
	{
		Name:     "future-issue-accepted",
		Packages: []string{"."},
		Why:      "a grant claiming a future issue time is accepted",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "case time.UnixMilli(gr.IssuedAt).After(k.now.Add(maxClockSkew)):",
				New:  "case false:",
			},
		},
	},
	{
		Name:     "resolver-drift-ignored",
		Packages: []string{"."},
		Why:      "the re-resolved target is not compared with the approved one",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "if target != approvedTarget {",
				New:  "if false && target != approvedTarget {",
			},
		},
	},
	{
		Name:     "resolver-empty-ok",
		Packages: []string{"."},
		Why:      "a resolver that finds nothing is not a refusal",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "if empty(res) {\n\t\treturn state{}, refusal(ReasonResolverFailed",
				New:  "if empty(res) && false {\n\t\treturn state{}, refusal(ReasonResolverFailed",
			},
		},
	},
	{
		Name:     "schema-fast-path-ignores-type",
		Packages: []string{"."},
		Why:      "the fast schema check passes a property of the wrong type without asking the validator",
		Edits: []Edit{
			{
				File: "schema_fast.go",
				Old:  "if want != \"\" && !hasType(m.Value, want) {",
				New:  "if false && want != \"\" && !hasType(m.Value, want) {",
			},
		},
	},
	{
		Name:     "schema-fast-path-ignores-required",
		Packages: []string{"."},
		Why:      "the fast schema check passes a call missing a required argument without asking the validator",
		Edits: []Edit{
			{
				File: "schema_fast.go",
				Old:  "\t\tif !found {\n\t\t\treturn false",
				New:  "\t\tif false && !found {\n\t\t\treturn false",
			},
		},
	},
	{
		Name:     "schema-unchecked",
		Packages: []string{"."},
		Why:      "arguments are not validated against the tool's schema",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "if err := schema.Validate(inst); err != nil {",
				New:  "if err := schema.Validate(inst); err != nil && false {",
			},
		},
	},
	{
		Name:     "token-in-elicit-mode",
		Packages: []string{"."},
		Why:      "a token is redeemed for a tool in elicit-only mode",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "if !g.tokenAllowed(k.t, k.now) || k.t.mode == ModeElicit || k.t.mode == ModeChannel {",
				New:  "if !g.tokenAllowed(k.t, k.now) || k.t.mode == ModeChannel {",
			},
		},
	},
	{
		Name:     "irreversible-token-without-optin",
		Packages: []string{"."},
		Why:      "auto mode hands an irreversible tool a token when the client cannot elicit",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "\t\tif g.tokenAllowed(t, k.now) {\n\t\t\treturn g.issueToken(ctx, k)",
				New:  "\t\tif true {\n\t\t\treturn g.issueToken(ctx, k)",
			},
		},
	},
	{
		Name:     "token-mode-ignores-optin",
		Packages: []string{"."},
		Why:      "token mode issues tokens to irreversible tools that are not opted in",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "\t\tif !g.tokenAllowed(t, k.now) {\n\t\t\treturn nil, refusal(ReasonPolicyDenied, \"%s is irreversible and the operator",
				New:  "\t\tif false {\n\t\t\treturn nil, refusal(ReasonPolicyDenied, \"%s is irreversible and the operator",
			},
		},
	},
	{
		Name:     "optin-prefix",
		Packages: []string{"."},
		Why:      "the opt-in list matches by prefix (delete allows delete_note)",
		Edits: []Edit{
			{
				File: "gate_register.go",
				Old:  "if g.opts.AllowTokenFor[i].Tool == t.Name {",
				New:  "if strings.HasPrefix(t.Name, g.opts.AllowTokenFor[i].Tool) {",
			},
			{
				File: "gate_register.go",
				Old:  "\t\"slices\"\n",
				New:  "\t\"slices\"\n\t\"strings\"\n",
			},
		},
	},
	{
		Name:     "optin-wildcard",
		Packages: []string{"."},
		Why:      "the opt-in list accepts glob patterns (delete_* allows delete_note)",
		Edits: []Edit{
			{
				File: "gate_register.go",
				Old:  "if g.opts.AllowTokenFor[i].Tool == t.Name {",
				New:  "if ok, _ := path.Match(g.opts.AllowTokenFor[i].Tool, t.Name); ok {",
			},
			{
				File: "gate.go",
				Old:  "\tcase ' ', '\\t', '\\n', '*', '?', '[', ']':",
				New:  "\tcase ' ', '\\t', '\\n':",
			},
			{
				File: "gate_register.go",
				Old:  "\t\"maps\"\n",
				New:  "\t\"maps\"\n\t\"path\"\n",
			},
		},
	},
	{
		Name:     "optin-expiry-ignored",
		Packages: []string{"."},
		Why:      "an expired opt-in still allows tokens",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "return t.optIn != nil && (t.optIn.Until.IsZero() || now.Before(t.optIn.Until))",
				New:  "return t.optIn != nil",
			},
		},
	},
	{
		Name:     "pending-cap-removed",
		Packages: []string{"."},
		Why:      "no global/per-principal cap on outstanding grants",
		Edits: []Edit{
			{
				File: "gate_pending.go",
				Old:  "\tif p.byUser[principal] >= p.perUser {\n\t\treturn errTooManyPendingUser",
				New:  "\tif p.byUser[principal] >= p.perUser && false {\n\t\treturn errTooManyPendingUser",
			},
		},
	},
	{
		Name:     "journal-after-execute",
		Packages: []string{"."},
		Why:      "the approval record is written after Execute instead of before",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "\tif r := g.journalApproval(ctx, k, &a); r != nil {\n\t\treturn nil, r\n\t}\n\tvar out *mcp.CallToolResult\n\terr := safely(func() error {\n\t\tvar err error\n\t\tout, err = k.t.execute(x.ectx, &k.c, k.in, st.v, &a)\n\t\treturn err\n\t})\n",
				New:  "\tvar out *mcp.CallToolResult\n\terr := safely(func() error {\n\t\tvar err error\n\t\tout, err = k.t.execute(x.ectx, &k.c, k.in, st.v, &a)\n\t\treturn err\n\t})\n\tif r := g.journalApproval(ctx, k, &a); r != nil {\n\t\treturn nil, r\n\t}\n",
			},
		},
	},
	{
		Name:     "journal-error-ignored",
		Packages: []string{"."},
		Why:      "a journal that cannot record the approval does not stop the call",
		Edits: []Edit{
			{
				File: "audit.go",
				Old:  "\tif err := g.mustRecord(ctx, rec); err != nil {\n\t\treturn refusal(ReasonJournalUnavailable, \"the audit journal could not record the approval,",
				New:  "\tif err := g.mustRecord(ctx, rec); err != nil && false {\n\t\treturn refusal(ReasonJournalUnavailable, \"the audit journal could not record the approval,",
			},
		},
	},
	{
		Name:     "gate-secret-fields-dropped",
		Packages: []string{"."},
		Why:      "the gate does not pass the tool's SecretFields to the journal (secrets land in it)",
		Edits: []Edit{
			{
				File: "audit.go",
				Old:  "\t\tSecretFields: k.t.SecretFields,\n",
				New:  "",
			},
		},
	},
	{
		Name:     "plan-diff-lines-raw",
		Packages: []string{"."},
		Run:      "TestCraftedDiffShownAsItIs",
		Why:      "a diff line reaches the human unrendered: a CR overprints, a run of spaces wraps +rm -rf onto a line of its own, a bidi control reorders",
		Edits: []Edit{
			{
				File: "plan_parts.go",
				Old:  "lines[i].Text = prompt.CodeLine(l.Text)",
				New:  "lines[i].Text = l.Text",
			},
		},
	},
	{
		Name:     "plan-parts-unbound",
		Packages: []string{"."},
		Run:      "TestDiffChangeVoidsApproval",
		Why:      "the diff the human approved is not bound: the file changes after approval and the write runs over it",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "}{st.v, targets, views})",
				New:  "}{st.v, targets, nil})",
			},
		},
	},
	{
		Name:     "plan-abbreviated-part-hides-argument",
		Packages: []string{"."},
		Run:      "TestLongDiffAbbreviatedNotCut",
		Why:      "a diff abbreviated in the prompt still stands for its argument, so the rest of the content is shown nowhere in the prompt",
		Edits: []Edit{
			{
				File: "plan_parts_text.go",
				Old:  "\t\tif !whole {\n\t\t\tcontinue\n\t\t}\n",
				New:  "\t\t_ = whole\n",
			},
		},
	},
	{
		Name:     "form-bounded-block-unsaid",
		Packages: []string{"."},
		Run:      "TestLongWriteShownBoundedInForm",
		Why:      "a bounded form stops a long argument's lines without saying how much it left out or naming the whole text's digest",
		Edits: []Edit{
			{
				File: "plan_parts_text.go",
				Old:  "\t\t\t\tb.WriteString(blockRest(lines, i, s))\n",
				New:  "\t\t\t\t_ = i\n",
			},
		},
	},
	{
		Name:     "form-summarized-diff-claims-shown",
		Packages: []string{"."},
		Run:      "TestLongWriteShownBoundedInForm",
		Why:      "a diff too long to show, summarized as sizes and digests, still stands for its argument: the form says the content is shown in full and lists none of it",
		Edits: []Edit{
			{
				File: "plan_parts.go",
				Old:  "\t\tColumns: []string{\"text\", \"lines\", \"characters\", \"SHA-256\"},\n",
				New:  "\t\tColumns: []string{\"text\", \"lines\", \"characters\", \"SHA-256\"}, Shows: v.Shows,\n",
			},
		},
	},
	{
		Name:     "plan-backstop-off",
		Packages: []string{"."},
		Why:      "plan lines from the tool reach the human unescaped (newlines, bidi)",
		Edits: []Edit{
			{
				File: "gate_text.go",
				Old:  "\tif plainLine(s) {",
				New:  "\tif true {",
			},
		},
	},
	{
		Name:     "principal-unquoted",
		Packages: []string{"."},
		Why:      "the requesting principal is shown raw in the approval message",
		Edits: []Edit{
			{
				File: "gate_text.go",
				Old:  "return \"Requested by: \" + prompt.Quote(principal) + \"\\n\"",
				New:  "return \"Requested by: \" + principal + \"\\n\"",
			},
		},
	},
	{
		Name:     "sod-user-prefix-kept",
		Packages: []string{"./internal/identity", "./approvals"},
		Run:      "TestIdentity|TestSameIdentity|TestSelfApproval|TestWebhookRefusesRequester",
		Why:      "the identity key keeps the user: prefix: principals and approver names live in two namespaces",
		Edits: []Edit{
			{
				File: "internal/identity/identity.go",
				Old:  "\tk = strings.TrimPrefix(k, UserPrefix)\n",
				New:  "\tk = strings.ReplaceAll(k, UserPrefix, \"user-\")\n",
			},
		},
	},
	{
		Name:     "plan-secret-values-shown",
		Packages: []string{"."},
		Run:      "TestSecretsRedactedInPlans",
		Why:      "the gate does not cut secret values out of the plan: a preview that copies a password shows it to the approver, the model and the journal",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "p = redactPlan(p, k.secretsOf())",
				New:  "p = redactPlan(p, journal.Secrets{})",
			},
		},
	},
	{
		Name:     "prompt-first-20-arguments",
		Packages: []string{"."},
		Run:      "TestPaddedCallShownWholeOrRefused",
		Why:      "the approval prompt shows only the first 20 arguments: padding pushes the dangerous one out of view",
		Edits: []Edit{
			{
				File: "gate_text.go",
				Old:  "\t\tout = append(out, prompt.QuoteWhole(key)+\": \"+argumentValue(raw))\n",
				New:  "\t\tif len(out) == 20 {\n\t\t\tbreak\n\t\t}\n\t\tout = append(out, prompt.QuoteWhole(key)+\": \"+argumentValue(raw))\n",
			},
		},
	},
	{
		Name:     "policy-hash-omits-description",
		Packages: []string{"./proxy"},
		Run:      "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel",
		Why:      "a gated tool's description, title and annotations are not bound: a redefined tool keeps its approvals",
		Edits: []Edit{
			{
				File: "gate_register.go",
				Old:  "\t\tTitle:  t.Title, Description: t.Description, Annotations: t.Annotations,\n",
				New:  "",
			},
		},
	},
	{
		Name:     "grant-checked-against-stale-tool",
		Packages: []string{"./proxy"},
		Run:      "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel",
		Why:      "an approval given while the tool was redefined is checked against the old definition and runs",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "\tcase gr.Policy != g.currentPolicy(k.t.Name):\n",
				New:  "\tcase false && gr.Policy != g.currentPolicy(k.t.Name):\n",
			},
		},
	},
	{
		Name:     "outcome-journal-cancelled-ctx",
		Packages: []string{"./proxy"},
		Run:      "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel",
		Why:      "the outcome is written with the caller's cancelled context, so a cancelled call's outcome is lost",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "g.report(ctx, outcome, outcomeWriteTimeout)",
				New:  "g.opts.Journal.Append(ctx, outcome)",
			},
		},
	},
	{
		Name:     "outcome-cancel-claims-failed",
		Packages: []string{"./proxy"},
		Run:      "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel",
		Why:      "a call the caller cancelled mid-execute is journaled as failed although it may have run",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "\tif err != nil && ectx.Err() != nil {\n\t\t// The caller gave up",
				New:  "\tif false && err != nil && ectx.Err() != nil {\n\t\t// The caller gave up",
			},
		},
	},
	{
		Name:     "chanwait-refusal-journal-cancelled",
		Packages: []string{"./approvals"},
		Run:      "TestChannelCallerGoneWithdraws",
		Why:      "the refusal is journaled on the caller's cancelled context and lost",
		Edits: []Edit{
			{
				File: "audit.go",
				Old:  "\tif err := g.report(ctx, rec, journalGrace); err != nil {\n\t\tlevel := slog.LevelWarn",
				New:  "\tif err := g.opts.Journal.Append(ctx, rec); err != nil {\n\t\tlevel := slog.LevelWarn",
			},
		},
	},
	{
		Name:     "chanwait-outcome-journal-cancelled",
		Packages: []string{"."},
		Run:      "TestOutcomeJournaledAfterCallerLeft",
		Why:      "the outcome of a call whose caller left is journaled on the cancelled context and lost",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "g.report(ctx, outcome, outcomeWriteTimeout)",
				New:  "g.opts.Journal.Append(ctx, outcome)",
			},
		},
	},
	{
		Name:     "standing-irreversible-unnamed",
		Packages: []string{"."},
		Run:      "TestStandingGrantForIrreversibleOnlyWhenNamed",
		Why:      "an irreversible tool offers standing grants without being named in AllowGrantsFor",
		Edits: []Edit{
			{
				File: "gate_register.go",
				Old:  "\t\tgt.grantsNamed = !t.Irreversible || slices.Contains(g.opts.AllowGrantsFor, t.Name)",
				New:  "\t\tgt.grantsNamed = true",
			},
		},
	},
	{
		Name:     "standing-grant-on-changed-target",
		Packages: []string{"."},
		Run:      "TestStandingGrantNotMadeOnChangedTarget",
		Why:      "a grant is created although the target changed while the human decided (its scope may not be the one shown)",
		Edits: []Edit{
			{
				File: "grant_offer.go",
				Old:  "\tif r != nil || target != approvedTarget {\n\t\treturn refusal(ReasonTargetChanged, \"what the call points at changed since it was approved; preview it again\")\n\t}\n\tk.st = st",
				New:  "\tif r != nil || target == \"\" && approvedTarget == \"x\" {\n\t\treturn refusal(ReasonTargetChanged, \"what the call points at changed since it was approved; preview it again\")\n\t}\n\tk.st = st",
			},
		},
	},
	{
		Name:     "grant-binding-without-scopes",
		Packages: []string{".", "./proxy"},
		Run:      "TestStandingGrantVoidAfterScopesChange|TestChannelGrantChoiceAfterScopesChange|TestGatewayGrantScopeChangeVoidsGrant",
		Why:      "grant binding without scopes: the policy hash covers a grant's limits, not its scopes, so a reload that narrows a scope keeps the grants made under the wider one, and a decision on the old offers is applied to the new list",
		Edits: []Edit{
			{
				File: "gate_register.go",
				Old:  "\t\t\tScopes: t.Grants.ScopesBinding,\n",
				New:  "",
			},
		},
	},
	{
		Name:     "audit-metrics-label-leaks-arguments",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestFilesMetricsCountTheCalls",
		Why:      "call metrics label a series with the call's arguments (privacy, unbounded cardinality)",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "\t\tg.observe(t.Name, res, r)",
				New:  "\t\tg.observe(t.Name+fmt.Sprint(req.Params.Arguments), res, r)",
			},
		},
	},
	{
		Name:     "audit-trace-span-carries-arguments",
		Packages: []string{"."},
		Run:      "TestTraceJoinsCallersTrace",
		Why:      "the gate hands the tracer the call's arguments: agent-supplied values (and secrets) leave in traces",
		Edits: []Edit{
			{
				File: "gate_trace.go",
				Old:  "\treturn g.tracer.Call(ctx, tool, meta)",
				New:  "\treturn g.tracer.Call(ctx, tool+\" \"+string(req.Params.Arguments), meta)",
			},
		},
	},
	{
		Name:     "owned-token-field-gets-token-path",
		Packages: []string{"."},
		Run:      "TestOwnedTokenFieldHasNoTokenPath",
		Why:      "a tool whose approval_token is its own argument gets one-time tokens (which would then be swallowed instead of reaching the tool)",
		Edits: []Edit{
			{
				File: "approval_token.go",
				Old:  "\tif t.OwnsTokenField {\n\t\treturn false // approval_token is the tool's own argument\n\t}\n",
				New:  "",
			},
		},
	},
	{
		Name:     "owned-token-field-stripped",
		Packages: []string{"."},
		Run:      "TestOwnedTokenFieldIsAnArgument",
		Why:      "the gate takes the tool's own approval_token out of the call: the upstream never gets it",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "\t\ttok = nil\n\t}\n\tif err != nil {",
				New:  "\t\ttok = nil\n\t\trest, _, _ = canon.SplitMember(rest, TokenField)\n\t}\n\tif err != nil {",
			},
		},
	},
	{
		Name:     "execute-after-shutdown",
		Packages: []string{"."},
		Run:      "TestNoExecuteStartsAfterShutdownBegan",
		Why:      "Execute may start after the signal: the check right before Execute ignores that shutdown began",
		Edits: []Edit{
			{
				File: "gate_shutdown.go",
				Old:  "\tif s.began {\n\t\treturn nil, false\n\t}\n\te := &runningExec",
				New:  "\tif false {\n\t\treturn nil, false\n\t}\n\te := &runningExec",
			},
		},
	},
	{
		Name:     "shutdown-keeps-handed-out-approvals",
		Packages: []string{"."},
		Run:      "TestShutdownWithdraws",
		Why:      "tokens and MRTR request states handed out before the signal are neither spent nor journaled: they stay redeemable elsewhere",
		Edits: []Edit{
			{
				File: "gate_shutdown.go",
				Old:  "\t\tif !now.Before(p.expires) {\n\t\t\tcontinue\n\t\t}\n\t\twg.Add(1)",
				New:  "\t\tif true || !now.Before(p.expires) {\n\t\t\tcontinue\n\t\t}\n\t\twg.Add(1)",
			},
		},
	},
	{
		Name:     "resolved-state-unbound",
		Packages: []string{"."},
		Run:      "TestTypedStateBound|TestResolverDrift",
		Why:      "the resolved state is left out of the target digest: a file or note changed after approval is acted on",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "}{st.v, targets, views})",
				New:  "}{nil, targets, views})",
			},
		},
	},
	{
		Name:     "typed-arguments-undecoded",
		Packages: []string{"."},
		Run:      "TestTypedArgumentsMustDecode|TestTypedToolRuns",
		Why:      "a typed tool's arguments are never decoded: Resolve and Execute act on a zero In (an empty path names the root)",
		Edits: []Edit{
			{
				File: "gate_call_check.go",
				Old:  "if t.decode != nil {",
				New:  "if false && t.decode != nil {",
			},
		},
	},
	{
		Name:     "protocol-error-swallowed",
		Packages: []string{"."},
		Run:      "TestExecuteProtocolErrorPassedThrough",
		Why:      "a JSON-RPC error from Execute (a proxy's upstream) becomes a tool error result: the client loses its code and data",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "if errors.As(err, &k.protocolErr) {",
				New:  "if false && errors.As(err, &k.protocolErr) {",
			},
		},
	},
	{
		Name:     "approver-withdrawer-dropped",
		Packages: []string{"."},
		Run:      "TestWrappedApproverKeepsCapabilities|TestShutdownWithdraws",
		Why:      "the gate never takes the Approver's Withdrawer: requests nobody will pick up stay open for a human to approve",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "awaiter: a.Awaiter(), withdrawer: a.Withdrawer()}",
				New:  "awaiter: a.Awaiter()}",
			},
		},
	},
	{
		Name:     "gate-refusal-keeps-structured-content-under-output-schema",
		Packages: []string{"./proxy"},
		Run:      "TestTypeScriptClientsReadEveryRefusal/ts1",
		Why:      "a refusal of a tool that advertises an output schema carries structuredContent that does not follow it: TypeScript SDK 1.x clients throw -32602 and the model never reads \"declined\"",
		Edits: []Edit{
			{
				File: "gate_call.go",
				Old:  "\tif t.outSchema {\n\t\tres.StructuredContent = nil\n",
				New:  "\tif false && t.outSchema {\n\t\tres.StructuredContent = nil\n",
			},
		},
	},
	{
		Name:     "requires-user-interaction-dropped",
		Packages: []string{"."},
		Run:      "TestRequireUserInteractionMarksGatedToolsOnly",
		Why:      "Options.RequireUserInteraction is accepted but tools/list never carries the key: the operator's second lock (Claude Code's own prompt) silently is not there",
		Edits: []Edit{{
			File: "gate_register.go",
			Old:  "\tif g.opts.RequireUserInteraction {\n\t\tsdkTool.Meta",
			New:  "\tif false && g.opts.RequireUserInteraction {\n\t\tsdkTool.Meta",
		}},
	},
}
