#!/usr/bin/env python3
"""Regenerates the mutant patches in this directory from the current source.

Each mutant is a list of (file, old, new) edits; `old` must occur exactly once
in the file. The output is one unified diff per mutant (a/ b/ prefixes, so
`patch -p1` and `git apply` both take it), preceded by header lines that
scripts/mutation reads:

    # mutant: NAME
    # packages: ./pkg ./other      (go test package patterns)
    # run: REGEXP                  (optional -run filter)
    # why: the break it stands for

Run from the repository root: python3 mutants/make.py
"""
import difflib, os, sys

M = []
def mutant(name, packages, why, edits, run=None):
    M.append(dict(name=name, packages=packages, why=why, edits=edits, run=run))

G = "gate_call.go"
# ---- root package: approval paths -------------------------------------------
mutant("reusable-token", ".", "the ledger is never asked: a grant can be redeemed again and again",
    [(G, "ok, err := g.ledger.Redeem(ctx, gr.Nonce)", "ok, err := true, error(nil)")])
mutant("elicit-error-approves", ".", "a failing client elicitation counts as an approval",
    [(G, "res, err := k.req.Session.Elicit(ectx, params)\n",
         "res, err := k.req.Session.Elicit(ectx, params)\n\tif err != nil && !errors.Is(ectx.Err(), context.DeadlineExceeded) {\n\t\tres, err = &mcp.ElicitResult{Action: \"accept\", Content: map[string]any{\"approve\": true}}, nil\n\t}\n")])
mutant("elicit-timeout-approves", ".", "an elicitation that times out counts as an approval",
    [(G, "res, err := k.req.Session.Elicit(ectx, params)\n",
         "res, err := k.req.Session.Elicit(ectx, params)\n\tif err != nil && errors.Is(ectx.Err(), context.DeadlineExceeded) {\n\t\tres, err = &mcp.ElicitResult{Action: \"accept\", Content: map[string]any{\"approve\": true}}, nil\n\t}\n")])
mutant("cancel-approves", ".", "action cancel counts as an approval",
    [(G, "\tcase \"cancel\":\n\t\treturn refusal(ReasonCancelled, \"the user dismissed the approval request\")",
         "\tcase \"cancel\":\n\t\treturn nil")])
mutant("decline-approves-when-approve-true", ".", "decline with approve:true in the content counts as an approval",
    [(G, "\tcase \"decline\":\n", "\tcase \"decline\":\n\t\tif v, _ := res.Content[\"approve\"].(bool); v {\n\t\t\treturn nil\n\t\t}\n")])
mutant("accept-equalfold", ".", "\"accept\" compared case-insensitively (Accept, ACCEPT pass)",
    [(G, "\tswitch res.Action {\n\tcase \"accept\":", "\tswitch {\n\tcase strings.EqualFold(res.Action, \"accept\"):"),
     (G, "\tcase \"decline\":\n\t\treturn refusal(ReasonDeclined, \"the user declined", "\tcase res.Action == \"decline\":\n\t\treturn refusal(ReasonDeclined, \"the user declined"),
     (G, "\tcase \"cancel\":\n\t\treturn refusal(ReasonCancelled", "\tcase res.Action == \"cancel\":\n\t\treturn refusal(ReasonCancelled")])
mutant("accept-prefix", ".", "any action starting with \"accept\" passes (accepted, accept-all)",
    [(G, "\tswitch res.Action {\n\tcase \"accept\":", "\tswitch {\n\tcase strings.HasPrefix(res.Action, \"accept\"):"),
     (G, "\tcase \"decline\":\n\t\treturn refusal(ReasonDeclined, \"the user declined", "\tcase res.Action == \"decline\":\n\t\treturn refusal(ReasonDeclined, \"the user declined"),
     (G, "\tcase \"cancel\":\n\t\treturn refusal(ReasonCancelled", "\tcase res.Action == \"cancel\":\n\t\treturn refusal(ReasonCancelled")])
mutant("approve-truthy", ".", "approve is truthy instead of exactly the JSON boolean true (\"true\", 1, \"yes\" pass)",
    [(G, "if v, ok := res.Content[\"approve\"].(bool); ok && v {",
         "if v := res.Content[\"approve\"]; v != nil && v != false && v != \"\" && v != \"false\" {")])
mutant("approve-missing-ok", ".", "a missing approve field counts as yes",
    [(G, "if v, ok := res.Content[\"approve\"].(bool); ok && v {", "if v, ok := res.Content[\"approve\"].(bool); !ok || v {")])
mutant("extra-answers-ignored", ".", "answers beyond ours are ignored instead of refused",
    [(G, "if len(answers) != 1 {", "if len(answers) == 0 {")])
mutant("state-spent-after-answer", ".", "MRTR: the answer is read before the state is spent, so a declined state stays redeemable",
    [(G, "\tgr, r := g.openFor(ctx, k, state, grantElicit)\n\tif r != nil {\n\t\treturn nil, r\n\t}\n\tif r := approvalAnswer(answers); r != nil {\n\t\treturn nil, r\n\t}\n",
         "\tif r := approvalAnswer(answers); r != nil {\n\t\treturn nil, r\n\t}\n\tgr, r := g.openFor(ctx, k, state, grantElicit)\n\tif r != nil {\n\t\treturn nil, r\n\t}\n")])
mutant("autoapprove-error-approves", ".", "an auto-approve rule that errors or panics approves instead of asking",
    [(G, "\t\t\t\tcontinue\n\t\t\t}\n\t\t\tif hit {", "\t\t\t}\n\t\t\tif hit || err != nil {")])
mutant("autoapprove-in-elicit-mode", ".", "elicit-only mode still honours auto-approve rules",
    [(G, "if t.mode != ModeElicit && t.minAssur <= AssuranceClientRelayed {", "if t.minAssur <= AssuranceClientRelayed {")])
mutant("autoapprove-above-assurance", ".", "auto-approve also skips the human for a tool that requires channel assurance",
    [(G, "if t.mode != ModeElicit && t.minAssur <= AssuranceClientRelayed {", "if t.mode != ModeElicit {"),
     (G, "\tif a.Assurance < k.t.minAssur {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s requires a stronger",
         "\tif a.Assurance < k.t.minAssur && a.Decision != journal.PolicyAutoApproved {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s requires a stronger")])
mutant("rule-error-matches", ".", "a rule that errors or panics counts as a match (auto-approve on error)",
    [(G, "\tif err != nil {\n\t\treturn false, err\n\t}\n\treturn hit == true, nil", "\tif err != nil {\n\t\treturn true, nil\n\t}\n\treturn hit == true, nil")])
mutant("deny-error-allows", ".", "a deny rule that errors or panics lets the call through",
    [(G, "\t\tif err != nil {\n\t\t\treturn refusal(ReasonPolicyDenied, \"deny rule %q failed", "\t\tif err != nil && false {\n\t\t\treturn refusal(ReasonPolicyDenied, \"deny rule %q failed")])
mutant("allow-error-allows", ".", "an allow rule that errors counts as a match",
    [(G, "if hit, err := matchRule(ctx, rule, k.c, k.resolved); err == nil && hit {", "if hit, err := matchRule(ctx, rule, k.c, k.resolved); err != nil || hit {")])
mutant("deny-after-approval", ".", "deny rules are evaluated after the approval instead of first (a human is asked, an auto-approve rule runs the call)",
    [(G, "\tfor _, rule := range k.t.Deny {\n\t\thit, err := matchRule(ctx, rule, k.c, k.resolved)\n\t\tif err != nil {\n\t\t\treturn refusal(ReasonPolicyDenied, \"deny rule %q failed, so the call is denied: %v\", rule.Name, err)\n\t\t}",
         "\tfor _, rule := range k.t.Deny {\n\t\tif !carriesApproval(k) {\n\t\t\tbreak\n\t\t}\n\t\thit, err := matchRule(ctx, rule, k.c, k.resolved)\n\t\tif err != nil {\n\t\t\treturn refusal(ReasonPolicyDenied, \"deny rule %q failed, so the call is denied: %v\", rule.Name, err)\n\t\t}"),
     (G, "func (g *Gate) resolve(ctx context.Context, k *call) (Resolved, *Refusal) {",
         "func carriesApproval(k *call) bool {\n\treturn k.token != nil || k.req.Params.RequestState != \"\" || len(k.req.Params.InputResponses) > 0\n}\n\nfunc (g *Gate) resolve(ctx context.Context, k *call) (Resolved, *Refusal) {")])
# ---- root package: bindings ---------------------------------------------------
mutant("expiry-inclusive", ".", "expiry boundary inclusive: valid while now <= expires",
    [(G, "case !k.now.Before(gr.expires()):", "case k.now.After(gr.expires()):")])
mutant("expiry-unchecked", ".", "expiry not checked at all (the ledger still expires grants)",
    [(G, "case !k.now.Before(gr.expires()):", "case false:")])
mutant("args-digest-skipped", ".", "the argument digest is not compared: approve cache.txt, delete thesis.txt",
    [(G, "case gr.Args != k.digest:", "case false && gr.Args != k.digest:")])
mutant("args-digest-noncanonical", ".", "the digest is computed over the non-canonical JSON (nested key order, whitespace, number spelling change it)",
    [(G, "if k.digest, err = canon.Digest(canonical); err != nil {",
         "if k.digest, err = noncanonicalDigest(rest); err != nil {"),
     (G, "// checkRules resolves the call,",
         "func noncanonicalDigest(b []byte) (string, error) {\n\tsum := sha256.Sum256(b)\n\treturn hex.EncodeToString(sum[:]), nil\n}\n\n// checkRules resolves the call,")])
mutant("principal-unchecked", ".", "a grant issued to one principal is accepted from another",
    [(G, "case gr.Principal != k.c.Principal:", "case false && gr.Principal != k.c.Principal:")])
mutant("audience-unbound", ". ./internal/seal", "audience neither in the AEAD associated data nor compared after opening",
    [("internal/seal/seal.go", "\treturn append(ad, audience...)", "\treturn ad"),
     ("grant.go", "|| g.Audience != audience {", "{")])
mutant("policy-hash-unchecked", ".", "a grant survives a change of the tool's policy",
    [(G, "case gr.Policy != k.t.policy:", "case false && gr.Policy != k.t.policy:"),
     (G, "case gr.Policy != g.currentPolicy(k.t.Name):", "case false && gr.Policy != g.currentPolicy(k.t.Name):")])
mutant("policy-hash-omits-rules", ".", "the policy hash leaves out the rule names, so adding a deny rule keeps old grants valid",
    [("gate.go", "Deny: names(t.Deny), Allow: names(t.Allow), Auto: names(t.AutoApprove),", "Deny: names(nil), Allow: names(nil), Auto: names(nil),")])
mutant("tool-unchecked", ".", "a grant for one tool is accepted by another (tool neither compared nor in the policy hash)",
    [(G, "case gr.Tool != k.t.Name:", "case false && gr.Tool != k.t.Name:"),
     ("gate.go", "Tool: t.Name, Mode: t.mode,", "Mode: t.mode,")])
mutant("grant-mode-unchecked", ".", "a request state is accepted as a token and vice versa",
    [(G, "case gr.Mode != mode:", "case false && gr.Mode != mode:")])
mutant("future-issue-accepted", ".", "a grant claiming a future issue time is accepted",
    [(G, "case time.UnixMilli(gr.IssuedAt).After(k.now.Add(maxClockSkew)):", "case false:")])
mutant("resolver-drift-ignored", ".", "the re-resolved target is not compared with the approved one",
    [(G, "if target != approvedTarget {", "if false && target != approvedTarget {")])
mutant("resolver-empty-ok", ".", "a resolver that finds nothing is not a refusal",
    [(G, "if len(res) == 0 {\n\t\treturn nil, refusal(ReasonResolverFailed", "if len(res) == 0 && false {\n\t\treturn nil, refusal(ReasonResolverFailed")])
mutant("schema-unchecked", ".", "arguments are not validated against the tool's schema",
    [(G, "if err := t.schema.Validate(inst); err != nil {", "if err := t.schema.Validate(inst); err != nil && false {")])
mutant("token-in-elicit-mode", ".", "a token is redeemed for a tool in elicit-only mode",
    [(G, "if !g.tokenAllowed(k.t, k.now) || k.t.mode == ModeElicit || k.t.mode == ModeChannel {", "if !g.tokenAllowed(k.t, k.now) || k.t.mode == ModeChannel {")])
mutant("irreversible-token-without-optin", ".", "auto mode hands an irreversible tool a token when the client cannot elicit",
    [(G, "\t\tif g.tokenAllowed(t, k.now) {\n\t\t\treturn g.issueToken(ctx, k)", "\t\tif true {\n\t\t\treturn g.issueToken(ctx, k)")])
mutant("token-mode-ignores-optin", ".", "token mode issues tokens to irreversible tools that are not opted in",
    [(G, "\t\tif !g.tokenAllowed(t, k.now) {\n\t\t\treturn nil, refusal(ReasonPolicyDenied, \"%s is irreversible and the operator", "\t\tif false {\n\t\t\treturn nil, refusal(ReasonPolicyDenied, \"%s is irreversible and the operator")])
mutant("optin-prefix", ".", "the opt-in list matches by prefix (delete allows delete_note)",
    [("gate.go", "if g.opts.AllowTokenFor[i].Tool == t.Name {", "if strings.HasPrefix(t.Name, g.opts.AllowTokenFor[i].Tool) {"),
     ("gate.go", "\t\"slices\"\n", "\t\"slices\"\n\t\"strings\"\n")])
