// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// gateChannelMutants break the gate's channel path: waiting for a human, withdrawals, assurance.
var gateChannelMutants = []Mutant{
	{
		Name:     "channel-false-approves",
		Packages: []string{"."},
		Why:      "an approver that answers Approved:false without an error lets the call run",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "case !dec.Approved:",
				New:  "case false:",
			},
		},
	},
	{
		Name:     "channel-assurance-unchecked",
		Packages: []string{"."},
		Why:      "MinAssurance is not enforced: a channel approval naming no approver satisfies a tool that requires an authenticated one",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "\tif assurance < k.t.minAssur {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s approved at",
				New:  "\tif false {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s approved at",
			},
			{
				File: "gate_call.go",
				Old:  "\tif a.Assurance < k.t.minAssur {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s requires a stronger",
				New:  "\tif false {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s requires a stronger",
			},
		},
	},
	{
		Name:     "channel-error-approves",
		Packages: []string{"."},
		Why:      "a failing approval channel counts as approval",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "\tcase err != nil:\n\t\tg.withdraw(ctx, via, req, approver.WithdrawTimedOut)\n\t\t// The error may name",
				New:  "\tcase err != nil && false:\n\t\tg.withdraw(ctx, via, req, approver.WithdrawTimedOut)\n\t\t// The error may name",
			},
			{
				File: "approval_channel.go",
				Old:  "\tcase !dec.Approved:",
				New:  "\tcase err == nil && !dec.Approved:",
			},
		},
	},
	{
		Name:     "channel-error-to-model",
		Packages: []string{"."},
		Run:      "TestChannelErrorKeptFromModel",
		Why:      "a failing channel's error (the approver URL, with a key in its query) is passed to the model",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "return nil, refusal(ReasonChannelUnavailable, \"%s could not be reached or gave no valid answer; the server's log has the details\", via.words)",
				New:  "return nil, refusal(ReasonChannelUnavailable, \"%s failed: %v\", via.words, err)",
			},
		},
	},
	{
		Name:     "http-anonymous-one-pending-bucket",
		Packages: []string{"./mcphttp"},
		Run:      "TestAnonymousClientsHaveTheirOwnPendingAllowance",
		Why:      "all unauthenticated HTTP callers share one pending allowance that one client can fill",
		Edits: []Edit{
			{
				File: "gate_pending_key.go",
				Old:  "if req == nil || req.Extra == nil {",
				New:  "if true || req == nil || req.Extra == nil {",
			},
		},
	},
	{
		Name:     "chanwait-no-progress",
		Packages: []string{"./approvals"},
		Run:      "TestChannelWaitSendsProgress",
		Why:      "no progress notifications while a human decides: clients that reset their timeout on progress give up anyway",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "\tif token == nil || k.req.Session == nil {\n\t\treturn func() {}",
				New:  "\tif true {\n\t\treturn func() {}",
			},
		},
	},
	{
		Name:     "chanwait-caller-gone-not-withdrawn",
		Packages: []string{"./approvals"},
		Run:      "TestChannelCallerGoneWithdraws",
		Why:      "a caller that cancels or disconnects leaves its request approvable at the service",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "if g.withdraw(ctx, via, req, approver.WithdrawCallerGone) {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "chanwait-handle-is-approval",
		Packages: []string{"./approvals"},
		Run:      "TestChannelAsyncHandle",
		Why:      "a pending handle runs the call without the approver's decision",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "\treturn g.waitVia(ctx, k, via, gr, handle)\n}",
				New:  "\tif _, r := g.openFor(ctx, k, handle, via.mode, true); r != nil {\n\t\treturn nil, r\n\t}\n\treturn g.execute(ctx, k, gr.Resolved, Approval{Decision: journal.ChannelApproved, Assurance: AssuranceChannel, CallID: gr.Nonce})\n}",
			},
		},
	},
	{
		Name:     "passkey-tool-offered-grants",
		Packages: []string{"."},
		Run:      "TestPasskeyToolGetsNoStandingGrants",
		Why:      "a tool that requires passkeys is offered standing grants, which later calls would run on unsigned",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "\tif k.t.minAssur >= AssurancePasskey {\n\t\t// A passkey signs one call;",
				New:  "\tif false {\n\t\t// A passkey signs one call;",
			},
		},
	},
	{
		Name:     "passkey-grant-choice-accepted",
		Packages: []string{"."},
		Run:      "TestPasskeyToolGetsNoStandingGrants",
		Why:      "a passkey approval that chooses a standing grant is accepted",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "if k.t.minAssur >= AssurancePasskey && dec.Grant != \"\" && dec.Grant != approver.Once {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "owned-token-field-pending-handle",
		Packages: []string{"."},
		Run:      "TestOwnedTokenFieldGetsNoPendingHandle",
		Why:      "a tool whose approval_token is its own argument is answered with a pending handle it can never present",
		Edits: []Edit{
			{
				File: "approval_channel.go",
				Old:  "case ra != nil && progressToken(k.req) == nil && !k.t.OwnsTokenField:",
				New:  "case ra != nil && progressToken(k.req) == nil:",
			},
		},
	},
	{
		Name:     "channel-handle-spent-when-unreachable",
		Packages: []string{"."},
		Run:      "TestChannelHandleOutlivesAnUnreachableChannel",
		Why:      "a call back with its handle that finds the channel unreachable withdraws and spends the handle: the person's approval, given while a replica was down, is lost",
		Edits: []Edit{{
			File: "approval_channel.go",
			Old:  "\tcase err != nil && k.token != nil && via.awaiter != nil && errors.Is(err, approver.ErrUnreachable)",
			New:  "\tcase false && err != nil && k.token != nil && via.awaiter != nil && errors.Is(err, approver.ErrUnreachable)",
		}},
	},
	{
		Name:     "channel-grant-not-given-back",
		Packages: []string{"."},
		Run:      "TestApprovedHandleGivenBackWhenNothingRan",
		Why:      "an approved handle whose call could not run (the journal full) keeps its grant spent: the approval is lost though nothing ran",
		Edits: []Edit{{
			File: "approval_channel.go",
			Old:  "\tif r != nil && k.token != nil && (r.Reason == ReasonJournalUnavailable || r.Reason == ReasonShuttingDown) {",
			New:  "\tif false && r != nil && k.token != nil && (r.Reason == ReasonJournalUnavailable || r.Reason == ReasonShuttingDown) {",
		}},
	},
	{
		Name:     "channel-ledger-error-given-back",
		Packages: []string{"."},
		Run:      "TestLedgerErrorOnRedeemGivesNothingBack",
		Why:      "a redemption that failed in the ledger gives the grant back, though another replica may have redeemed it and run the call: the handle runs it again",
		Edits: []Edit{{
			File: "approval_channel.go",
			Old:  "\tif _, r := g.openFor(ctx, k, sealed, via.mode, k.token != nil); r != nil {\n",
			New:  "\tif _, r := g.openFor(ctx, k, sealed, via.mode, k.token != nil); r != nil {\n\t\tif r.Reason == ReasonLedgerUnavailable && k.token != nil {\n\t\t\tr = g.giveBack(ctx, k, gr, r)\n\t\t}\n",
		}},
	},
}
