package mutants

// pageMutants break the approval page: its link and form binding, its one
// decision, its origin and host checks, and the gate's reading of it.
var pageMutants = []Mutant{
	{
		Name:     "page-client-accept-approves",
		Packages: []string{"."},
		Run:      "TestURLElicitation",
		Why:      "the client's accept of a URL elicitation (it only agreed to open the page) runs the call",
		Edits: []Edit{{
			File: "gate_call.go",
			Old:  "\t\tres, r = g.resumeVia(ctx, k, g.via(g.handleMode(k, req.Params.RequestState)), req.Params.RequestState)",
			New:  "\t\tres, r = g.execute(ctx, k, k.target, Approval{Decision: journal.ClientAccepted, Assurance: AssuranceClientRelayed, CallID: \"url-accept\"})",
		}},
	},
	{
		Name:     "page-assurance-as-channel",
		Packages: []string{"."},
		Run:      "TestURLElicitation|TestMinimumAssuranceAndThePage",
		Why:      "a click on the local page counts as an authenticated approver of the channel",
		Edits: []Edit{{
			File: "approval_channel.go",
			Old:  "\t\t\treturn AssuranceLocalPage, journal.PageApproved",
			New:  "\t\t\treturn AssuranceChannel, journal.ChannelApproved",
		}},
	},
	{
		Name:     "page-link-not-bound",
		Packages: []string{"./approvalpage"},
		Run:      "TestForgedDecisionsAreRefused",
		Why:      "any link (a guessed one) reaches a pending call's page",
		Edits: []Edit{{
			File: "approvalpage/page_http.go",
			Old:  "\treturn p.byLink[r.PathValue(\"secret\")]",
			New:  "\tfor _, e := range p.byLink {\n\t\treturn e\n\t}\n\treturn nil",
		}},
	},
	{
		Name:     "page-form-not-bound",
		Packages: []string{"./approvalpage"},
		Run:      "TestForgedDecisionsAreRefused",
		Why:      "the form token of another call's page (or any) decides this one",
		Edits: []Edit{{
			File: "approvalpage/page_http.go",
			Old:  "!sameSecret(r.PostForm.Get(\"form\"), e.form)",
			New:  "r.PostForm.Get(\"form\") == \"\"",
		}},
	},
	{
		Name:     "page-cross-site-post",
		Packages: []string{"./approvalpage"},
		Run:      "TestForgedDecisionsAreRefused",
		Why:      "a POST from another origin (or none) decides",
		Edits: []Edit{{
			File: "approvalpage/page_http.go",
			Old:  "\tif r.Header.Get(\"Origin\") != p.base ||",
			New:  "\tif false && r.Header.Get(\"Origin\") != p.base ||",
		}},
	},
	{
		Name:     "page-any-host",
		Packages: []string{"./approvalpage"},
		Run:      "TestForgedDecisionsAreRefused",
		Why:      "the page answers under any Host (DNS rebinding)",
		Edits: []Edit{{
			File: "approvalpage/page_http.go",
			Old:  "\t\tif r.Host != host {",
			New:  "\t\tif r.Host != host && false {",
		}},
	},
	{
		Name:     "page-decision-reusable",
		Packages: []string{"./approvalpage"},
		Run:      "TestApproveOnThePageApprovesThatCallOnce",
		Why:      "a second click changes the decision",
		Edits: []Edit{{
			File: "approvalpage/page.go",
			Old:  "\tcase <-e.done:\n\t\treturn false\n\tdefault:\n\t}\n\te.approved, e.withdrawn, e.proof = approved, withdrawn, proof",
			New:  "\tcase <-e.done:\n\t\te.approved = approved\n\t\treturn true\n\tdefault:\n\t}\n\te.approved, e.withdrawn, e.proof = approved, withdrawn, proof",
		}},
	},
	{
		Name:     "page-decision-delivered-twice",
		Packages: []string{"./approvalpage"},
		Run:      "TestApproveOnThePageApprovesThatCallOnce",
		Why:      "one click on the page is delivered to two waits",
		Edits: []Edit{{
			File: "approvalpage/page.go",
			Old:  "\tdelete(p.byID, r.ID) // delivered once",
			New:  "",
		}},
	},
	{
		Name:     "page-expiry-ignored",
		Packages: []string{"./approvalpage"},
		Run:      "TestExpiredLinkApprovesNothing",
		Why:      "a click after the request expired decides it",
		Edits: []Edit{{
			File: "approvalpage/page_http.go",
			Old:  "\texpired := !p.opts.Clock().Before(e.req.ExpiresAt)",
			New:  "\texpired := false",
		}},
	},
	{
		Name:     "page-passkey-click-approves",
		Packages: []string{"."},
		Run:      "TestPageWithPasskeyTakesOnlyAnAssertionOverThatCall",
		Why:      "on a page with passkeys, Approve without an assertion decides",
		Edits: []Edit{{
			File: "approvalpage/page_http.go",
			Old:  "\tif approved && p.opts.Passkeys != nil {",
			New:  "\tif false && approved && p.opts.Passkeys != nil {",
		}},
	},
	{
		Name:     "page-passkey-not-bound-to-call",
		Packages: []string{"."},
		Run:      "TestPageWithPasskeyTakesOnlyAnAssertionOverThatCall",
		Why:      "the passkey signs a challenge that names only the tool, so call A's assertion approves call B",
		Edits: []Edit{{
			File: "approvalpage/passkey.go",
			Old:  "\treturn channel.PasskeyChallenge(r.ID, r.Tool, r.ArgsDigest, channel.TargetsDigest(r.Targets), r.ExpiresAt, r.Audience)",
			New:  "\treturn channel.PasskeyChallenge(\"\", r.Tool, \"\", \"\", r.ExpiresAt.Truncate(1e18), \"\")",
		}},
	},
	{
		Name:     "page-vouches-above-its-level",
		Packages: []string{"."},
		Run:      "TestPageDecisionNeverAbovePagesLevel",
		Why:      "a page without passkeys that reports a passkey decision is taken at the passkey level",
		Edits: []Edit{{
			File: "approval_channel.go",
			Old:  " && len(dec.Approvers) > 0 && via.page.Assurance() == AssurancePasskey:",
			New:  " && len(dec.Approvers) > 0:",
		}},
	},
	{
		Name:     "page-proof-approver-unchecked",
		Packages: []string{"."},
		Run:      "TestPageWithPasskeyTakesOnlyAnAssertionOverThatCall",
		Why:      "an auditor's re-check of a page passkey approval accepts a record that names another approver than the proof",
		Edits: []Edit{{
			File: "channel/page_proof.go",
			Old:  "\tif !identity.Same(ev.Approver, rec.By) || rec.By == \"\" {",
			New:  "\tif _ = identity.Same; false {",
		}},
	},
	{
		Name:     "page-link-on-command-line",
		Packages: []string{"./approvalpage"},
		Run:      "TestPageLinkNeverOnTheOpenersCommandLine",
		Why:      "the page's link (its only secret without passkeys) goes to the browser opener as an argument, where every local user reads it in /proc/PID/cmdline",
		Edits: []Edit{{
			File: "approvalpage/open.go",
			Old:  "\treturn l, l.Open()",
			New:  "\treturn l, (&Launcher{Path: link}).Open()",
		}},
	},
	{
		Name:     "page-launcher-readable-by-others",
		Packages: []string{"./approvalpage"},
		Run:      "TestPageLinkNeverOnTheOpenersCommandLine",
		Why:      "the launcher file that carries the link is readable by every local user",
		Edits: []Edit{{
			File: "approvalpage/open.go",
			Old:  "os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)",
			New:  "os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)\n\tos.Chmod(dir, 0o755)\n\tos.Chmod(l.Path, 0o644)",
		}},
	},
	{
		Name:     "page-only-leaves-the-process",
		Packages: []string{"./files"},
		Run:      "TestPageShowsWhatADeleteWouldLose",
		Why:      "what only the local page may show (the first lines of a file to be deleted) gets a JSON form, so a channel request carries the content the model must not read",
		Edits: []Edit{{
			File: "approver/approver.go",
			Old:  "\tPageOnly *plan.PageOnly `json:\"-\"`",
			New:  "\tPageOnly *plan.PageOnly `json:\"page_only,omitempty\"`",
		}},
	},
}
