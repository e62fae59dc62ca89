// Converted from the Python catalogue (mutants/make.py) by convert-mutants;
// from now on edit it here. See docs/TESTING.md.

package mutants

// channelMutants break the approval channel: webhook, approval service, attestations, passkeys.
var channelMutants = []Mutant{
	{
		Name:     "webhook-yes-approves",
		Packages: []string{"./channel", "./approvals"},
		Run:      "TestWebhook",
		Why:      "a webhook answering \"approved\":\"yes\" (or 1, \"true\") approves",
		Edits: []Edit{
			{
				File: "channel/webhook.go",
				Old:  "\tcase \"true\":\n\t\tapproved = true",
				New:  "\tcase \"true\", `\"yes\"`, `\"true\"`, \"1\":\n\t\tapproved = true",
			},
		},
	},
	{
		Name:     "webhook-5xx-approves",
		Packages: []string{"./channel", "./approvals"},
		Run:      "TestWebhook",
		Why:      "a webhook answering HTTP 5xx counts as approved",
		Edits: []Edit{
			{
				File: "channel/webhook.go",
				Old:  "\tif resp.StatusCode < 200 || resp.StatusCode > 299 {\n",
				New:  "\tif resp.StatusCode >= 500 {\n\t\treturn approver.Decision{Approved: true}, nil\n\t}\n\tif resp.StatusCode < 200 || resp.StatusCode > 299 {\n",
			},
		},
	},
	{
		Name:     "webhook-self-approval",
		Packages: []string{"./channel", "./approvals"},
		Run:      "TestWebhook",
		Why:      "the requesting principal may approve its own request",
		Edits: []Edit{
			{
				File: "channel/webhook.go",
				Old:  "if identity.Same(a, r.Principal) {",
				New:  "if false && identity.Same(a, r.Principal) {",
			},
		},
	},
	{
		Name:     "channel-probe-unverified",
		Packages: []string{"./approvals"},
		Run:      "TestProbeChecksSecretAndURL",
		Why:      "the approval service answers a start-up probe without checking its signature: a gate with the wrong secret starts as if its channel worked",
		Edits: []Edit{
			{
				File: "approvals/probe.go",
				Old:  "s.opts.Secret, time.Now(), s.opts.Tolerance); err != nil {",
				New:  "s.opts.Secret, time.Now(), s.opts.Tolerance); false && err != nil {",
			},
		},
	},
	{
		Name:     "channel-withdraw-skips-open-request",
		Packages: []string{"./approvals"},
		Run:      "TestWithdrawOnlyWhatNeverOpenedIsSkipped",
		Why:      "a 409 (another caller waits on the request) counts as never opened: its withdrawal is skipped and the request stays approvable at the service",
		Edits: []Edit{
			{
				File: "channel/webhook.go",
				Old:  "\tcase http.StatusBadRequest, http.StatusUnauthorized,",
				New:  "\tcase http.StatusConflict, http.StatusBadRequest, http.StatusUnauthorized,",
			},
		},
	},
	{
		Name:     "sod-service-compares-raw-names",
		Packages: []string{"./approvals"},
		Run:      "TestSelfApproval",
		Why:      "the service compares approver and principal as strings again, so approver alice may approve a request of user:alice",
		Edits: []Edit{
			{
				File: "approvals/service.go",
				Old:  "\t\tif identity.Same(by, cur.Req.Principal) {",
				New:  "\t\tif strings.EqualFold(by, cur.Req.Principal) {",
			},
		},
	},
	{
		Name:     "service-host-unchecked",
		Packages: []string{"./approvals"},
		Run:      "TestHostHeaderChecked",
		Why:      "the approval service answers any Host header (DNS rebinding)",
		Edits: []Edit{
			{
				File: "approvals/service.go",
				Old:  "\tif !s.hosts[hostOnly(r.Host)] && !probePaths[r.URL.Path] {",
				New:  "\tif false && !s.hosts[hostOnly(r.Host)] && !probePaths[r.URL.Path] {",
			},
		},
	},
	{
		Name:     "service-bearer-unthrottled",
		Packages: []string{"./approvals"},
		Run:      "TestBearerGuessingThrottled",
		Why:      "the bearer API ignores the failed-attempt budget: tokens can be guessed without limit",
		Edits: []Edit{
			{
				File: "approvals/http.go",
				Old:  "\t\tif blocked, wait := s.throttle.blocked(r); blocked {\n\t\t\ttooMany(w, wait)",
				New:  "\t\tif blocked, wait := s.throttle.blocked(r); false && blocked {\n\t\t\ttooMany(w, wait)",
			},
		},
	},
	{
		Name:     "secret-compare-leaks-length",
		Packages: []string{"./approvals"},
		Run:      "TestSecretsComparedAsDigests",
		Why:      "secrets reach subtle.ConstantTimeCompare as they are, whose early return on a length mismatch reveals the secret's length",
		Edits: []Edit{
			{
				File: "internal/wire/wire.go",
				Old:  "\tda, db := sha256.Sum256(a), sha256.Sum256(b)\n\treturn CTCompare(da[:], db[:]) == 1",
				New:  "\t_, _ = sha256.Sum256(a), sha256.Sum256(b)\n\treturn CTCompare(a, b) == 1",
			},
		},
	},
	{
		Name:     "webhook-replay-keyed-on-header-text",
		Packages: []string{"./approvals"},
		Run:      "TestReplay",
		Why:      "the replay cache remembers the header text: the same signed request with ,x=1 appended is fresh and can take the gate's decision",
		Edits: []Edit{
			{
				File: "approvals/service.go",
				Old:  "fresh, err := s.st.sawSignature(ctx, replayKey, ",
				New:  "fresh, err := s.st.sawSignature(ctx, sig, ",
			},
		},
	},
	{
		Name:     "webhook-replay-before-memory-start",
		Packages: []string{"./approvals"},
		Run:      "TestReplayAfterRestart",
		Why:      "with the memory store, a request signed before a restart can be replayed after it (the replay cache started empty)",
		Edits: []Edit{
			{
				File: "approvals/service.go",
				Old:  "\t\ts.replayFloor = time.Now().Unix()",
				New:  "\t\ts.replayFloor = 0",
			},
		},
	},
	{
		Name:     "service-keeps-secrets",
		Packages: []string{"./approvals"},
		Run:      "TestServiceRedactsSecrets",
		Why:      "the approval service stores, serves and shows a careless sender's secrets as sent",
		Edits: []Edit{
			{
				File: "approvals/service.go",
				Old:  "\treturn redactRequest(req), nil\n",
				New:  "\treturn req, nil\n",
			},
		},
	},
	{
		Name:     "service-store-world-readable",
		Packages: []string{"./approvals"},
		Run:      "TestStoreFilePrivate",
		Why:      "the approval service's SQLite store is created with the default mode (0644): any local user reads the plans",
		Edits: []Edit{
			{
				File: "approvals/store_sqlite.go",
				Old:  "\tif err := privateFile(path); err != nil {\n",
				New:  "\tif err := error(nil); err != nil {\n",
			},
		},
	},
	{
		Name:     "page-hides-arguments",
		Packages: []string{"./approvals"},
		Run:      "TestBrowserPaddedPlanShowsEveryArgument",
		Why:      "the approval page shows the plan but not the arguments: a plan that names none of them hides where the call goes",
		Edits: []Edit{
			{
				File: "approvals/web/page.html",
				Old:  "    {{if .Args}}\n",
				New:  "    {{if false}}\n",
			},
		},
	},
	{
		Name:     "http-auth-any-audience",
		Packages: []string{"./cmd/mcpsafe"},
		Run:      "TestHTTPAuthRefusesBadTokens",
		Why:      "the resource server accepts a token minted for another resource (aud not checked)",
		Edits: []Edit{
			{
				File: "httpauth/httpauth.go",
				Old:  "\t\t\tClientID:             cfg.Audience,\n",
				New:  "\t\t\tSkipClientIDCheck:    true,\n",
			},
		},
	},
	{
		Name:     "chanwait-202-approves",
		Packages: []string{"./approvals"},
		Run:      "TestAcceptedIsNeverApproval",
		Why:      "a 202 (still pending) answer is parsed like a decision, so its body can approve",
		Edits: []Edit{
			{
				File: "channel/webhook.go",
				Old:  "\tif resp.StatusCode == http.StatusAccepted {",
				New:  "\tif false {",
			},
		},
	},
	{
		Name:     "chanwait-withdraw-unsigned",
		Packages: []string{"./approvals"},
		Run:      "TestWithdrawal",
		Why:      "the service accepts a withdrawal without a valid signature",
		Edits: []Edit{
			{
				File: "approvals/withdraw.go",
				Old:  "if err := channel.VerifySignature(sig, body, s.opts.Secret, now, s.opts.Tolerance); err != nil {",
				New:  "if err := channel.VerifySignature(sig, body, s.opts.Secret, now, s.opts.Tolerance); err != nil && false {",
			},
		},
	},
	{
		Name:     "chanwait-withdrawn-still-pending",
		Packages: []string{"./approvals"},
		Run:      "TestWithdrawal",
		Why:      "a withdrawn request stays pending, so an approver can still approve it",
		Edits: []Edit{
			{
				File: "approvals/withdraw.go",
				Old:  "next.Status, next.DecidedAt, next.Withdrawn = channel.StatusWithdrawn, now, m.Reason",
				New:  "next.Withdrawn = m.Reason",
			},
		},
	},
	{
		Name:     "chanwait-withdraw-any-request",
		Packages: []string{"./approvals"},
		Run:      "TestWithdrawal",
		Why:      "a withdrawal need not match the request's audience and argument digest",
		Edits: []Edit{
			{
				File: "approvals/withdraw.go",
				Old:  "if cur.Req.Audience != m.Audience || cur.Req.ArgsDigest != m.ArgsDigest {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "standing-service-unlisted-grant",
		Packages: []string{"./approvals"},
		Run:      "TestServiceGrantChoice",
		Why:      "the approval service accepts a grant choice the request did not offer",
		Edits: []Edit{
			{
				File: "approvals/service.go",
				Old:  "\tif approve && !offered(cur.Req, grant) {",
				New:  "\tif false {",
			},
		},
	},
	{
		Name:     "passwd-plaintext-accepted",
		Packages: []string{"./approvals", "./cmd/mcpsafe"},
		Run:      "TestApproversFileRefusesPlainText|TestLoadApproversFile|TestApprovalsPasswd",
		Why:      "an approvers file line holding a plain-text password is loaded as a token instead of refused",
		Edits: []Edit{
			{
				File: "approvals/auth.go",
				Old:  "\t\tif !IsPasswordHash(token) {\n\t\t\treturn nil, fmt.Errorf(",
				New:  "\t\tif !IsPasswordHash(token) {\n\t\t\tout = append(out, Approver{Name: name, Token: token})\n\t\t\tcontinue\n\t\t}\n\t\tif false {\n\t\t\treturn nil, fmt.Errorf(",
			},
		},
	},
	{
		Name:     "argon2-any-password",
		Packages: []string{"./approvals"},
		Run:      "TestPasswordHash|TestHashedApproverLogin",
		Why:      "the argon2id comparison compares nothing: any password logs in as any hashed approver",
		Edits: []Edit{
			{
				File: "approvals/password.go",
				Old:  "return subtle.ConstantTimeCompare(got, h.key) == 1",
				New:  "return subtle.ConstantTimeCompare(got[:0], h.key[:0]) == 1",
			},
		},
	},
	{
		Name:     "attestation-unchecked",
		Packages: []string{"./channel", "./approvals", "./internal/serverconf"},
		Run:      "TestSignedDecisionThroughService|TestForgedAttestationsRefused|TestApproverPublicKeyFlag",
		Why:      "a gate configured with the service's public key accepts approvals without checking their signature",
		Edits: []Edit{
			{
				File: "channel/attestation.go",
				Old:  "\tif w.serviceKey == nil {\n\t\treturn ans.Attestation, nil",
				New:  "\tif true {\n\t\treturn ans.Attestation, nil",
			},
		},
	},
	{
		Name:     "attestation-not-bound-to-call",
		Packages: []string{"./channel"},
		Run:      "TestForgedAttestationsRefused",
		Why:      "a validly signed statement is accepted for any call (the statement's id, tool, arguments are not compared)",
		Edits: []Edit{
			{
				File: "channel/attestation.go",
				Old:  "if err := st.checkApproval(r, ans.Approvers); err != nil {",
				New:  "if err := st.checkApproval(r, ans.Approvers); false && err != nil {",
			},
		},
	},
	{
		Name:     "oidc-state-not-bound-to-browser",
		Packages: []string{"./approvals"},
		Run:      "TestOIDCCallbackBoundToBrowser",
		Why:      "the SSO callback does not compare the state with the browser's cookie: an attacker's callback URL logs the victim in as the attacker",
		Edits: []Edit{
			{
				File: "approvals/oidc.go",
				Old:  "if state == \"\" || err != nil || wire.CTCompare([]byte(c.Value), []byte(state)) != 1 {",
				New:  "if state == \"\" || c == nil && err == nil {",
			},
		},
	},
	{
		Name:     "oidc-nonce-unchecked",
		Packages: []string{"./approvals"},
		Run:      "TestOIDCLogin",
		Why:      "the ID token's nonce is not compared with the sign-in's: a token minted for another sign-in is accepted",
		Edits: []Edit{
			{
				File: "approvals/oidc.go",
				Old:  "if wire.CTCompare([]byte(id.Nonce), []byte(flow.Nonce)) != 1 {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "oidc-audience-unchecked",
		Packages: []string{"./approvals"},
		Run:      "TestOIDCLogin",
		Why:      "an ID token issued to another client (aud) signs an approver in",
		Edits: []Edit{
			{
				File: "approvals/oidc.go",
				Old:  "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now})",
				New:  "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now, SkipClientIDCheck: true})",
			},
		},
	},
	{
		Name:     "oidc-expiry-unchecked",
		Packages: []string{"./approvals"},
		Run:      "TestOIDCLogin",
		Why:      "an expired ID token signs an approver in",
		Edits: []Edit{
			{
				File: "approvals/oidc.go",
				Old:  "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now})",
				New:  "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now, SkipExpiryCheck: true})",
			},
		},
	},
	{
		Name:     "oidc-issuer-unchecked",
		Packages: []string{"./approvals"},
		Run:      "TestOIDCLogin",
		Why:      "an ID token from another issuer signs an approver in",
		Edits: []Edit{
			{
				File: "approvals/oidc.go",
				Old:  "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now})",
				New:  "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now, SkipIssuerCheck: true})",
			},
		},
	},
	{
		Name:     "oidc-unverified-email",
		Packages: []string{"./approvals"},
		Run:      "TestOIDCLogin",
		Why:      "an email address the provider has not verified names an approver",
		Edits: []Edit{
			{
				File: "approvals/oidc.go",
				Old:  "if cl.Verified == nil || !*cl.Verified {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "passkey-gate-skips-user-verification",
		Packages: []string{"./approvals"},
		Run:      "TestPasskeyNeedsUserVerificationAndNotAPassword",
		Why:      "the gate accepts a passkey assertion made without user verification",
		Edits: []Edit{
			{
				File: "channel/passkey.go",
				Old:  "protocol.TopOriginImplicitVerificationMode, false, true, true, pub,",
				New:  "protocol.TopOriginImplicitVerificationMode, false, false, true, pub,",
			},
		},
	},
	{
		Name:     "passkey-challenge-ignores-id-and-targets",
		Packages: []string{"./approvals"},
		Run:      "TestPasskeyAssertionBoundToCall",
		Why:      "the passkey challenge does not cover the request id and targets: an assertion for call A approves call B",
		Edits: []Edit{
			{
				File: "channel/passkey.go",
				Old:  "b, _ := json.Marshal([]string{\"mcpsafe passkey approval v1\", id, tool, argsDigest, targetsDigest,",
				New:  "b, _ := json.Marshal([]string{\"mcpsafe passkey approval v1\", tool, argsDigest,",
			},
		},
	},
	{
		Name:     "passkey-login-approves",
		Packages: []string{"./approvals"},
		Run:      "TestPasskeyNeedsUserVerificationAndNotAPassword|TestPasskeyTwoOfM",
		Why:      "a password (or SSO) login alone approves a request that requires a passkey",
		Edits: []Edit{
			{
				File: "approvals/service.go",
				Old:  "if s.needsPasskey(&cur) && v.Passkey == nil {",
				New:  "if false && v.Passkey == nil {",
			},
		},
	},
	{
		Name:     "passkey-n-of-m-counts-one",
		Packages: []string{"./approvals"},
		Run:      "TestPasskeyTwoOfM",
		Why:      "N-of-M with passkeys is satisfied by one approver's passkey",
		Edits: []Edit{
			{
				File: "channel/passkey.go",
				Old:  "if len(ok) < need {\n\t\treturn fmt.Errorf(\"%w: %d approver(s) proved this call",
				New:  "if len(ok) < 1 {\n\t\treturn fmt.Errorf(\"%w: %d approver(s) proved this call",
			},
		},
	},
	{
		Name:     "passkey-required-unchecked-without-registry",
		Packages: []string{"./approvals"},
		Run:      "TestPasskeyRequiredFailsClosed",
		Why:      "a webhook with no passkey registry approves a request whose tool requires passkeys",
		Edits: []Edit{
			{
				File: "channel/webhook.go",
				Old:  "if r.MinAssurance >= mcpsafe.AssurancePasskey || (w.passkeys != nil && len(ans.Passkeys) > 0) {",
				New:  "if w.passkeys != nil && len(ans.Passkeys) > 0 {",
			},
		},
	},
	{
		Name:     "journal-evidence-not-bound-to-record",
		Packages: []string{"./approvals"},
		Run:      "TestJournalCarriesSignedDecision",
		Why:      "journal verify accepts a record whose signed statement is about another call",
		Edits: []Edit{
			{
				File: "channel/attestation.go",
				Old:  "\tcase st.ID != rec.Call:\n",
				New:  "\tcase false:\n",
			},
			{
				File: "channel/attestation.go",
				Old:  "\tcase st.Tool != rec.Tool || st.ArgsDigest != rec.ArgsDigest || st.Principal != rec.Principal:\n",
				New:  "\tcase false:\n",
			},
		},
	},
	{
		Name:     "journal-passkeys-unchecked",
		Packages: []string{"./approvals"},
		Run:      "TestPasskeyApprovalRuns",
		Why:      "journal verify does not re-check the passkey assertions of a passkey-level record",
		Edits: []Edit{
			{
				File: "channel/attestation.go",
				Old:  "if rec.Assurance == AssurancePasskeyName || st.Assurance == AssurancePasskeyName {",
				New:  "if false {",
			},
		},
	},
	{
		Name:     "service-ignores-unknown-assurance",
		Packages: []string{"./approvals"},
		Run:      "TestServiceRefusesPasskeyRequestsItCannotMeet",
		Why:      "the approval service ignores a min_assurance it does not know instead of refusing the request",
		Edits: []Edit{
			{
				File: "approvals/service.go",
				Old:  "\tcase req.MinAssurance != \"\" && req.MinAssurance != channel.AssurancePasskeyName:\n",
				New:  "\tcase false:\n",
			},
		},
	},
	{
		Name:     "attestation-grant-unchecked",
		Packages: []string{"./channel"},
		Run:      "TestForgedAttestationsRefused",
		Why:      "an answer may choose a standing grant the signed statement does not name",
		Edits: []Edit{
			{
				File: "channel/attestation.go",
				Old:  "if g := ans.Grant; g != st.Grant && !(g == approver.Once && st.Grant == \"\") {",
				New:  "if g := ans.Grant; false && g != st.Grant && !(g == approver.Once && st.Grant == \"\") {",
			},
		},
	},
	{
		Name:     "grant-revoker-not-kept",
		Packages: []string{"./approvals"},
		Run:      "TestServiceRevocationJournaledByGate",
		Why:      "a revocation from the approval service does not say who revoked",
		Edits: []Edit{
			{
				File: "approvals/http.go",
				Old:  "s.opts.Grants, who+\" via \"+via, func",
				New:  "s.opts.Grants, \"the approval service\", func",
			},
		},
	},
	{
		Name:     "overview-journal-summary-unescaped",
		Packages: []string{"./approvals"},
		Run:      "TestOverviewEscapesHostileJournal",
		Why:      "the record view shows a journal summary without making its control and bidi characters visible",
		Edits: []Edit{
			{
				File: "approvals/web/journal.html",
				Old:  "{{vis .Rec.Summary}}",
				New:  "{{.Rec.Summary}}",
			},
		},
	},
	{
		Name:     "overview-reason-label-raw",
		Packages: []string{"./approvals"},
		Run:      "TestOverviewEscapesHostileJournal",
		Why:      "the refusal chart shows a reason code from the journal as it is (bidi and invisible characters included)",
		Edits: []Edit{
			{
				File: "approvals/web/overview.html",
				Old:  "text-anchor=\"end\">{{vis .Label}}</text>",
				New:  "text-anchor=\"end\">{{.Label}}</text>",
			},
		},
	},
	{
		Name:     "overview-args-not-redacted-again",
		Packages: []string{"./approvals"},
		Run:      "TestRecordViewRedactsAgain",
		Why:      "the record view shows journal arguments as stored, a secret held in clear included",
		Edits: []Edit{
			{
				File: "approvals/overview.go",
				Old:  "if clean := journal.Redact(rec.Args, nil); len(clean) > 0 {",
				New:  "if clean := rec.Args; len(clean) > 0 {",
			},
		},
	},
	{
		Name:     "overview-records-without-session",
		Packages: []string{"./approvals"},
		Run:      "TestOverviewNeedsSignIn",
		Why:      "the journal record view answers without a signed-in session",
		Edits: []Edit{
			{
				File: "approvals/overview.go",
				Old:  "m.HandleFunc(\"GET /journal\", s.withSession(false, s.journalRecords))",
				New:  "m.HandleFunc(\"GET /journal\", func(w http.ResponseWriter, r *http.Request) { s.journalRecords(w, r, &session{}) })",
			},
		},
	},
}