mutant("optin-wildcard", ".", "the opt-in list accepts glob patterns (delete_* allows delete_note)",
    [("gate.go", "if g.opts.AllowTokenFor[i].Tool == t.Name {", "if ok, _ := path.Match(g.opts.AllowTokenFor[i].Tool, t.Name); ok {"),
     ("gate.go", "\tcase ' ', '\\t', '\\n', '*', '?', '[', ']':", "\tcase ' ', '\\t', '\\n':"),
     ("gate.go", "\t\"log/slog\"\n", "\t\"log/slog\"\n\t\"path\"\n")])
mutant("optin-expiry-ignored", ".", "an expired opt-in still allows tokens",
    [("gate.go", "return t.optIn != nil && (t.optIn.Until.IsZero() || now.Before(t.optIn.Until))", "return t.optIn != nil")])
mutant("pending-cap-removed", ".", "no global/per-principal cap on outstanding grants",
    [("gate.go", "\tif p.byUser[principal] >= p.perUser {\n\t\treturn errTooManyPendingUser", "\tif p.byUser[principal] >= p.perUser && false {\n\t\treturn errTooManyPendingUser")])
mutant("channel-false-approves", ".", "an approver that answers Approved:false without an error lets the call run",
    [("gate_channel_wait.go", "case dec.Approved != true:", "case false:")])
