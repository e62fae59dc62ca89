package mutants

// cardMutants break the MCP Apps approval card: which envelope decides,
// single use, and the level its approvals are journaled at.
var cardMutants = []Mutant{
	{
		Name:     "card-decision-accepts-any-handle",
		Packages: []string{"."},
		Run:      "TestCardDecisionAttacks|TestCardApproveRunsOnce",
		Why:      "the decision tool takes any pending handle of this server, the model's own included, as the card's decision",
		Edits: []Edit{{
			File: "approval_card.go",
			Old:  "\tif err != nil || gr.Mode != grantCardDecision {",
			New:  "\tif err != nil {",
		}, {
			File: "approval_card.go",
			Old:  "\tgr, r := g.openFor(ctx, k, in.Decision, grantCardDecision, ",
			New:  "\tpresented, _ := openGrant(g.ring, g.opts.Audience, in.Decision)\n\tgr, r := g.openFor(ctx, k, in.Decision, presented.Mode, ",
		}},
	},
	{
		Name:     "card-decision-reusable",
		Packages: []string{"."},
		Run:      "TestCardDecisionSingleUse|TestCardDenyRunsNothing",
		Why:      "a card's decision is checked but never spent, so the same Approve runs the call again",
		Edits: []Edit{{
			File: "approval_card.go",
			Old:  "\tgr, r := g.openFor(ctx, k, in.Decision, grantCardDecision, string(in.Approve) == \"true\")",
			New:  "\tgr, r := g.checkGrant(k, in.Decision, grantCardDecision)",
		}},
	},
	{
		Name:     "card-counted-above-client-relayed",
		Packages: []string{"."},
		Run:      "TestCardApproveRunsOnce",
		Why:      "a click in the card, which the server cannot tell from a host calling the tool by itself, is journaled as a local page's click",
		Edits: []Edit{{
			File: "approval_card.go",
			Old:  "By: \"card\", Assurance: AssuranceClientRelayed,",
			New:  "By: \"card\", Assurance: AssuranceLocalPage,",
		}},
	},
	{
		Name:     "card-outcome-in-process",
		Packages: []string{"."},
		Run:      "TestCardOutcomeOnAnyReplica",
		Why:      "the card's outcome stays in the deciding process: a handle on another replica (or after a restart) never learns that the call ran",
		Edits: []Edit{{
			File: "gate.go",
			Old:  "cards:     cardOutcomes{store: l.Outcomes()},",
			New:  "cards:     cardOutcomes{},",
		}},
	},
	{
		Name:     "card-decision-to-last-gate",
		Packages: []string{".", "./proxy"},
		Run:      "TestCardDecidedByItsOwnGate|TestGatewayCardDecidesOnTheMembersGate",
		Why:      "the server's one decision tool hands every decision to the gate registered last (as when each gate added its own tool): a gateway's other members' cards are all refused, or run on the wrong member",
		Edits: []Edit{{
			File: "approval_card_host.go",
			Old:  "\tswitch owners := cardOwners(gates, in.Decision); len(owners) {",
			New:  "\tswitch owners := []*Gate{gates[len(gates)-1].g}; len(owners) {",
		}},
	},
	{
		Name:     "card-decision-ambiguous-taken",
		Packages: []string{"."},
		Run:      "TestCardDecidedByItsOwnGate",
		Why:      "a capability that two gates of one server open (one audience, one key) goes to the first of them, which may run another gate's call",
		Edits: []Edit{{
			File: "approval_card_host.go",
			Old:  "\tcase 1:\n\t\treturn owners[0].decideCard(ctx, req)",
			New:  "\tcase 1, 2:\n\t\treturn owners[0].decideCard(ctx, req)",
		}},
	},
	{
		Name:     "card-size-unbounded",
		Packages: []string{"."},
		Run:      "TestCardRefusesPastItsLimit",
		Why:      "the card carries a view of any size: a plan past what a card carries is sent anyway, where a host may drop or cut it",
		Edits: []Edit{{
			File: "approval_card_limits.go",
			Old:  "\tif len(b) <= maxCardBytes {",
			New:  "\tif len(b) <= maxCardBytes || true {",
		}},
	},
}
