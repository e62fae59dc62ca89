// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// grantMutants break standing grants.
var grantMutants = []Mutant{
	{
		Name:     "standing-policy-change-kept",
		Packages: []string{"."},
		Run:      "TestStandingGrantVoidAfterPolicyChange",
		Why:      "a grant made under an old policy still covers calls after the policy changed",
		Edits: []Edit{
			{
				File: "grant_standing.go",
				Old:  "\t\tcase sg.Policy != k.t.policy || sg.Policy != g.currentPolicy(k.t.Name):",
				New:  "\t\tcase false:",
			},
		},
	},
	{
		Name:     "standing-scope-non-bool-fits",
		Packages: []string{"."},
		Run:      "TestStandingGrantScopeFailsClosed",
		Why:      "a scope that yields a non-bool (a string \"true\", a number) covers the call",
		Edits: []Edit{
			{
				File: "grants/celscope/celscope.go",
				Old:  "\t\t\treturn false, fmt.Errorf(\"the scope yielded %v, not a bool\", out)",
				New:  "\t\t\treturn true, nil",
			},
		},
	},
	{
		Name:     "standing-scope-error-fits",
		Packages: []string{"."},
		Run:      "TestStandingGrantScopeFailsClosed",
		Why:      "a scope whose evaluation fails covers the call",
		Edits: []Edit{
			{
				File: "grant_standing.go",
				Old:  "\t\t\tg.opts.Logger.Warn(\"grant scope failed; asking instead\", \"tool\", k.t.Name, \"grant\", sg.ID, \"err\", err)\n\t\t\tcontinue",
				New:  "\t\t\tfit = true",
			},
		},
	},
	{
		Name:     "standing-expiry-inclusive",
		Packages: []string{"."},
		Run:      "TestStandingGrantExpiryBoundary",
		Why:      "a grant still covers a call at the instant it expires",
		Edits: []Edit{
			{
				File: "grant_standing.go",
				Old:  "\t\tcase !k.now.Before(time.UnixMilli(sg.ExpiresAt)):",
				New:  "\t\tcase k.now.After(time.UnixMilli(sg.ExpiresAt)):",
			},
		},
	},
	{
		Name:     "standing-answer-case-folded",
		Packages: []string{"."},
		Run:      "TestStandingGrantAnswerMustBeListed",
		Why:      "a grant choice that only resembles a listed one (another case) creates a grant",
		Edits: []Edit{
			{
				File: "grant_offer.go",
				Old:  "\t\tif offers[i].ID == answer {",
				New:  "\t\tif strings.EqualFold(offers[i].ID, answer) {",
			},
		},
	},
	{
		Name:     "standing-client-relayed-always",
		Packages: []string{"."},
		Run:      "TestStandingGrantClientRelayedOnlyWhenAllowed",
		Why:      "a client-relayed approval creates a grant where the policy does not allow it",
		Edits: []Edit{
			{
				File: "grant_offer.go",
				Old:  "\tif assurance <= AssuranceClientRelayed && !t.Grants.ClientRelayed {",
				New:  "\tif false {",
			},
		},
	},
	{
		Name:     "grant-end-used-up-unclaimed",
		Packages: []string{"."},
		Run:      "TestGrantEndJournaledOnceAcrossReplicas/memory",
		Why:      "the last use journals used-up without claiming, so a sweep journals it again",
		Edits: []Edit{
			{
				File: "grant_standing.go",
				Old:  "\t\tif left == 0 {\n\t\t\tg.journalEnd(ctx, sg.ID)\n\t\t}",
				New:  "\t\tif left == 0 {\n\t\t\tg.opts.Journal.Append(ctx, journal.Record{Tool: sg.Tool, Principal: sg.Principal, Decision: journal.GrantEnded, Grant: sg.ID, Reason: ledger.EndUsedUp})\n\t\t}",
			},
		},
	},
	{
		Name:     "cel-cost-unbounded",
		Packages: []string{"./internal/celenv"},
		Run:      "TestCostLimitStopsAnExpensiveExpression",
		Why:      "CEL programs (grant scopes, policy rules) are planned without the cost limit: one expression over a long argument stalls the call",
		Edits: []Edit{
			{
				File: "internal/celenv/celenv.go",
				Old:  "e.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))",
				New:  "e.Program(ast, cel.InterruptCheckFrequency(100))",
			},
		},
	},
}