mutant("channel-assurance-unchecked", ".", "MinAssurance is not enforced: a channel approval naming no approver satisfies a tool that requires an authenticated one",
    [("gate_channel_wait.go", "\tif assurance < k.t.minAssur {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"the channel approved", "\tif false {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"the channel approved"),
     (G, "\tif a.Assurance < k.t.minAssur {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s requires a stronger", "\tif false {\n\t\treturn nil, refusal(ReasonAssuranceTooLow, \"%s requires a stronger")])
mutant("channel-error-approves", ".", "a failing approval channel counts as approval",
    [("gate_channel_wait.go", "\tcase err != nil:\n\t\tg.withdraw(ctx, req, WithdrawTimedOut)\n\t\t// The error may name", "\tcase err != nil && false:\n\t\tg.withdraw(ctx, req, WithdrawTimedOut)\n\t\t// The error may name"),
     ("gate_channel_wait.go", "\tcase dec.Approved != true:", "\tcase err == nil && dec.Approved != true:")])
# ---- root package: journal and prompt backstop -------------------------------
mutant("journal-after-execute", ".", "the approval record is written after Execute instead of before",
    [(G, "\tif err := g.opts.Journal.Append(ctx, rec); err != nil {\n\t\treturn nil, refusal(ReasonJournalUnavailable, \"the audit journal could not record the approval, so nothing ran: %v\", err)\n\t}\n\tvar out *mcp.CallToolResult\n\terr := safely(func() error {\n\t\tvar err error\n\t\tout, err = k.t.Execute(ectx, k.c, a)\n\t\treturn err\n\t})\n",
         "\tvar out *mcp.CallToolResult\n\terr := safely(func() error {\n\t\tvar err error\n\t\tout, err = k.t.Execute(ectx, k.c, a)\n\t\treturn err\n\t})\n\tif err := g.opts.Journal.Append(ctx, rec); err != nil {\n\t\treturn nil, refusal(ReasonJournalUnavailable, \"the audit journal could not record the approval, so nothing ran: %v\", err)\n\t}\n")])
mutant("journal-error-ignored", ".", "a journal that cannot record the approval does not stop the call",
    [(G, "\tif err := g.opts.Journal.Append(ctx, rec); err != nil {\n\t\treturn nil, refusal(ReasonJournalUnavailable", "\tif err := g.opts.Journal.Append(ctx, rec); err != nil && false {\n\t\treturn nil, refusal(ReasonJournalUnavailable")])
mutant("gate-secret-fields-dropped", ".", "the gate does not pass the tool's SecretFields to the journal (secrets land in it)",
    [(G, "\t\tSecretFields: k.t.SecretFields,\n", "")])
mutant("plan-backstop-off", ".", "plan lines from the tool reach the human unescaped (newlines, bidi)",
    [("gate_text.go", "\tif plainLine(s) {", "\tif true {")])
mutant("principal-unquoted", ".", "the requesting principal is shown raw in the approval message",
    [("gate_text.go", "fmt.Fprintf(&b, \"\\nRequested by: %s\\n\", prompt.Quote(k.c.Principal))", "fmt.Fprintf(&b, \"\\nRequested by: %s\\n\", k.c.Principal)")])
# ---- internal/canon -------------------------------------------------------------
mutant("canon-duplicate-keys", "./internal/canon .", "duplicate object keys are accepted",
    [("internal/canon/canon.go", "if first, dup := top.keys[folded]; dup {", "if first, dup := top.keys[folded]; dup && false {")])
mutant("canon-lossy-numbers", "./internal/canon", "numbers that do not survive the IEEE round trip are accepted",
    [("internal/canon/canon.go", "\tif want != got {\n", "\tif want != got && false {\n")])
# (A mutant that accepted data after the top-level value survived: it is
# equivalent, since jcs.Transform refuses trailing data on its own. See
# docs/TESTING.md.)
mutant("canon-splitmember-unchecked", "./internal/canon .", "SplitMember (the gate's first look at the arguments) skips the strict check, so duplicate keys collapse silently",
    [("internal/canon/canon.go", "\tif _, err := Canonical(raw); err != nil {\n\t\treturn nil, nil, err\n\t}", "\tif _, err := Canonical(raw); err != nil && false {\n\t\treturn nil, nil, err\n\t}")])
mutant("canon-depth-unbounded", "./internal/canon", "nesting depth is not bounded",
    [("internal/canon/canon.go", "if len(stack) >= MaxDepth {", "if len(stack) >= MaxDepth*1000000 {")])
# ---- internal/seal --------------------------------------------------------------
mutant("seal-ignores-tag", "./internal/seal .", "Open decrypts without checking the GCM tag (AES-CTR with GCM's counter)",
    [("internal/seal/seal.go", "type key struct {\n\tid   [idLen]byte\n\taead cipher.AEAD\n}",
                               "type key struct {\n\tid    [idLen]byte\n\taead  cipher.AEAD\n\tblock cipher.Block\n}"),
     ("internal/seal/seal.go", "k.keys = append(k.keys, key{id: id, aead: aead})", "k.keys = append(k.keys, key{id: id, aead: aead, block: block})"),
     ("internal/seal/seal.go", "\t\tif err != nil {\n\t\t\treturn nil, ErrInvalid\n\t\t}\n\t\tif plain == nil {",
                               "\t\tif err != nil {\n\t\t\tiv := make([]byte, 16)\n\t\t\tcopy(iv, raw[1+idLen:headerLen])\n\t\t\tiv[15] = 2\n\t\t\tct := raw[headerLen : len(raw)-tagLen]\n\t\t\tplain = make([]byte, len(ct))\n\t\t\tcipher.NewCTR(key.block, iv).XORKeyStream(plain, ct)\n\t\t}\n\t\tif plain == nil {")])
mutant("seal-noncanonical-base64", "./internal/seal", "Open accepts non-canonical base64 (padding, altered trailing bits, line breaks)",
    [("internal/seal/seal.go", "var b64 = base64.RawURLEncoding.Strict()", "var b64 = base64.RawURLEncoding"),
     ("internal/seal/seal.go", "if b64.EncodeToString(raw) != sealed {", "if false {")])
mutant("seal-weak-key", "./internal/seal", "an all-zero key is accepted",
    [("internal/seal/seal.go", "if subtle.ConstantTimeCompare(raw, make([]byte, KeySize)) == 1 {", "if subtle.ConstantTimeCompare(raw, make([]byte, KeySize)) == 2 {")])
mutant("seal-version-unchecked", "./internal/seal", "the format version byte is not checked",
    [("internal/seal/seal.go", "\tif raw[0] != version {\n", "\tif raw[0] != version && false {\n")])
# ---- prompt -----------------------------------------------------------------------
mutant("prompt-keeps-bidi", "./prompt .", "bidi overrides and isolates pass through unescaped",
    [("prompt/prompt.go", "func hidden(r rune) bool {\n", "func hidden(r rune) bool {\n\tif r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {\n\t\treturn false\n\t}\n")])
mutant("prompt-keeps-zero-width", "./prompt", "zero-width characters pass through unescaped",
    [("prompt/prompt.go", "func hidden(r rune) bool {\n", "func hidden(r rune) bool {\n\tif r >= 0x200b && r <= 0x200d || r == 0x2060 || r == 0xfeff {\n\t\treturn false\n\t}\n")])
mutant("prompt-keeps-newlines", "./prompt .", "newlines pass through unescaped",
    [("prompt/prompt.go", "\tcase '\\n':\n\t\treturn esc(`\\n`)", "\tcase '\\n':\n\t\treturn lit(\"\\n\")")])
mutant("prompt-double-space", "./prompt", "a run of spaces is shown as spaces (\"a  b\" looks like \"a b\")",
    [("prompt/prompt.go", "if i == 0 || i+size == len(s) || e.prev == ' ' {", "if i == 0 || i+size == len(s) {")])
mutant("prompt-truncation-no-hash", "./prompt", "a cut value carries no hash, so two long values with equal ends look the same",
    [("prompt/prompt.go", "fmt.Fprintf(&b, `\" (%d chars, sha256:%s)`, utf8.RuneCountInString(s), hex.EncodeToString(sum[:8]))",
                          "_ = hex.EncodeToString(sum[:8])\n\t\tfmt.Fprintf(&b, `\" (%d chars)`, utf8.RuneCountInString(s))")])
mutant("prompt-no-mixed-script-flag", "./prompt", "mixed-script values are not flagged",
    [("prompt/prompt.go", "if scripts := MixedScript(s); scripts != nil {", "if scripts := MixedScript(s); scripts != nil && false {")])
# ---- journal ----------------------------------------------------------------------
mutant("journal-no-fsync", "./journal", "the journal writes but never fsyncs",
    [("journal/journal.go", "} else if serr := j.opts.sync(j.f); serr != nil {", "} else if serr := error(nil); serr != nil {")])
mutant("journal-redaction-off", "./journal .", "arguments reach the journal file unredacted",
    [("journal/journal.go", "\tr.Args = Redact(r.Args, r.SecretFields)\n", "")])
mutant("journal-extra-secret-fields-ignored", "./journal", "a tool's SecretFields are not redacted",
    [("journal/redact.go", "\t\tif strings.EqualFold(name, e) {", "\t\tif false && strings.EqualFold(name, e) {")])
mutant("journal-token-kept", "./journal", "the value of a field named like a token (approval_token included) is kept in the journal's argument copy",
    [("journal/redact.go", "\"password\", \"passwd\", \"passphrase\", \"secret\", \"token\",", "\"password\", \"passwd\", \"passphrase\", \"secret\", \"token_never_matches\",")])
mutant("journal-chain-unlinked", "./journal", "records are not linked to their predecessor (prev hash left empty)",
    [("journal/journal.go", "\t\tsum := sha256.Sum256(line)\n\t\tprev = hex.EncodeToString(sum[:])", "\t\tsum := sha256.Sum256(line)\n\t\tprev = hex.EncodeToString(sum[:0])")])
# ---- ledger -----------------------------------------------------------------------
mutant("ledger-memory-read-then-delete", "./ledger", "memory ledger redeems with a read, an unlock and a later delete (racy)",
    [("ledger/memory.go", "\texpires, ok := m.grants[nonce]\n\tif !ok {\n\t\treturn false, nil\n\t}\n\tdelete(m.grants, nonce)\n",
                          "\texpires, ok := m.grants[nonce]\n\tm.mu.Unlock()\n\tif !ok {\n\t\tm.mu.Lock()\n\t\treturn false, nil\n\t}\n\truntime.Gosched()\n\tm.mu.Lock()\n\tdelete(m.grants, nonce)\n"),
     ("ledger/memory.go", "\t\"fmt\"\n", "\t\"fmt\"\n\t\"runtime\"\n")], run="TestConformance")
mutant("ledger-memory-ignores-expiry", "./ledger", "memory ledger redeems expired grants",
    [("ledger/memory.go", "\treturn now.Before(expires), nil\n}", "\treturn true || now.Before(expires), nil\n}")], run="TestConformance")
mutant("ledger-redis-get-then-del", "./ledger/redis", "redis ledger redeems with GET then DEL (racy) instead of GETDEL",
    [("ledger/redis/redis.go", "\tv, err := r.client.GetDel(ctx, r.prefix+nonce).Result()\n",
                         "\tv, err := r.client.Get(ctx, r.prefix+nonce).Result()\n\tif err == nil {\n\t\tr.client.Del(ctx, r.prefix+nonce)\n\t}\n")], run="TestConformance")
mutant("ledger-redis-foreign-value-approves", "./ledger/redis", "redis ledger approves a value that is not its marker",
    [("ledger/redis/redis.go", "\texp, err := parseRedisValue(v)\n\tif err != nil {\n\t\treturn false, ledger.Unavailable(\"redis\", \"redeem\", err)\n\t}",
                         "\texp, err := parseRedisValue(v)\n\tif err != nil {\n\t\treturn true, nil\n\t}")], run="TestRedisForeignValuesNeverApprove|TestConformance")
# ---- safefs -----------------------------------------------------------------------
mutant("safefs-recheck-skipped", "./safefs", "Remove does not compare the file with what was approved",
    [("safefs/fs_linux.go", "\t\tif d := got.Diff(want); d != nil {", "\t\tif d := got.Diff(want); d != nil && false {")], run="TestRemove|TestMove")
# (Removing the lastLook call from Remove survives: no test can reach the
# window between verify and lastLook without a hook there. lastLook itself is
# tested directly; see docs/TESTING.md.)
mutant("safefs-lastlook-blind", "./safefs", "the last look before the rename checks nothing (a late write or an inode swap goes unnoticed)",
    [("safefs/fs_linux.go", "func lastLook(t *target, fd int, st *unix.Stat_t) error {\n", "func lastLook(t *target, fd int, st *unix.Stat_t) error {\n\tif true {\n\t\treturn nil\n\t}\n")])
mutant("safefs-follows-symlinks", "./safefs", "lookups follow symlinks (no RESOLVE_NO_SYMLINKS, no AT_SYMLINK_NOFOLLOW, no O_NOFOLLOW)",
    [("safefs/fs_linux.go", "const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS", "const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS"),
     ("safefs/fs_linux.go", "err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)", "err := unix.Fstatat(dirfd, name, st, 0)")])
mutant("safefs-swap-not-put-back", "./safefs", "Remove unlinks whatever was renamed aside, even a swapped-in entry",
    [("safefs/fs_linux.go", "if err := fstatat(t.parent, tmp, &ent); err != nil || ent.Dev != st.Dev || ent.Ino != st.Ino {", "if err := fstatat(t.parent, tmp, &ent); err != nil {")])
# ---- files (the MCP file tools) ------------------------------------------------
mutant("files-delete-without-recheck", "./files", "delete_file removes by path (os.Remove) instead of safefs.Remove with the approved Info",
    [("files/files.go", "if err := t.fs.Remove(info.Path, info); err != nil {", "if err := os.Remove(info.Path); err != nil {"),
     ("files/files.go", "\t\"path/filepath\"\n", "\t\"os\"\n\t\"path/filepath\"\n")])
# ---- channel (webhook approver) ------------------------------------------------
mutant("webhook-yes-approves", "./channel", "a webhook answering \"approved\":\"yes\" (or 1, \"true\") approves",
    [("channel/webhook.go", "\tcase \"true\":\n\t\tapproved = true", "\tcase \"true\", `\"yes\"`, `\"true\"`, \"1\":\n\t\tapproved = true")], run="TestWebhook")
mutant("webhook-5xx-approves", "./channel", "a webhook answering HTTP 5xx counts as approved",
    [("channel/webhook.go", "\tif resp.StatusCode < 200 || resp.StatusCode > 299 {\n", "\tif resp.StatusCode >= 500 {\n\t\treturn mcpsafe.ApprovalDecision{Approved: true}, nil\n\t}\n\tif resp.StatusCode < 200 || resp.StatusCode > 299 {\n")], run="TestWebhook")
mutant("webhook-self-approval", "./channel", "the requesting principal may approve its own request",
    [("channel/webhook.go", "if mcpsafe.SameIdentity(a, r.Principal) {", "if false && mcpsafe.SameIdentity(a, r.Principal) {")], run="TestWebhook")

# ---- proxy (policy file and upstream tool mirroring) ----------------------------
PR = "TestBadPolicies|TestAutoApproveExactTrue|TestDefaultPolicy|TestDenyAllowRules|TestGateReadOnlyAndElicitMode"
mutant("proxy-unknown-policy-keys", "./proxy", "the policy file accepts unknown keys (a typo such as auto_aprove silently does nothing)",
    [("proxy/policy.go", "\tdec.KnownFields(true)\n\tif err := dec.Decode(&f); err != nil {", "\tif err := dec.Decode(&f); err != nil {")], run=PR)
mutant("proxy-rule-truthy", "./proxy", "a CEL rule yielding a non-bool (\"true\", 1) counts as a match when it looks true",
    [("proxy/policy.go", "\t\tb, ok := v.(types.Bool)\n\t\tif !ok {\n", "\t\tb, ok := v.(types.Bool)\n\t\tif !ok && fmt.Sprint(v.Value()) != \"\" && fmt.Sprint(v.Value()) != \"false\" && fmt.Sprint(v.Value()) != \"<nil>\" && fmt.Sprint(v.Value()) != \"0\" {\n\t\t\treturn true, nil\n\t\t}\n\t\tif !ok {\n")], run=PR)
mutant("proxy-missing-destructive-hint-reversible", "./proxy", "an upstream tool without destructiveHint is treated as reversible (gets tokens)",
    [("proxy/proxy.go", "\treturn a == nil || a.DestructiveHint == nil || *a.DestructiveHint\n", "\treturn a != nil && a.DestructiveHint != nil && *a.DestructiveHint\n")], run=PR)
mutant("proxy-gate-only-destructive", "./proxy", "only tools with destructiveHint are gated; a tool that is neither read-only nor destructive passes ungated",
    [("proxy/proxy.go", "\treturn (!readOnly(t) && !s.pol().trustsUpstreamGate(t)) || (tp != nil && tp.hasSettings())", "\treturn (irreversible(t, tp) && !s.pol().trustsUpstreamGate(t)) || (tp != nil && tp.hasSettings())")], run=PR)

# ---- h-sod: separation of duties, approval service hardening, webhook replay (issue 11) --
mutant("sod-service-compares-raw-names", "./channel", "the service compares approver and principal as strings again, so approver alice may approve a request of user:alice",
    [("channel/service.go", "\t\tif mcpsafe.SameIdentity(by, cur.Req.Principal) {", "\t\tif strings.EqualFold(by, cur.Req.Principal) {")], run="TestSelfApproval")
mutant("sod-user-prefix-kept", ". ./channel", "the identity key keeps the user: prefix: principals and approver names live in two namespaces",
    [("identity.go", "\tk = strings.TrimPrefix(k, UserPrefix)\n", "\tk = strings.ReplaceAll(k, UserPrefix, \"user-\")\n")], run="TestIdentity|TestSameIdentity|TestSelfApproval|TestWebhookRefusesRequester")
mutant("service-host-unchecked", "./channel", "the approval service answers any Host header (DNS rebinding)",
    [("channel/service.go", "\tif !s.hosts[hostOnly(r.Host)] {", "\tif false && !s.hosts[hostOnly(r.Host)] {")], run="TestHostHeaderChecked")
mutant("service-bearer-unthrottled", "./channel", "the bearer API ignores the failed-attempt budget: tokens can be guessed without limit",
    [("channel/http.go", "\t\tif blocked, wait := s.throttle.blocked(r); blocked {\n\t\t\ttooMany(w, wait)", "\t\tif blocked, wait := s.throttle.blocked(r); false && blocked {\n\t\t\ttooMany(w, wait)")], run="TestBearerGuessingThrottled")
mutant("secret-compare-leaks-length", "./channel", "secrets reach subtle.ConstantTimeCompare as they are, whose early return on a length mismatch reveals the secret's length",
    [("channel/guard.go", "\tda, db := sha256.Sum256(a), sha256.Sum256(b)\n\treturn ctCompare(da[:], db[:]) == 1", "\t_, _ = sha256.Sum256(a), sha256.Sum256(b)\n\treturn ctCompare(a, b) == 1")], run="TestSecretsComparedAsDigests")
mutant("webhook-replay-keyed-on-header-text", "./channel", "the replay cache remembers the header text: the same signed request with ,x=1 appended is fresh and can take the gate's decision",
    [("channel/service.go", "fresh, err := s.st.sawSignature(replayKey, ", "fresh, err := s.st.sawSignature(sig, ")], run="TestReplay")
mutant("webhook-replay-before-memory-start", "./channel", "with the memory store, a request signed before a restart can be replayed after it (the replay cache started empty)",
    [("channel/service.go", "\t\ts.replayFloor = time.Now().Unix()", "\t\ts.replayFloor = 0")], run="TestReplayAfterRestart")
# ---- h-plans: secrets in plans, plans that hide arguments (issue 11, classes 3 and 4) ----
mutant("plan-secret-values-shown", ".", "the gate does not cut secret values out of the plan: a preview that copies a password shows it to the approver, the model and the journal",
    [(G, "return redactPlan(plan, journal.FindSecrets(c.Arguments, t.SecretFields)), hex.EncodeToString(sum[:]), nil",
         "return plan, hex.EncodeToString(sum[:]), nil")], run="TestSecretsRedactedInPlans")
mutant("channel-error-to-model", ".", "a failing channel's error (the approver URL, with a key in its query) is passed to the model",
    [("gate_channel_wait.go", "return nil, refusal(ReasonChannelUnavailable, \"the approval channel could not be reached or gave no valid answer; the server's log has the details\")",
         "return nil, refusal(ReasonChannelUnavailable, \"the approval channel failed: %v\", err)")], run="TestChannelErrorKeptFromModel")
mutant("prompt-first-20-arguments", ".", "the approval prompt shows only the first 20 arguments: padding pushes the dangerous one out of view",
    [("gate_text.go", "\t\tout = append(out, prompt.QuoteWhole(key)+\": \"+argumentValue(raw))\n",
      "\t\tif len(out) == 20 {\n\t\t\tbreak\n\t\t}\n\t\tout = append(out, prompt.QuoteWhole(key)+\": \"+argumentValue(raw))\n")], run="TestPaddedCallShownWholeOrRefused")
mutant("service-keeps-secrets", "./channel", "the approval service stores, serves and shows a careless sender's secrets as sent",
    [("channel/service.go", "\treturn redactRequest(req), nil\n", "\treturn req, nil\n")], run="TestServiceRedactsSecrets")
mutant("service-store-world-readable", "./channel", "the approval service's SQLite store is created with the default mode (0644): any local user reads the plans",
    [("channel/store.go", "\tif err := privateFile(path); err != nil {\n", "\tif err := error(nil); err != nil {\n")], run="TestStoreFilePrivate")
mutant("page-hides-arguments", "./channel", "the approval page shows the plan but not the arguments: a plan that names none of them hides where the call goes",
    [("channel/web/page.html", "    {{if .Args}}\n", "    {{if false}}\n")], run="TestBrowserPaddedPlanShowsEveryArgument")
mutant("proxy-preview-raw-arguments", "./proxy", "a policy's preview template sees the raw arguments and can show part of a password",
    [("proxy/policy.go", "\treturn journal.Redact(c.Arguments, extra)\n", "\t_, _ = extra, journal.Redact\n\treturn c.Arguments\n")], run="TestPreviewTemplateRedactsSecrets")
# ---- h-args (issue 11: case-folded keys, files content oracle, journal growth) ----
mutant("canon-folded-keys-unchecked", "./internal/canon . ./proxy",
    "keys equal under case folding ({\"source\":…,\"ſource\":…}) pass canon: rules read one key, encoding/json in Execute the other",
    [("internal/canon/canon.go", "\t\t\tfolded := FoldKey(key)\n", "\t\t\tfolded := key\n")], run="Folded")
mutant("canon-token-variant-passes", "./internal/canon .",
    "a case variant of approval_token (Approval_Token) is passed on as an ordinary argument instead of refused",
    [("internal/canon/canon.go", "\t\tif k != name && FoldKey(k) == FoldKey(name) {", "\t\tif false && k != name && FoldKey(k) == FoldKey(name) {")],
    run="SpellingVariant")
mutant("files-plan-shows-content-digest", "./files ./cmd/mcpsafe",
    "the plan's content fingerprint is a plain SHA-256 prefix: the model can confirm guesses of a file it cannot read",
    [("files/files.go", "\treturn hex.EncodeToString(m.Sum(nil)[:6])\n", "\treturn hex.EncodeToString(m.Sum(nil)[:0]) + i.SHA256[:12]\n")], run="ContentOracle")
mutant("journal-resume-keeps-partial-line", "./journal",
    "after a failed write (full disk) the partial line is left in the file, so the resumed chain is broken",
    [("journal/journal.go", "\tif fi.Size() > j.size {\n", "\tif fi.Size() > j.size && false {\n")])
mutant("journal-resume-without-repair", "./journal",
    "writing resumes after an outage without re-checking the file's end, so a chain the journal cannot vouch for is extended",
    [("journal/journal.go", "\t\tif err := j.repair(); err != nil {\n\t\t\terr = fmt.Errorf(\"journal: unusable until", "\t\tif err := error(nil); err != nil {\n\t\t\terr = fmt.Errorf(\"journal: unusable until")])
mutant("journal-refusals-uncapped", "./journal",
    "refused calls grow the journal past its size limit",
    [("journal/journal.go", "\t\tif refusalClass(r.rec.Decision) && j.size+", "\t\tif false && refusalClass(r.rec.Decision) && j.size+")])
# ---- h-http: HTTP without identity, resource exhaustion (HTTP) --------------
SH = "serverconf/http.go"
mutant("http-nonloopback-no-auth", "./cmd/mcpsafe", "files/proxy --http serve a non-loopback address without authentication (every caller is anonymous)",
    [(SH, "if h.Addr != \"\" && h.Auth.Issuer == \"\" && !channel.IsLoopbackAddr(h.Addr) {", "if false && h.Addr != \"\" && !channel.IsLoopbackAddr(h.Addr) {")],
    run="TestHTTPNonLoopbackNeedsAuth")
mutant("http-auth-any-audience", "./cmd/mcpsafe", "the resource server accepts a token minted for another resource (aud not checked)",
    [("httpauth/httpauth.go", "\t\t\tClientID:             cfg.Audience,\n", "\t\t\tSkipClientIDCheck:    true,\n")],
    run="TestHTTPAuthRefusesBadTokens")
mutant("http-body-no-deadline", "./serverconf", "a request body may trickle in forever (slowloris holds connections)",
    [(SH, "\t\t\t_ = rc.SetReadDeadline(time.Now().Add(timeout))\n", "")],
    run="TestLimitBodiesCutsOffSlowBody")
mutant("http-sessions-uncapped-per-client", "./serverconf", "one client may open stateful sessions until the server is full",
    [(SH, "if l.byClient[client] >= l.perClient {", "if false {")],
    run="TestSessionCaps")
mutant("http-sessions-never-idle", "./serverconf", "idle stateful sessions are never closed",
    [(SH, "\t\t\tSessionTimeout:      h.SessionIdle,\n", "")],
    run="TestIdleSessionsExpire")
mutant("http-anonymous-one-pending-bucket", "./serverconf", "all unauthenticated HTTP callers share one pending allowance that one client can fill",
    [("gate_pending_key.go", "if req == nil || req.Extra == nil {", "if true || req == nil || req.Extra == nil {")],
    run="TestAnonymousClientsHaveTheirOwnPendingAllowance")
# ---- h-proxyid: proxy identity and rug pulls (issue 11, class 8) ----------------
PI = "TestDefaultAudience|TestGrantsBoundToUpstream|TestSharedLedgerNeedsAudience|TestPlanNamesServer|TestRugPull|TestUpstreamTextSanitized|TestOutcomeJournaledAfterCancel"
mutant("proxy-audience-constant", "./proxy", "the default audience digests nothing but the label, so proxies in front of different servers run alike share it",
    [("proxy/identity.go", "\traw, _ := json.Marshal(id)\n", "\traw, _ := json.Marshal(nil)\n")], run=PI)
mutant("proxy-shared-ledger-default-audience", "./proxy", "a shared ledger starts with the derived default audience (replicas silently disagree, or unrelated proxies collide)",
    [("proxy/identity.go", "\treturn scheme != \"\" && scheme != \"memory\"", "\treturn false")], run=PI)
mutant("proxy-plan-unnamed-server", "./proxy", "plans do not say which upstream server the call goes to",
    [("proxy/proxy.go", "\t\t\tDetails: []string{s.serverLine},\n", "")], run=PI)
mutant("proxy-rugpull-ungates", "./proxy", "a gated tool that upstream re-announces as read-only passes through ungated",
    [("proxy/proxy.go", "\t\tgated := s.sticky.gate(name, s.gated(t))\n", "\t\tgated := s.gated(t)\n")], run=PI)
mutant("proxy-rugpull-reversible", "./proxy", "an irreversible tool that upstream re-announces with destructiveHint:false becomes reversible (tokens)",
    [("proxy/rugpull.go", "\tif now {\n\t\tk.irreversible[name] = true\n\t}\n\treturn k.irreversible[name]", "\treturn now")], run=PI)
mutant("policy-hash-omits-description", "./proxy", "a gated tool's description, title and annotations are not bound: a redefined tool keeps its approvals",
    [("gate.go", "\t\tTitle:  t.Title, Description: t.Description, Annotations: t.Annotations,\n", "")], run=PI)
mutant("grant-checked-against-stale-tool", "./proxy", "an approval given while the tool was redefined is checked against the old definition and runs",
    [(G, "\tcase gr.Policy != g.currentPolicy(k.t.Name):\n", "\tcase false && gr.Policy != g.currentPolicy(k.t.Name):\n")], run=PI)
mutant("proxy-upstream-text-raw", "./proxy", "upstream tool names, titles and descriptions reach people unsanitized",
    [("proxy/rugpull.go", "func screenTool(t *mcp.Tool) (*mcp.Tool, error) {\n", "func screenTool(t *mcp.Tool) (*mcp.Tool, error) {\n\tif t != nil {\n\t\treturn t, nil\n\t}\n")], run=PI)
mutant("outcome-journal-cancelled-ctx", "./proxy", "the outcome is written with the caller's cancelled context, so a cancelled call's outcome is lost",
    [(G, "context.WithTimeout(context.WithoutCancel(ctx), outcomeWriteTimeout)", "context.WithTimeout(ctx, outcomeWriteTimeout)")], run=PI)
mutant("outcome-cancel-claims-failed", "./proxy", "a call the caller cancelled mid-execute is journaled as failed although it may have run",
    [(G, "\tif err != nil && ectx.Err() != nil {\n\t\t// The caller gave up", "\tif false && err != nil && ectx.Err() != nil {\n\t\t// The caller gave up")], run=PI)
# --- h-relay (issue 12): the proxy's continuation of a gated call whose upstream asks for input ---
mutant("relay-continuation-ignores-arguments", "./proxy", "a continuation issued for one call's arguments carries another call upstream without approval",
    [("proxy/continuation.go", "\tcase k.Digest != digest:\n", "\tcase k.Digest != digest && false:\n")], run="TestGatedContinuation")
mutant("fastlane-case-variant-keys", "./proxy", "a tools/call naming a gated tool through a case-variant key takes the ungated fast lane",
    [("proxy/fastlane.go", "\t\t\tif strings.EqualFold(k, key) {\n", "\t\t\tif k == key {\n")], run="TestFastLanePeek|TestFastLaneFilesystem")
# ---- h-chanwait: waiting for a human in channel mode (issue 17, broken 1) -------
CW = "gate_channel_wait.go"
CWD = "channel/withdraw.go"
mutant("chanwait-no-progress", "./channel", "no progress notifications while a human decides: clients that reset their timeout on progress give up anyway",
    [(CW, "\tif token == nil || k.req.Session == nil {\n\t\treturn func() {}", "\tif true {\n\t\treturn func() {}")], run="TestChannelWaitSendsProgress")
mutant("chanwait-caller-gone-not-withdrawn", "./channel", "a caller that cancels or disconnects leaves its request approvable at the service",
    [(CW, "if g.withdraw(ctx, req, WithdrawCallerGone) {", "if false {")], run="TestChannelCallerGoneWithdraws")
mutant("chanwait-refusal-journal-cancelled", "./channel", "the refusal is journaled on the caller's cancelled context and lost",
    [(G, "\tif err := g.opts.Journal.Append(jctx, rec); err != nil {", "\t_ = jctx\n\tif err := g.opts.Journal.Append(ctx, rec); err != nil {")], run="TestChannelCallerGoneWithdraws")
mutant("chanwait-handle-is-approval", "./channel", "a pending handle runs the call without the approver's decision",
    [(CW, "\treturn g.waitChannel(ctx, k, gr, *k.token)\n}",
          "\tif _, r := g.openFor(ctx, k, *k.token, grantChannel); r != nil {\n\t\treturn nil, r\n\t}\n\treturn g.execute(ctx, k, gr.Resolved, Approval{Decision: journal.ChannelApproved, Assurance: AssuranceChannel, CallID: gr.Nonce})\n}")], run="TestChannelAsyncHandle")
mutant("chanwait-202-approves", "./channel", "a 202 (still pending) answer is parsed like a decision, so its body can approve",
    [("channel/webhook.go", "\tif resp.StatusCode == http.StatusAccepted {", "\tif false {")], run="TestAcceptedIsNeverApproval")
mutant("chanwait-withdraw-unsigned", "./channel", "the service accepts a withdrawal without a valid signature",
    [(CWD, "if err := VerifySignature(sig, body, s.opts.Secret, now, s.opts.Tolerance); err != nil {", "if err := VerifySignature(sig, body, s.opts.Secret, now, s.opts.Tolerance); err != nil && false {")], run="TestWithdrawal")
mutant("chanwait-withdrawn-still-pending", "./channel", "a withdrawn request stays pending, so an approver can still approve it",
    [(CWD, "next.Status, next.DecidedAt, next.Withdrawn = StatusWithdrawn, now, m.Reason", "next.Withdrawn = m.Reason")], run="TestWithdrawal")
mutant("chanwait-withdraw-any-request", "./channel", "a withdrawal need not match the request's audience and argument digest",
    [(CWD, "if e.rec.Req.Audience != m.Audience || e.rec.Req.ArgsDigest != m.ArgsDigest {", "if false {")], run="TestWithdrawal")
mutant("chanwait-timeout-over-ttl", "./serverconf", "--approver-timeout longer than --ttl is accepted and silently cut to --ttl",
    [("serverconf/serverconf.go", "\tcase cfg.ApproverTimeout > ttl:", "\tcase false:")], run="TestChannelTimesFromFlags")
mutant("chanwait-outcome-journal-cancelled", ".", "the outcome of a call whose caller left is journaled on the cancelled context and lost",
    [(G, "\tif jerr := g.opts.Journal.Append(jctx, outcome); jerr != nil {", "\t_ = jctx\n\tif jerr := g.opts.Journal.Append(ctx, outcome); jerr != nil {")], run="TestOutcomeJournaledAfterCallerLeft")
mutant("chanwait-http-cancel-not-propagated", "./cmd/mcpsafe", "over stateless --http a client that drops its request is not noticed: its channel request stays approvable",
    [("serverconf/http.go", "\t\t\tPropagateRequestCancellation: true,\n", "")], run="TestHTTPChannelCallerGone")

# ---- h-newuser: journal head file (issue 17, Broken 6) -----------------------
mutant("journal-head-hash-unchecked", "./journal ./cmd/mcpsafe", "an edit to the last journal line is not compared with the head file: a changed last record verifies intact",
    [("journal/set.go", "if s.head != nil && rec.Seq == s.head.Seq && h != s.head.Hash {", "if s.head != nil && rec.Seq == s.head.Seq && h != s.head.Hash && false {")],
    run="TestHead|TestJournalTailEdits")
mutant("journal-head-shortened-ok", "./journal ./cmd/mcpsafe", "a journal that ends before its head file's seq verifies intact: removed last records go unnoticed",
    [("journal/set.go", "\t\tif s.res.sum.LastSeq < s.head.Seq {", "\t\tif false {")],
    run="TestHead|TestJournalTailEdits")

# --- h-grants (issue 13): bounded standing grants ---
GS = "grant_standing.go"
mutant("standing-policy-change-kept", ".", "a grant made under an old policy still covers calls after the policy changed",
    [(GS, "\t\tcase sg.Policy != k.t.policy || sg.Policy != g.currentPolicy(k.t.Name):", "\t\tcase false:")], run="TestStandingGrantVoidAfterPolicyChange")
mutant("standing-scope-non-bool-fits", ".", "a scope that yields a non-bool (a string \"true\", a number) covers the call",
    [(GS, "\t\treturn false, fmt.Errorf(\"the scope yielded %v, not a bool\", v)", "\t\treturn true, nil")], run="TestStandingGrantScopeFailsClosed")
mutant("standing-scope-error-fits", ".", "a scope whose evaluation fails covers the call",
    [(GS, "\t\t\tg.opts.Logger.Warn(\"grant scope failed; asking instead\", \"tool\", k.t.Name, \"grant\", sg.ID, \"err\", err)\n\t\t\tcontinue", "\t\t\tfit = true")], run="TestStandingGrantScopeFailsClosed")
mutant("standing-expiry-inclusive", ".", "a grant still covers a call at the instant it expires",
    [(GS, "\t\tcase !k.now.Before(time.UnixMilli(sg.ExpiresAt)):", "\t\tcase k.now.After(time.UnixMilli(sg.ExpiresAt)):")], run="TestStandingGrantExpiryBoundary")
mutant("standing-memory-uses-not-counted", ".", "the memory ledger never takes a use, so a grant covers calls forever",
    [("ledger/memory.go", "\ts.Uses--\n", "")], run="TestStandingGrantFitsThenUsedUp")
mutant("standing-redis-refusal-is-use", "./ledger/redis", "a refused Redis use (the script's -1) counts as a use, so a used-up, revoked or expired grant covers calls",
    [("ledger/redis/redis.go", "\tif left < 0 {\n\t\treturn 0, false, nil", "\tif left < -1 {\n\t\treturn 0, false, nil")], run="TestConformance/standing")
mutant("standing-postgres-use-past-zero", "./ledger/postgres", "the PostgreSQL use statement does not check the count",
    [("ledger/postgres/postgres.go", "SET uses = uses - 1 WHERE id = $1 AND uses > 0 AND expires_at > now()", "SET uses = uses - 1 WHERE id = $1 AND expires_at > now()")], run="TestConformance/standing")
mutant("standing-file-use-past-zero", "./ledger/sqlite", "the SQLite use statement does not check the count",
    [("ledger/sqlite/sqlite.go", "SET uses = uses - 1 WHERE id = ?1 AND uses > 0 AND expires_at > ?2", "SET uses = uses - 1 WHERE id = ?1 AND expires_at > ?2")], run="TestConformance/standing")
mutant("standing-answer-case-folded", ".", "a grant choice that only resembles a listed one (another case) creates a grant",
    [(GS, "\t\tif offers[i].ID == answer {", "\t\tif strings.EqualFold(offers[i].ID, answer) {")], run="TestStandingGrantAnswerMustBeListed")
mutant("standing-irreversible-unnamed", ".", "an irreversible tool offers standing grants without being named in AllowGrantsFor",
    [("gate.go", "\t\tgt.grantsNamed = !t.Irreversible || slices.Contains(g.opts.AllowGrantsFor, t.Name)", "\t\tgt.grantsNamed = true")], run="TestStandingGrantForIrreversibleOnlyWhenNamed")
mutant("standing-client-relayed-always", ".", "a client-relayed approval creates a grant where the policy does not allow it",
    [(GS, "\tif assurance <= AssuranceClientRelayed && !t.Grants.ClientRelayed {", "\tif false {")], run="TestStandingGrantClientRelayedOnlyWhenAllowed")
mutant("standing-redis-revoke-noop", "./ledger/redis", "a revocation in Redis leaves the grant usable by the replicas",
    [("ledger/redis/redis.go", "redis.call('HSET', KEYS[1], 'uses', 0, 'ended', ARGV[3], 'by', ARGV[4], 'at', nowText)\n", "")], run="TestConformance/standing")
mutant("standing-service-unlisted-grant", "./channel", "the approval service accepts a grant choice the request did not offer",
    [("channel/service.go", "\tif approve && !offered(cur.Req, grant) {", "\tif false {")], run="TestServiceGrantChoice")

mutant("standing-grant-on-changed-target", ".", "a grant is created although the target changed while the human decided (its scope may not be the one shown)",
    [(G, "\tif r != nil || target != approvedTarget {\n\t\treturn refusal(ReasonTargetChanged, \"what the call points at changed since it was approved; preview it again\")\n\t}\n\tk.resolved = res", "\tif r != nil || target == \"\" && approvedTarget == \"x\" {\n\t\treturn refusal(ReasonTargetChanged, \"what the call points at changed since it was approved; preview it again\")\n\t}\n\tk.resolved = res")], run="TestStandingGrantNotMadeOnChangedTarget")
# ---- h-gateway (issue 16): one gateway for many servers ---------------------
GW = "proxy/gateway.go"
mutant("gateway-collision-shadows", "./proxy", "a second server takes over a name another server already serves, silently shadowing it",
    [(GW, "if owner, ok := g.names[down]; ok && owner != sl.spec.Name {", "if owner, ok := g.names[down]; false && ok && owner != sl.spec.Name {")], run="TestGatewayCollisionRefused|TestGatewayLaterCollisionWithheld")
mutant("gateway-down-server-routed-on", "./proxy", "a call to a server that is down is passed on instead of refused as server_unavailable",
    [("proxy/gateway_relay.go", "\t\t\tcase srv == nil:\n\t\t\t\treturn g.unavailable(sl, r.Params.Name), nil", "\t\t\tcase srv == nil:\n\t\t\t\treturn next(ctx, method, req)")], run="TestGatewayCrashRestart|TestGatewayHTTPUpstreamDown")
mutant("gateway-shared-audience", "./proxy", "servers of a gateway whose commands differ only in the environment share an audience, so one's approvals fit the other",
    [(GW, "gc.Audience = aud + \"/\" + sp.Name", "gc.Audience = aud")], run="TestGatewayPerServerPolicy")
mutant("gateway-reload-half-applied", "./proxy", "a reload with one bad server section still applies the others' policies",
    [("proxy/gateway_reload.go", "\tif err := errors.Join(errs...); err != nil {\n\t\treturn fmt.Errorf(\"proxy: %s refused", "\tif err := errors.Join(errs...); false && err != nil {\n\t\treturn fmt.Errorf(\"proxy: %s refused")], run="TestGatewayReloadBadFileRefused")
mutant("gateway-reload-policy-ignored", "./proxy", "a reload that changes a tool's policy leaves the tool registered under the old one, so its old approvals stay good",
    [("proxy/proxy.go", "def: string(def), pol: s.pol().Tools[name]}", "def: string(def)}")], run="TestGatewayReloadVoidsOnlyChangedTools")
mutant("gateway-shared-ledger-derived-audience", "./proxy", "a gateway on a shared ledger runs servers under audiences derived per host, which replicas do not agree on",
    [(GW, "\tif !sharedLedger(ledgerURL) {\n\t\treturn nil\n\t}\n\tvar errs []error\n\tfor _, sp := range file.Servers {", "\tif true || !sharedLedger(ledgerURL) {\n\t\treturn nil\n\t}\n\tvar errs []error\n\tfor _, sp := range file.Servers {")], run="TestGatewaySharedLedgerNeedsAudiences")
mutant("gateway-down-names-taken-over", "./proxy", "while a bare server is down, another server's re-announcement takes over its tool names",
    [(GW, "\t\tif other != sl && other.known[down] {", "\t\tif false && other != sl && other.known[down] {")], run="TestGatewayLaterCollisionWithheld")
RM = "TestGatewayReloadRestartKeepsRugPullMemory|TestGatewayRemovedServerReturnsAsStrict"
mutant("gateway-reload-fresh-rugpull-memory", "./proxy", "fresh memory on reload: a server restarted by a reload (or removed and added back) starts with no rug-pull memory, so an upstream that now says readOnlyHint: true runs its once-gated tool unasked",
    [(GW, "\tif sticky == nil {", "\tif true {")], run=RM)
mutant("gateway-allow-grants-dropped", "./proxy", "a gateway server's allow_grants_for never reaches its gate: irreversible tools it names offer no grants, silently",
    [("proxy/proxy.go", "opts.AllowGrantsFor = append(opts.AllowGrantsFor, m.prefix+n)", "_ = n")], run="TestGatewayGrantScopeChangeVoidsGrant")
mutant("gateway-reload-grant-optins-in-place", "./proxy", "a reload that withdraws allow_grants_for is applied in place, where the gate keeps its old opt-ins, so grants go on being offered and honoured",
    [("proxy/gateway_config.go", "p.AllowTokenFor, p.AllowGrantsFor, p.UpstreamRequests}", "p.AllowTokenFor, nil, p.UpstreamRequests}")], run="TestGatewayReloadWithdrawsAllowGrantsFor")
mutant("grant-binding-without-scopes", ". ./proxy", "grant binding without scopes: the policy hash covers a grant's limits, not its scopes, so a reload that narrows a scope keeps the grants made under the wider one, and a decision on the old offers is applied to the new list",
    [("gate.go", "\t\t\tScopes: t.Grants.ScopesBinding,\n", "")], run="TestStandingGrantVoidAfterScopesChange|TestChannelGrantChoiceAfterScopesChange|TestGatewayGrantScopeChangeVoidsGrant")
mutant("policy-file-scopes-unbound", "./proxy", "a policy file's grant scopes are not digested into ScopesBinding, so a reload that narrows them keeps the old grants",
    [("proxy/policy.go", "\t\tgp.ScopesBinding = scopesBinding(scopes)\n", "")], run="TestGatewayGrantScopeChangeVoidsGrant")
# ---- h-audit: signed journal checkpoints (issue 15) ----------------------------
CK = "journal/checkpoint.go"
mutant("audit-ck-key-anywhere", "./journal", "the checkpoint key may sit in the journal's directory, where whoever rewrites the journal reads it",
    [(CK, "\tif rel == \".\" || rel != \"..\" && !strings.HasPrefix(rel, \"..\"+string(filepath.Separator)) {", "\tif _ = rel; false {")], run="TestCheckpointKeyPlacement")
mutant("audit-ck-hash-unchecked", "./journal", "verify --key compares only seq and journal id, so a rewritten chain with recomputed hashes passes",
    [(CK, "\t\tif c.Hash != h {", "\t\tif false {")], run="TestRewrittenChainRefusedBySignedVerify")
mutant("audit-ck-truncation-unchecked", "./journal", "a journal cut back to an earlier checkpoint verifies",
    [(CK, "\tif rep.Latest.Seq > sum.LastSeq {", "\tif false {")], run="TestTruncationToAnEarlierCheckpointRefused")
mutant("audit-ck-other-journal-unchecked", "./journal", "a checkpoint of another journal is not recognised as such",
    [(CK, "\t\tif c.Journal != ix.id {", "\t\tif false {")], run="TestCheckpointFromAnotherJournalRefused")
mutant("audit-ck-none-is-fine", "./journal", "a journal whose checkpoints were emptied verifies under --key",
    [("journal/set.go", "\tif sum.Records > 0 && rep.Checkpoints == 0 {", "\tif false {")], run="TestSignedVerifyNeedsCheckpoints")
mutant("audit-ck-open-signs-rewrite", "./journal", "Open accepts a journal that contradicts its checkpoints and goes on signing the rewritten head",
    [("journal/journal.go", "\t\trep, err := ix.finish(res.sum)\n\t\tif err != nil {", "\t\trep, err := ix.finish(res.sum)\n\t\tif err != nil && false {")], run="TestRewrittenChainRefusedBySignedVerify")
mutant("audit-ck-not-at-close", "./journal", "Close does not sign the head: the records after the last periodic checkpoint stay rewritable",
    [("journal/journal.go", "\t// last checkpoint can be rewritten unnoticed.\n\tj.checkpoint()", "\t// last checkpoint can be rewritten unnoticed.")], run="TestCheckpointAtCloseAndOnInterval")
mutant("audit-metrics-label-leaks-arguments", "./cmd/mcpsafe", "call metrics label a series with the call's arguments (privacy, unbounded cardinality)",
    [(G, "\t\tg.observe(t.Name, res, r)", "\t\tg.observe(t.Name+fmt.Sprint(req.Params.Arguments), res, r)")], run="TestFilesMetricsCountTheCalls")
mutant("audit-trace-span-carries-arguments", ".", "the call span records the call's arguments: agent-supplied values (and secrets) leave in traces",
    [("gate_trace.go", "\t\ttrace.WithAttributes(attribute.String(\"mcp.tool.name\", tool)))", "\t\ttrace.WithAttributes(attribute.String(\"mcp.tool.name\", tool), attribute.String(\"args\", string(req.Params.Arguments))))")], run="TestTraceJoinsCallersTrace")
mutant("audit-export-no-redaction", "./journal", "journal export ships the arguments as stored: a secret in clear in a line leaves in the SIEM feed",
    [("journal/export.go", "\t\tclean := Redact(rec.Args, nil)", "\t\tclean := rec.Args")], run="TestExportRedactsAgain")
mutant("audit-export-unverified", "./journal", "journal export ships the verified prefix of a damaged journal as if it were whole",
    [("journal/export.go", "\tsum, err := VerifyFile(path, opts...)\n\tif err != nil {", "\tsum, err := VerifyFile(path, opts...)\n\tif err != nil && false {")], run="TestExportRefusesDamagedJournal")

# ---- h-passkeys (issue 14): approvers prove who they are --------------------
mutant("passwd-plaintext-accepted", "./channel ./cmd/mcpsafe", "an approvers file line holding a plain-text password is loaded as a token instead of refused",
    [("channel/auth.go", "\t\tif !IsPasswordHash(token) {\n\t\t\treturn nil, fmt.Errorf(",
      "\t\tif !IsPasswordHash(token) {\n\t\t\tout = append(out, Approver{Name: name, Token: token})\n\t\t\tcontinue\n\t\t}\n\t\tif false {\n\t\t\treturn nil, fmt.Errorf(")],
    run="TestApproversFileRefusesPlainText|TestLoadApproversFile|TestApprovalsPasswd")
mutant("argon2-any-password", "./channel", "the argon2id comparison compares nothing: any password logs in as any hashed approver",
    [("channel/password.go", "return subtle.ConstantTimeCompare(got, h.key) == 1", "return subtle.ConstantTimeCompare(got[:0], h.key[:0]) == 1")],
    run="TestPasswordHash|TestHashedApproverLogin")
mutant("attestation-unchecked", "./channel ./serverconf", "a gate configured with the service's public key accepts approvals without checking their signature",
    [("channel/attestation.go", "\tif w.serviceKey == nil {\n\t\treturn ans.Attestation, nil", "\tif true {\n\t\treturn ans.Attestation, nil")],
    run="TestSignedDecisionThroughService|TestForgedAttestationsRefused|TestApproverPublicKeyFlag")
mutant("attestation-not-bound-to-call", "./channel", "a validly signed statement is accepted for any call (the statement's id, tool, arguments are not compared)",
    [("channel/attestation.go", "if err := st.checkApproval(r, ans.Approvers); err != nil {", "if err := st.checkApproval(r, ans.Approvers); false && err != nil {")],
    run="TestForgedAttestationsRefused")
mutant("oidc-state-not-bound-to-browser", "./channel", "the SSO callback does not compare the state with the browser's cookie: an attacker's callback URL logs the victim in as the attacker",
    [("channel/oidc.go", "if state == \"\" || err != nil || ctCompare([]byte(c.Value), []byte(state)) != 1 {", "if state == \"\" || c == nil && err == nil {")],
    run="TestOIDCCallbackBoundToBrowser")
mutant("oidc-nonce-unchecked", "./channel", "the ID token's nonce is not compared with the sign-in's: a token minted for another sign-in is accepted",
    [("channel/oidc.go", "if ctCompare([]byte(id.Nonce), []byte(flow.nonce)) != 1 {", "if false {")],
    run="TestOIDCLogin")
mutant("oidc-audience-unchecked", "./channel", "an ID token issued to another client (aud) signs an approver in",
    [("channel/oidc.go", "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now})", "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now, SkipClientIDCheck: true})")],
    run="TestOIDCLogin")
mutant("oidc-expiry-unchecked", "./channel", "an expired ID token signs an approver in",
    [("channel/oidc.go", "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now})", "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now, SkipExpiryCheck: true})")],
    run="TestOIDCLogin")
mutant("oidc-issuer-unchecked", "./channel", "an ID token from another issuer signs an approver in",
    [("channel/oidc.go", "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now})", "p.Verifier(&oidc.Config{ClientID: cfg.ClientID, Now: cfg.Now, SkipIssuerCheck: true})")],
    run="TestOIDCLogin")
mutant("oidc-unverified-email", "./channel", "an email address the provider has not verified names an approver",
    [("channel/oidc.go", "if cl.Verified == nil || !*cl.Verified {", "if false {")],
    run="TestOIDCLogin")
mutant("passkey-gate-skips-user-verification", "./channel", "the gate accepts a passkey assertion made without user verification",
    [("channel/passkey.go", "protocol.TopOriginImplicitVerificationMode, false, true, true, pub,", "protocol.TopOriginImplicitVerificationMode, false, false, true, pub,")],
    run="TestPasskeyNeedsUserVerificationAndNotAPassword")
mutant("passkey-challenge-ignores-id-and-targets", "./channel", "the passkey challenge does not cover the request id and targets: an assertion for call A approves call B",
    [("channel/passkey.go", "b, _ := json.Marshal([]string{\"mcpsafe passkey approval v1\", id, tool, argsDigest, targetsDigest,", "b, _ := json.Marshal([]string{\"mcpsafe passkey approval v1\", tool, argsDigest,")],
    run="TestPasskeyAssertionBoundToCall")
mutant("passkey-login-approves", "./channel", "a password (or SSO) login alone approves a request that requires a passkey",
    [("channel/service.go", "if s.needsPasskey(&cur) && v.Passkey == nil {", "if false && v.Passkey == nil {")],
    run="TestPasskeyNeedsUserVerificationAndNotAPassword|TestPasskeyTwoOfM")
mutant("passkey-n-of-m-counts-one", "./channel", "N-of-M with passkeys is satisfied by one approver's passkey",
    [("channel/passkey.go", "if len(ok) < need {\n\t\treturn fmt.Errorf(\"%w: %d approver(s) proved this call", "if len(ok) < 1 {\n\t\treturn fmt.Errorf(\"%w: %d approver(s) proved this call")],
    run="TestPasskeyTwoOfM")
mutant("passkey-required-unchecked-without-registry", "./channel", "a webhook with no passkey registry approves a request whose tool requires passkeys",
    [("channel/webhook.go", "if r.MinAssurance >= mcpsafe.AssurancePasskey || (w.passkeys != nil && len(ans.Passkeys) > 0) {", "if w.passkeys != nil && len(ans.Passkeys) > 0 {")],
    run="TestPasskeyRequiredFailsClosed")
mutant("journal-evidence-not-bound-to-record", "./channel", "journal verify accepts a record whose signed statement is about another call",
    [("channel/attestation.go", "\tcase st.ID != rec.Call:\n", "\tcase false:\n"),
     ("channel/attestation.go", "\tcase st.Tool != rec.Tool || st.ArgsDigest != rec.ArgsDigest || st.Principal != rec.Principal:\n", "\tcase false:\n")],
    run="TestJournalCarriesSignedDecision")
mutant("journal-passkeys-unchecked", "./channel", "journal verify does not re-check the passkey assertions of a passkey-level record",
    [("channel/attestation.go", "if rec.Assurance == AssurancePasskeyName || st.Assurance == AssurancePasskeyName {", "if false {")],
    run="TestPasskeyApprovalRuns")
mutant("service-ignores-unknown-assurance", "./channel", "the approval service ignores a min_assurance it does not know instead of refusing the request",
    [("channel/service.go", "\tcase req.MinAssurance != \"\" && req.MinAssurance != AssurancePasskeyName:\n", "\tcase false:\n")],
    run="TestServiceRefusesPasskeyRequestsItCannotMeet")
mutant("passkey-tool-offered-grants", ".", "a tool that requires passkeys is offered standing grants, which later calls would run on unsigned",
    [("gate_channel_wait.go", "\tif k.t.minAssur >= AssurancePasskey {\n\t\t// A passkey signs one call;", "\tif false {\n\t\t// A passkey signs one call;")],
    run="TestPasskeyToolGetsNoStandingGrants")
mutant("passkey-grant-choice-accepted", ".", "a passkey approval that chooses a standing grant is accepted",
    [("gate_channel_wait.go", "if k.t.minAssur >= AssurancePasskey && dec.Grant != \"\" && dec.Grant != OnceOffer {", "if false {")],
    run="TestPasskeyToolGetsNoStandingGrants")
mutant("attestation-grant-unchecked", "./channel", "an answer may choose a standing grant the signed statement does not name",
    [("channel/attestation.go", "if g := ans.Grant; g != st.Grant && !(g == mcpsafe.OnceOffer && st.Grant == \"\") {", "if g := ans.Grant; false && g != st.Grant && !(g == mcpsafe.OnceOffer && st.Grant == \"\") {")],
    run="TestForgedAttestationsRefused")


# files: standing grants for delete_file and move_file (issue 13, lead)
mutant("files-grant-scope-pattern", "./files", "a directory name becomes a regular expression: a grant for a.b/ covers aXb/",
    [("files/grants.go", "re := \"^\" + regexp.QuoteMeta(prefix) + \"[^/]+$\"", "re := \"^\" + regexp.QuoteMeta(\"\") + prefix + \"[^/]+$\"")],
    run="TestGrantScopeIsTheLiteralDirectory")
mutant("files-grant-covers-subdirectories", "./files", "\"files directly in tmp/\" also covers tmp/sub/",
    [("files/grants.go", "re := \"^\" + regexp.QuoteMeta(prefix) + \"[^/]+$\"", "re := \"^\" + regexp.QuoteMeta(prefix) + \".+$\"")],
    run="TestDeleteGrantCoversTheDirectory")

mutant("owned-token-field-gets-token-path", ".", "a tool whose approval_token is its own argument gets one-time tokens (which would then be swallowed instead of reaching the tool)",
    [("gate.go", "	if t.OwnsTokenField {\n		return false // approval_token is the tool's own argument\n	}\n", "")],
    run="TestOwnedTokenFieldHasNoTokenPath")
mutant("owned-token-field-stripped", ".", "the gate takes the tool's own approval_token out of the call: the upstream never gets it",
    [("gate_call.go", "		tok = nil\n	}\n	if tok != nil {", "		tok = nil\n		rest, _, _ = canon.SplitMember(rest, TokenField)\n	}\n	if tok != nil {")],
    run="TestOwnedTokenFieldIsAnArgument")
# ---- h-grantends (issue 13): every end of a standing grant journaled once ----
mutant("grant-end-claimed-twice", "./ledger", "two gates may both claim one grant's end and journal it twice",
    [("ledger/memory.go", "if !ok || s.live(now) || !s.claimed.IsZero() {", "if !ok || s.live(now) {")],
    run="TestConformance/standing")
mutant("grant-end-claimed-twice-redis", "./ledger/redis", "two gates sharing Redis may both claim one grant's end",
    [("ledger/redis/redis.go", "if not v[1] or not v[2] or v[3] then return false end", "if not v[1] or not v[2] then return false end")],
    run="TestConformance/standing")
mutant("grant-end-claimed-twice-postgres", "./ledger/postgres", "two gates sharing PostgreSQL may both claim one grant's end",
    [("ledger/postgres/postgres.go", "WHERE id = $1 AND claimed_at IS NULL AND (uses <= 0 OR expires_at <= now())", "WHERE id = $1 AND (uses <= 0 OR expires_at <= now())")],
    run="TestConformance/standing")
mutant("grant-end-live-claimable", "./ledger", "a live grant's end may be claimed (and journaled as ended while it still covers calls)",
    [("ledger/memory.go", "if !ok || s.live(now) || !s.claimed.IsZero() {", "if !ok || !s.claimed.IsZero() {")],
    run="TestConformance/standing")
mutant("tombstone-still-usable", "./ledger", "a revoked grant keeps its uses, so its tombstone still covers calls",
    [("ledger/memory.go", "s.Uses, s.ended, s.by, s.endedAt = 0, r.Reason, r.By, now", "s.ended, s.by, s.endedAt = r.Reason, r.By, now")],
    run="TestConformance/standing")
mutant("tombstone-still-usable-redis", "./ledger/redis", "a grant revoked in Redis keeps its uses",
    [("ledger/redis/redis.go", "redis.call('HSET', KEYS[1], 'uses', 0, 'ended', ARGV[3]", "redis.call('HSET', KEYS[1], 'ended', ARGV[3]")],
    run="TestConformance/standing")
mutant("tombstone-resurrected-by-put", "./ledger", "a put of an ended grant's ID replaces its tombstone with a live grant",
    [("ledger/memory.go", "\tif _, ok := m.standing[s.ID]; ok {\n\t\treturn ErrExists", "\tif old, ok := m.standing[s.ID]; ok && old.live(now) {\n\t\treturn ErrExists")],
    run="TestConformance/standing")
mutant("tombstones-unbounded", "./ledger/sqlite", "unclaimed ends are never swept from a file ledger",
    [("ledger/sqlite/sqlite.go", "WHERE (claimed_at > 0 AND claimed_at <= ?1) OR expires_at <= ?2`", "WHERE (claimed_at > 0 AND claimed_at <= ?1)`")],
    run="TestStandingTombstonesBounded")
mutant("grant-end-used-up-unclaimed", ".", "the last use journals used-up without claiming, so a sweep journals it again",
    [("grant_standing.go", "\t\tif left == 0 {\n\t\t\tg.journalEnd(ctx, sg.ID)\n\t\t}", "\t\tif left == 0 {\n\t\t\tg.opts.Journal.Append(ctx, journal.Record{Tool: sg.Tool, Principal: sg.Principal, Decision: journal.GrantEnded, Grant: sg.ID, Reason: ledger.EndUsedUp})\n\t\t}")],
    run="TestGrantEndJournaledOnceAcrossReplicas/memory")
mutant("grant-revoker-not-kept", "./channel", "a revocation from the approval service does not say who revoked",
    [("channel/http.go", "s.opts.Grants, who+\" via \"+via, func", "s.opts.Grants, \"the approval service\", func")],
    run="TestServiceRevocationJournaledByGate")
# --- approvals overview and journal reading (issue 15: h-overview) ---
mutant("journal-read-hands-over-edited-record", "./journal", "a reader hands over the record whose edit only the next line reveals",
    [("journal/read.go", "te.ord <= heldOrd", "te.ord <= heldOrd-1")],
    run="TestReadFile")
mutant("overview-journal-summary-unescaped", "./channel", "the record view shows a journal summary without making its control and bidi characters visible",
    [("channel/web/journal.html", "{{vis .Rec.Summary}}", "{{.Rec.Summary}}")],
    run="TestOverviewEscapesHostileJournal")
mutant("overview-reason-label-raw", "./channel", "the refusal chart shows a reason code from the journal as it is (bidi and invisible characters included)",
    [("channel/web/overview.html", 'text-anchor="end">{{vis .Label}}</text>', 'text-anchor="end">{{.Label}}</text>')],
    run="TestOverviewEscapesHostileJournal")
mutant("overview-args-not-redacted-again", "./channel", "the record view shows journal arguments as stored, a secret held in clear included",
    [("channel/overview.go", "if clean := journal.Redact(rec.Args, nil); len(clean) > 0 {", "if clean := rec.Args; len(clean) > 0 {")],
    run="TestRecordViewRedactsAgain")
mutant("overview-records-without-session", "./channel", "the journal record view answers without a signed-in session",
    [("channel/overview.go", 'm.HandleFunc("GET /journal", s.withSession(false, s.journalRecords))', 'm.HandleFunc("GET /journal", func(w http.ResponseWriter, r *http.Request) { s.journalRecords(w, r, &session{}) })')],
    run="TestOverviewNeedsSignIn")
mutant("gateway-pending-gauge-unset", "./cmd/mcpsafe", "the gateway's pending-approvals gauge reads 0 whatever its gates issued",
    [("proxy/gateway.go", "\t\tg.conf.Metrics.SetPending(g.Pending)\n", "")],
    run="TestGatewayBinaryMetricsPending")
# ---- journal checkpoints: the HTTP witness (issue 15) ------------------------
WJ = "journal/witness.go"
WS = "witness/witness.go"
mutant("witness-accepts-unsigned", "./witness", "the witness stores a checkpoint whose signature does not verify (unsigned, or forged with another key)",
    [(WJ, "\tif err != nil {\n\t\treturn Checkpoint{}, &CheckpointError{Kind: CheckpointBadSignature, Reason: fmt.Sprintf(\"not a note signed by a trusted key: %v\", err)}\n\t}\n",
          "\tif err != nil {\n\t\ttext, _, _ := strings.Cut(string(msg), \"\\n\\n\")\n\t\tn = &note.Note{Text: text + \"\\n\", Sigs: []note.Signature{{Name: keys[0].Name()}}}\n\t}\n")],
    run="TestWitnessRefusesBadSubmissions")
mutant("witness-accepts-rollback", "./witness", "the witness takes a checkpoint below the latest seq it holds for the journal",
    [(WS, "\tif c.Seq < h.latest.Seq {\n", "\tif false {\n")],
    run="TestWitnessRefusesBadSubmissions|TestWitnessHistorySurvivesRestart")
mutant("witness-accepts-fork", "./witness", "the witness takes another hash at a seq it already holds (a rewritten journal's head)",
    [(WS, "\tif hash, ok := h.bySeq[c.Seq]; ok {\n\t\tif hash == c.Hash {", "\tif hash, ok := h.bySeq[c.Seq]; ok && hash == c.Hash {\n\t\tif hash == c.Hash {")],
    run="TestWitnessRefusesBadSubmissions|TestRewriteBehindWitnessRefused")
mutant("witness-any-token", "./witness", "the witness takes any bearer token",
    [(WS, "\tif match != 1 {\n", "\tif match != 1 && tok == \"\" {\n")],
    run="TestWitnessRefusesBadSubmissions")
mutant("witness-no-body-cap", "./witness", "the witness reads a submission's whole body, however large",
    [("witness/http.go", "io.ReadAll(http.MaxBytesReader(w, r.Body, journal.MaxCheckpointNote))", "io.ReadAll(r.Body)")],
    run="TestWitnessRefusesBadSubmissions")
mutant("verify-ignores-witness", "./witness", "journal verify --witness-url fetches the witness's checkpoints but does not check the journal against them",
    [(WJ, "verifySetAgainst(path, append(all, witnessed...), torn, from, opts...)", "verifySetAgainst(path, all, torn, from, opts...)")],
    run="TestRewriteBehindWitnessRefused")
mutant("verify-witness-missing-ok", "./witness", "journal verify --witness-url passes a journal of which the witness holds nothing (a replaced journal)",
    [(WJ, "\tif sum.Records > 0 && wr.Checkpoints == 0 {\n", "\tif false {\n")],
    run="TestReplacedJournalShowsAtTheWitness")
mutant("witness-send-blocks-journal", "./witness", "a checkpoint waits for the witness's answer: a down witness stalls the journal",
    [(WJ, "\ts.mu.Unlock()\n\tselect {\n\tcase s.wake <- struct{}{}:\n\tdefault:\n\t}\n", "\ts.mu.Unlock()\n\tfor { if _, ok := s.front(); !ok { break }; if s.closing() { break }; time.Sleep(time.Millisecond); select { case s.wake <- struct{}{}: default: } }\n")],
    run="TestWitnessDownJournalKeepsWorking")
# ---- h-rotation (issue 15): journal rotation, a set of files one chain ---------
ROT, SET = "journal/rotation.go", "journal/set.go"
mutant("rotation-chain-restarts", "./journal", "the file started at a rotation begins a new chain (prev Genesis) instead of linking to the sealed segment's last record",
    [(ROT, "\tj.size, j.segFirst, j.since, j.capNoted = 0, 0, time.Time{}, false", "\tj.size, j.segFirst, j.since, j.capNoted = 0, 0, time.Time{}, false\n\tj.prev = Genesis")],
    run="TestRotation")
mutant("rotation-unsigned", "./journal", "no checkpoint is signed when a segment is sealed: its last records are covered only if a later checkpoint happens to come",
    [(ROT, "\tj.checkpoint()\n\tseg := SegmentPath", "\tseg := SegmentPath")],
    run="TestCheckpointSignedAtEachRotation")
mutant("rotation-writes-into-sealed-segment", "./journal", "a rotation whose new file cannot be created is not undone: records go on into a file named as sealed",
    [(ROT, "\t\trerr := j.step(stepRollback)\n\t\tif rerr == nil {\n\t\t\trerr = os.Rename(seg, j.path)\n\t\t}", "\t\trerr := error(nil)")],
    run="TestRotationFailures")
mutant("verify-trusts-each-segment-start", "./journal ./cmd/mcpsafe", "verify takes each file's first record as the chain's new start: a deleted middle segment goes unnoticed",
    [(SET, "\t\tif s.ord == 1 && rec.Seq > 1 {\n", "\t\tif n == 1 && fi > 0 {\n\t\t\tsum.LastSeq, s.prevHash = rec.Seq-1, rec.Prev\n\t\t}\n\t\tif s.ord == 1 && rec.Seq > 1 {\n")],
    run="TestRotatedSetAttacks|TestFilesRotatedJournalEndToEnd")
mutant("verify-skips-segment-names", "./journal", "a segment whose name claims other seqs than it holds (renamed, swapped) verifies",
    [(SET, "\tif firstSeq != seg.First || lastSeq != seg.Last {", "\tif false {")],
    run="TestRotatedSetAttacks")
mutant("verify-pruned-silently", "./journal ./cmd/mcpsafe", "a set whose oldest segments were deleted verifies without --pruned",
    [(SET, "\ts.pruned = o.pruned", "\ts.pruned = true")],
    run="TestRotatedSetAttacks|TestFilesRotatedJournalEndToEnd")
mutant("verify-pruned-unvouched", "./journal", "verify --key --pruned accepts a pruned set that no checkpoint covers",
    [(SET, "\t\tif ix.checked == 0 {", "\t\tif false {")],
    run="TestPrunedSetNeedsAVouchingCheckpoint")
mutant("verify-sealed-torn-ok", "./journal", "a sealed segment whose last line lost its newline is taken for a crash's torn line",
    [(SET, "\t\tif !complete && sealed {", "\t\tif false {")],
    run="TestRotatedSetAttacks")
# ---- h-proxyrelay (issue 12): methods the proxy does not know, list changes ----
mutant("unknown-methods-relayed-by-default", "./proxy", "the default policy relays methods the proxy does not know, which may run a tool around the gate",
    [("proxy/unknown_methods.go", "if !s.pol().RelayUnknownMethods {", "if false {")],
    run="TestUnknownMethodRefused")
mutant("unknown-method-params-unscanned", "./proxy", "a relayed unknown method whose params name a gated tool or tools/call reaches the upstream",
    [("proxy/unknown_methods.go", "if folded == canon.FoldKey(\"tools/call\") || blocked[folded] {", "if false && folded == canon.FoldKey(\"tools/call\") || blocked[folded] && false {")],
    run="TestUnknownMethodRefused")
mutant("unknown-method-gated-names-ignored", "./proxy", "the params scan blocks only withheld tools, not gated ones",
    [("proxy/unknown_methods.go", "\t\tif r.gated || r.selfGated {\n\t\t\tout[canon.FoldKey(name)] = true", "\t\tif (r.gated || r.selfGated) && false {\n\t\t\tout[canon.FoldKey(name)] = true")],
    run="TestUnknownMethodRefused")
mutant("unknown-method-name-case-sensitive", "./proxy", "the params scan compares tool names exactly, so a case variant of a gated tool's name passes",
    [("proxy/unknown_methods.go", "folded := canon.FoldKey(strings.TrimSpace(str))", "folded := str")],
    run="TestUnknownMethodRefused")
mutant("unknown-method-tools-namespace", "./proxy", "an unknown method in the tools/ namespace is relayed",
    [("proxy/unknown_methods.go", "if strings.HasPrefix(m, \"tools/\") {", "if false {")],
    run="TestUnknownMethodRefused")
mutant("unknown-method-case-variant-of-known", "./proxy", "a case variant of a known method (which a lax upstream may take as the method) is relayed",
    [("proxy/unknown_methods.go", "\t\tif strings.EqualFold(k, m) {", "\t\tif false {")],
    run="TestUnknownMethodRefused")
mutant("gateway-relays-unknown-methods", "./proxy", "a gateway accepts unknown_methods: relay though it cannot tell which server such a method is for",
    [("proxy/gateway_config.go", "\t\tif pol.RelayUnknownMethods {", "\t\tif false {")],
    run="TestUnknownMethodsPolicy")
# ---- h-httplane (issue 12): the HTTP fast lane for pass-through calls ----
mutant("http-fastlane-gated-tool", "./proxy", "a call to a gated tool is forwarded raw, around the gate",
    [("proxy/fastlane.go", "\tif !s.passesThrough(name) {\n\t\treturn fastCall{}, false\n\t}\n\tc := fastCall{id: id}", "\tc := fastCall{id: id}")],
    run="TestHTTPFastLaneRefusesGatedAndOdd")
mutant("http-fastlane-extra-members", "./proxy", "params members the SDK path drops reach the upstream raw",
    [("proxy/http_fastlane.go", "if !ok || !onlyKeys(params, fastParamsKeys) {", "if !ok {")],
    run="TestHTTPFastLaneRefusesGatedAndOdd")
mutant("http-fastlane-refused-capabilities", "./proxy", "a client capability the policy refuses to relay reaches the upstream unfiltered",
    [("proxy/http_fastlane.go", "if strings.EqualFold(k, string(kind)) && !ur.allows(kind) {", "if strings.EqualFold(k, string(kind)) && false && !ur.allows(kind) {")],
    run="TestHTTPFastLaneRefusesGatedAndOdd|TestHTTPFastLanePassThrough")
mutant("http-fastlane-refused-asks", "./proxy", "an upstream's input request of a kind the policy refuses reaches the client",
    [("proxy/http_fastlane.go", "\t\treturn checkAsks(ur, res.InputRequests)", "\t\treturn nil")],
    run="TestHTTPFastLaneInputRequired")
mutant("fastlane-continuation-upstream", "./proxy", "a proxy continuation (sealed state) is sent upstream instead of to continueCall",
    [("proxy/fastlane.go", "if json.Unmarshal(v, &st) != nil || isContinuation(st) {", "if json.Unmarshal(v, &st) != nil {")],
    run="TestHTTPFastLaneRefusesGatedAndOdd")
mutant("http-fastlane-session-id", "./proxy", "a request carrying a session id (spoofed or not) takes the stateless fast lane",
    [("proxy/http_fastlane.go", "if r.Method != http.MethodPost || len(r.Header.Values(\"Mcp-Session-Id\")) > 0 {", "if r.Method != http.MethodPost {")],
    run="TestHTTPFastLaneRefusesGatedAndOdd")
mutant("http-fastlane-client-headers", "./proxy", "the client's headers (credentials, cookies) are forwarded to the upstream",
    [("proxy/http_fastlane.go", "\treq.Header.Set(\"Content-Type\", \"application/json\")\n\treq.Header.Set(\"Accept\"", "\treq.Header = r.Header.Clone()\n\treq.Header.Set(\"Content-Type\", \"application/json\")\n\treq.Header.Set(\"Accept\"")],
    run="TestHTTPFastLaneHeaders")
mutant("http-fastlane-host-check", "./proxy", "the fast lane skips the SDK's DNS rebinding protection",
    [("proxy/http_fastlane.go", "\treturn isLoopbackHost(r.Host)\n", "\treturn true\n")],
    run="TestHTTPFastLaneRefusesGatedAndOdd")
mutant("http-fastlane-stateful", "./proxy", "the fast lane answers 2026-07-28 requests that --http-stateful refuses",
    [("proxy/http_fastlane.go", "if up == nil || s.member != nil || h.Stateful || s.Upstream == nil ||", "if up == nil || s.member != nil || s.Upstream == nil ||")],
    run="TestHTTPFastLaneStatefulOff")
mutant("http-fastlane-header-name", "./proxy", "the fast lane takes a call whose Mcp-Name header names another tool than its body",
    [("proxy/http_fastlane.go", "if json.Unmarshal(params[\"name\"], &name) != nil || r.Header.Get(\"Mcp-Name\") != name {", "if json.Unmarshal(params[\"name\"], &name) != nil {")],
    run="TestHTTPFastLaneRefusesGatedAndOdd")
mutant("http-unknown-unchecked", "./proxy", "over HTTP, a method the proxy does not know reaches the upstream whatever the policy and its params say",
    [("proxy/http_fastlane.go", "\twhy := s.refuseUnknown(ul, top)\n", "\twhy := \"\"\n")],
    run="TestHTTPUnknownMethods")
mutant("http-unknown-refused-capabilities", "./proxy", "an unknown request declaring a capability the policy does not relay reaches the upstream unfiltered",
    [("proxy/http_fastlane.go", "\t\t\tif k := s.refusedCapability(caps); k != \"\" {", "\t\t\tif k := s.refusedCapability(caps); false && k != \"\" {")],
    run="TestHTTPUnknownMethods")
mutant("http-unknown-header-mismatch", "./proxy", "an unknown request whose Mcp-Method header names another method is relayed",
    [("proxy/http_fastlane.go", "if v := r.Header.Values(\"Mcp-Method\"); len(v) != 1 || v[0] != ul.method {", "if false {")],
    run="TestHTTPUnknownMethods")
mutant("http-unknown-ambiguous-params", "./proxy", "unknown-method params with duplicate keys (read differently by different parsers) are relayed",
    [("proxy/http_fastlane.go", "\tp, ok := strictObject(params)\n\tif !ok {", "\tp, ok := strictObject(params)\n\tif false && !ok {")],
    run="TestHTTPUnknownMethods")


mutant("witness-journals-uncapped", "./witness", "one trusted key may start any number of journals on the witness (and fill its disk)",
    [("witness/witness.go", "if n := s.journalsOf(c.Key); n >= s.maxPer {", "if n := s.journalsOf(c.Key); false && n >= s.maxPer {")],
    run="TestWitnessCapsJournalsPerKey")
mutant("witness-other-key-into-evidence", "./witness", "another key's notes for a journal fill that journal's evidence file and crowd out a real fork's",
    [("witness/witness.go", "if r.Kind == RefusedOtherKey {", "if false && r.Kind == RefusedOtherKey {")],
    run="TestWitnessRefusesBadSubmissions")

mutant("upstream-line-read-leniently", "./proxy", "an upstream line that encoding/json reads as progress (case-folded or duplicate keys) reaches the client raw, where it reads as an elicitation with the gate's request id",
    [("proxy/fastlane.go", "	top, strict := strictObject(line)\n	shape := \"\"\n	if strict {", "	top, strict := leniently(line)\n	shape := \"\"\n	if strict {"),
     ("proxy/fastlane.go", "// upstreamShape names the kind", "func leniently(line []byte) (map[string]json.RawMessage, bool) {\n	var m map[string]json.RawMessage\n	if json.Unmarshal(line, &m) != nil {\n		return nil, false\n	}\n	for k, v := range m {\n		m[strings.ToLower(k)] = v\n	}\n	for k := range m {\n		if k != strings.ToLower(k) {\n			delete(m, k)\n		}\n	}\n	return m, true\n}\n\n// upstreamShape names the kind")],
    run="TestUpstreamLinesReadAlikeOrNotRaw")

mutant("http-lane-lone-cr", "./proxy", "the HTTP fast lane relays an event stream with a lone CR, which the client's SSE parser splits into events the proxy never checked",
    [("proxy/http_fastlane.go", "if i := bytes.IndexByte(line, '\\r'); i >= 0 && i != len(line)-2 {", "if i := bytes.IndexByte(line, '\\r'); false && i >= 0 && i != len(line)-2 {")],
    run="TestHTTPFastLaneReadsUpstreamAsClientsDo")
mutant("http-lane-asks-read-leniently", "./proxy", "the HTTP fast lane checks input requests as encoding/json reads them: \"Method\" beside \"method\" passes a roots/list the policy refuses",
    [("proxy/http_fastlane.go", "	if ir, ok := result[\"inputRequests\"]; ok {\n		asks, ok := strictObject(ir)", "	if ir, ok := result[\"inputRequests\"]; false && ok {\n		asks, ok := strictObject(ir)")],
    run="TestHTTPFastLaneReadsUpstreamAsClientsDo")

mutant("owned-token-field-pending-handle", ".", "a tool whose approval_token is its own argument is answered with a pending handle it can never present",
    [("gate_channel_wait.go", "case ok && progressToken(k.req) == nil && !k.t.OwnsTokenField:", "case ok && progressToken(k.req) == nil:")],
    run="TestOwnedTokenFieldGetsNoPendingHandle")

mutant("unknown-method-name-unscanned", "./proxy", "an unknown method named after a gated tool (x-vendor/delete_thing) is relayed",
    [("proxy/unknown_methods.go", "if name, ok := methodNamesTool(u.method, s.blockedNames()); ok {", "if name, ok := methodNamesTool(u.method, s.blockedNames()); false && ok {")],
    run="TestUnknownMethodRefused")
# ---- issue 20: secrets in stored text, ledger clocks, the witness cap ------
mutant("store-error-text-unredacted", "./journal ./cmd/mcpsafe", "an upstream's error or a resolver's refusal that echoes a secret argument is stored (and so shown, exported) in clear",
    [("journal/journal.go", "\tr.Summary, r.Error, r.Reason = secrets.Text(r.Summary), secrets.Text(r.Error), secrets.Text(r.Reason)\n", "\t_ = secrets\n")],
    run="TestAppendCutsSecretsOutOfStoredText|TestErrorTextNeverStoresSecretArguments")
mutant("redis-grant-expiry-by-local-clock", "./ledger/redis", "a replica judges a standing grant's expiry in Redis by its own clock: one running behind uses an expired grant, one running ahead is refused a live one",
    [("ledger/redis/redis.go", "\tleft, err := redisUseStanding.Run(ctx, r.client, []string{r.standingKey(id)}).Int()", "\tleft, err := redisUseStanding.Run(ctx, r.client, []string{r.standingKey(id)}, r.now().UnixNano()).Int()"),
     ("ledger/redis/redis.go", "if tonumber(v[1]) <= now or tonumber(v[2]) <= 0 then return -1 end", "if tonumber(v[1]) <= tonumber(ARGV[1]) or tonumber(v[2]) <= 0 then return -1 end")],
    run="TestRedisStandingExpiryByServerClock|TestConformance/standing")
mutant("witness-cap-permanent", "./witness", "a journal whose checkpoints reach the witness's limit is refused for good: a busy server is witnessed no further after a few days",
    [("witness/witness.go", "\t\tif err := s.thin(h, c.Journal); err != nil {\n\t\t\treturn Result{}, err\n\t\t}\n", "")],
    run="TestWitnessPastItsLimitKeepsWitnessing")
mutant("unknown-method-params-exact-only", "./proxy ./cmd/mcpsafe", "the unknown-method relay scans only the member spelt exactly params and relays other members unread: an upstream that matches names under case folding runs the gated tool named under Params or paramſ",
    [("proxy/unknown_methods.go", "\tif !onlyKeys(top, fastTopKeys) {\n", "\tif false && !onlyKeys(top, fastTopKeys) {\n"),
     ("proxy/unknown_methods.go", "for _, k := range slices.Sorted(maps.Keys(top)) {", "for _, k := range slices.DeleteFunc(slices.Sorted(maps.Keys(top)), func(k string) bool { return k != \"params\" }) {")],
    run="TestUnknownMethodRefused|TestUnknownRelayRefusesMembersNotSpeltExactly")
mutant("unknown-method-extra-members", "./proxy ./cmd/mcpsafe", "a relayed unknown-method line may carry members JSON-RPC does not have (which an upstream may read as its parameters)",
    [("proxy/unknown_methods.go", "\tif !onlyKeys(top, fastTopKeys) {\n", "\tif false && !onlyKeys(top, fastTopKeys) {\n")],
    run="TestUnknownMethodRefused|TestUnknownRelayRefusesMembersNotSpeltExactly")
mutant("unknown-method-split-dotted-names", "./cmd/mcpsafe", "the method-name check compares each part of the method with whole tool names, so a gated tool whose name holds a dot (x-acme/fs.delete) is relayed and runs",
    [("proxy/unknown_methods.go", "if slices.Equal(parts[i:i+len(np)], np) {", "if len(np) == 1 && parts[i] == np[0] {")],
    run="TestUnknownRelayRefusesMethodNamingDottedTool")
mutant("http-lane-unread-bom-event", "./proxy ./cmd/mcpsafe", "the HTTP fast lane relays, unread, an event whose first line starts with a byte-order mark (a WHATWG parser drops it and reads the event's data)",
    [("proxy/http_fastlane.go", "if !plainEventLine(trimmed) {", "if false && !plainEventLine(trimmed) {")],
    run="TestHTTPFastLaneReadsUpstreamAsClientsDo|TestHTTPFastLaneFailsAnswersClientsReadOtherwise")
mutant("http-lane-unread-folded-input-requests", "./proxy ./cmd/mcpsafe", "the HTTP fast lane relays input requests under a member equal to inputRequests only under case folding, which it does not check and case-insensitive clients read",
    [("proxy/http_fastlane.go", "if strings.EqualFold(k, exact) && k != exact {", "if false && strings.EqualFold(k, exact) && k != exact {")],
    run="TestHTTPFastLaneReadsUpstreamAsClientsDo|TestHTTPFastLaneFailsAnswersClientsReadOtherwise")
mutant("http-lane-unread-request-answer", "./proxy ./cmd/mcpsafe", "the HTTP fast lane relays a JSON answer shaped as a request (roots/list) carrying the call's id",
    [("proxy/http_fastlane.go", "if !ok || upstreamShape(top) != \"response\" || string(bytes.TrimSpace(top[\"id\"])) != id {", "if !ok || string(bytes.TrimSpace(top[\"id\"])) != id {")],
    run="TestHTTPFastLaneReadsUpstreamAsClientsDo|TestHTTPFastLaneFailsAnswersClientsReadOtherwise")

mutant("resolver-bind-ignored", "./proxy ./cmd/mcpsafe", "the policy's bind: is ignored and the whole report binds: a read (last-access time) voids the approval",
    [("proxy/policy.go", "\tif len(rs.Bind) == 0 {\n\t\treturn r, nil", "\tif true {\n\t\treturn r, nil")],
    run="TestResolverBindSurvivesAccessTime|TestFSResolverBindsReportedFieldsOnly|TestApprovalSurvivesARead")
mutant("resolver-bind-nothing", "./proxy ./cmd/mcpsafe", "bind: keeps none of the fields it names: no state binds the approval and a write in between goes unseen",
    [("proxy/policy.go", "\t\tfields[name] = v\n", "\t\t_ = v\n")],
    run="TestResolverBindSurvivesAccessTime|TestFSResolverBindsReportedFieldsOnly|TestApprovalSurvivesARead")
mutant("ledger-standing-hidden-by-wrapper", "./cmd/mcpsafe", "the metrics wrapper hides the ledger's standing grants: --grants with --metrics does not start",
    [("metrics/metrics.go", "\treturn &timedStanding{m: t.m, s: s}", "\treturn nil")],
    run="TestFilesGrantsWithMetrics|TestProxyGrantsWithMetrics")
mutant("default-journal-ignores-roots", "./cmd/mcpsafe", "mcpsafe files keys its default journal by audience alone: servers over different roots are told apart by slot, not by what they serve",
    [("cmd/mcpsafe/files.go", "\tcfg.Gate.Instance = rootsInstance(roots)\n", "")],
    run="TestDefaultStateSideBySide")
mutant("default-journal-twin-refused", "./cmd/mcpsafe ./serverconf", "a twin on default settings gets no slot of its own: one configuration in two MCP clients fails to start",
    [("serverconf/serverconf.go", "\tfor n := 1; n <= journal.DefaultSlots; n++ {", "\tfor n := 1; n <= 1; n++ {")],
    run="TestDefaultStateSideBySide|TestDefaultJournalPerInstance")

mutant("rule-argument-names-unchecked", "./proxy ./cmd/mcpsafe", "a rule naming an argument the tool lacks (args.pth) loads, then denies every call at run time",
    [("proxy/policy_hints.go", "\tfor _, a := range tp.argRefs {", "\tfor _, a := range tp.argRefs[:0] {")],
    run="TestRuleArgumentNamesChecked|TestProxyRuleNamingAMissingArgument")

mutant("proxy-trusts-undeclared-upstream-gate", "./cmd/mcpsafe", "a tool that declares its own approval_token passes through without trust_upstream_gate in the policy",
    [("proxy/policy.go", "if p == nil || !p.TrustUpstreamGate || !schemaHasProperty(", "if p == nil || !schemaHasProperty(")],
    run="TestProxyTrustsUpstreamGate|TestProxyFrontsMcpsafeFiles")
mutant("proxy-trust-ignores-tool-schema", "./cmd/mcpsafe", "trust_upstream_gate passes every tool through, also those without a gate of their own",
    [("proxy/policy.go", "if p == nil || !p.TrustUpstreamGate || !schemaHasProperty(t.InputSchema, mcpsafe.TokenField) {", "if p == nil || !p.TrustUpstreamGate {")],
    run="TestProxyTrustsOnlyToolsThatGateThemselves")

# ---- shutdown (issue 21, item 1): stop means stop --------------------------------
SD = "gate_shutdown.go"
mutant("execute-after-shutdown", ".", "Execute may start after the signal: the check right before Execute ignores that shutdown began",
    [(SD, "\tif s.began {\n\t\treturn nil, nil, nil, false", "\tif false {\n\t\treturn nil, nil, nil, false")], run="TestNoExecuteStartsAfterShutdownBegan")
mutant("shutdown-keeps-handed-out-approvals", ".", "tokens and MRTR request states handed out before the signal are neither spent nor journaled: they stay redeemable elsewhere",
    [(SD, "\t\tif !now.Before(p.expires) {\n\t\t\tcontinue\n\t\t}\n\t\twg.Add(1)", "\t\tif true || !now.Before(p.expires) {\n\t\t\tcontinue\n\t\t}\n\t\twg.Add(1)")], run="TestShutdownWithdraws")

def main():
    root = os.getcwd()
    only = set(sys.argv[1:])
    names = set()
    for i, m in enumerate(M, 1):
        if m["name"] in names:
            sys.exit("duplicate mutant " + m["name"])
        names.add(m["name"])
        if only and m["name"] not in only:
            continue
        files = {}
        for path, old, new in m["edits"]:
            if path not in files:
                files[path] = open(os.path.join(root, path)).read()
            n = files[path].count(old)
            if n != 1:
                sys.exit("%s: %r occurs %d times in %s" % (m["name"], old[:60], n, path))
            files[path] = files[path].replace(old, new)
        out = ["# mutant: %s\n" % m["name"], "# packages: %s\n" % m["packages"]]
        if m["run"]:
            out.append("# run: %s\n" % m["run"])
        out.append("# why: %s\n" % m["why"])
        for path in sorted(files):
            before = open(os.path.join(root, path)).read().splitlines(True)
            after = files[path].splitlines(True)
            out.append("diff --git a/%s b/%s\n" % (path, path))
            out.extend(difflib.unified_diff(before, after, "a/" + path, "b/" + path, n=3))
        fn = os.path.join(root, "mutants", "%02d-%s.patch" % (i, m["name"]))
        with open(fn, "w") as f:
            f.writelines(out)
    print("%d mutants" % len(M))

if __name__ == "__main__":
    main()
