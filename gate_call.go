package mcpsafe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/canon"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mrtrProtocol is the first protocol version with Multi Round-Trip Requests.
// Older clients are asked in-call with elicitation/create instead.
const mrtrProtocol = "2026-07-28"

// outcomeWriteTimeout bounds the outcome's journal write, which no longer
// follows the caller's cancellation.
const outcomeWriteTimeout = time.Minute

// approvalInputID keys our elicitation in InputRequests/InputResponses.
const approvalInputID = "mcpsafe_approval"

// call is one gated tools/call on its way through the gate.
type call struct {
	t        *gatedTool
	req      *mcp.CallToolRequest
	c        Call
	digest   string // of the canonical arguments, without approval_token
	token    *string
	resolved Resolved
	plan     Plan
	target   string // digest of resolved + plan targets
	now      time.Time
}

func (g *Gate) handler(t *gatedTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !g.enterCall() {
			r := shuttingDown("it takes no new calls")
			g.journalRefusal(ctx, nil, t.Name, r)
			return r.Result(), nil
		}
		defer g.exitCall()
		ctx, span := g.startCall(ctx, t.Name, req)
		res, r := g.serve(ctx, t, req)
		g.observe(t.Name, res, r)
		endStep(span, r)
		if r != nil {
			return r.Result(), nil
		}
		return res, nil
	}
}

// serve runs one call down the path in design.md. It returns either a
// result or a refusal; every early return is a refusal, so nothing after a
// failed step runs.
func (g *Gate) serve(ctx context.Context, t *gatedTool, req *mcp.CallToolRequest) (*mcp.CallToolResult, *Refusal) {
	_, span := g.step(ctx, "decode")
	k, r := g.decode(t, req)
	endStep(span, r)
	if r != nil {
		g.journalRefusal(ctx, k, t.Name, r)
		return nil, r
	}
	rctx, span := g.step(ctx, "rules")
	r = g.checkRules(rctx, k)
	endStep(span, r)
	if r != nil {
		if r.Reason != ReasonPolicyDenied && g.carriesGenuineApproval(k) {
			// The approved target no longer resolves or previews (deleted,
			// replaced by a directory, behind a swapped-in symlink).
			r = refusal(ReasonTargetChanged, "what the call points at changed since it was approved (now %s: %s); preview it again", r.Reason, r.Message)
		}
		g.journalRefusal(ctx, k, t.Name, r)
		return nil, r
	}

	var res *mcp.CallToolResult
	switch {
	case k.token != nil && k.t.mode == ModeChannel:
		res, r = g.resumeChannel(ctx, k)
	case k.token != nil:
		res, r = g.redeemToken(ctx, k)
	case req.Params.RequestState != "" || len(req.Params.InputResponses) > 0:
		res, r = g.redeemElicitation(ctx, k, req.Params.RequestState, req.Params.InputResponses)
	default:
		res, r = g.firstCall(ctx, k)
	}
	if r != nil {
		g.journalRefusal(ctx, k, t.Name, r)
	}
	return res, r
}

// carriesGenuineApproval reports whether the call presents a grant this
// server sealed for this tool and principal. It only authenticates; the
// grant is checked in full and redeemed later, on the approval path.
func (g *Gate) carriesGenuineApproval(k *call) bool {
	sealed := k.req.Params.RequestState
	if k.token != nil {
		sealed = *k.token
	}
	if sealed == "" {
		return false
	}
	gr, err := openGrant(g.ring, g.opts.Audience, sealed)
	return err == nil && gr.Tool == k.t.Name && gr.Principal == k.c.Principal
}

// decode checks the arguments before anything else looks at them: duplicate
// keys, keys equal under case folding, a case variant of approval_token or
// a schema violation refuse the call, since a digest must mean one call to
// every parser.
func (g *Gate) decode(t *gatedTool, req *mcp.CallToolRequest) (*call, *Refusal) {
	k := &call{t: t, req: req, now: g.opts.Clock()}
	k.c = Call{Tool: t.Name, Principal: g.opts.Principal(req)}
	if req.Session != nil {
		k.c.Session = req.Session.ID()
	}
	rest, tok, err := canon.SplitMember(req.Params.Arguments, TokenField)
	if errors.Is(err, canon.ErrFoldedKey) {
		// Rules and previews read keys exactly; a tool decoding with
		// encoding/json matches them case-insensitively. Two spellings of
		// one key would let them judge one call while another runs.
		return k, refusal(ReasonArgumentsInvalid, "argument names must differ in more than letter case, and %s must be spelt exactly: %v", TokenField, err)
	}
	if err != nil {
		return k, refusal(ReasonArgumentsInvalid, "arguments are not a valid JSON object: %v", err)
	}
	if t.OwnsTokenField {
		// approval_token is the tool's own argument (checked above for
		// case variants all the same): it stays in the call and its digest.
		if rest = bytes.TrimSpace(req.Params.Arguments); len(rest) == 0 || string(rest) == "null" {
			rest = []byte("{}")
		}
		tok = nil
	}
	if tok != nil {
		var s string
		if err := json.Unmarshal(tok, &s); err != nil {
			return k, refusal(ReasonArgumentsInvalid, "%s must be a string", TokenField)
		}
		k.token = &s
	}
	var inst any
	if err := json.Unmarshal(req.Params.Arguments, &inst); err != nil || inst == nil {
		inst = map[string]any{}
	}
	if err := t.schema.Validate(inst); err != nil {
		return k, refusal(ReasonArgumentsInvalid, "arguments do not match the tool's schema: %v", err)
	}
	canonical, err := canon.Canonical(rest)
	if err != nil {
		return k, refusal(ReasonArgumentsInvalid, "arguments cannot be canonicalized: %v", err)
	}
	k.c.Arguments = canonical
	if k.digest, err = canon.Digest(canonical); err != nil {
		return k, refusal(ReasonArgumentsInvalid, "arguments cannot be digested: %v", err)
	}
	return k, nil
}

// checkRules resolves the call, runs deny and allow rules, and previews. It
// runs before any approval path so that nothing a client answers can
// override a rule.
func (g *Gate) checkRules(ctx context.Context, k *call) *Refusal {
	var r *Refusal
	if k.resolved, r = g.resolve(ctx, k); r != nil {
		return r
	}
	for _, rule := range k.t.Deny {
		hit, err := matchRule(ctx, rule, k.c, k.resolved)
		if err != nil {
			return refusal(ReasonPolicyDenied, "deny rule %q failed, so the call is denied: %v", rule.Name, err)
		}
		if hit {
			return refusal(ReasonPolicyDenied, "denied by rule %q", rule.Name)
		}
	}
	if len(k.t.Allow) > 0 {
		allowed := false
		for _, rule := range k.t.Allow {
			if hit, err := matchRule(ctx, rule, k.c, k.resolved); err == nil && hit {
				allowed = true
				break
			}
		}
		if !allowed {
			return refusal(ReasonPolicyDenied, "no allow rule matches this call")
		}
	}
	plan, target, r := g.preview(ctx, k.t, k.c, k.resolved)
	if r != nil {
		return r
	}
	k.plan, k.target = plan, target
	return nil
}

func (g *Gate) resolve(ctx context.Context, k *call) (Resolved, *Refusal) {
	if k.t.Resolve == nil {
		return nil, nil
	}
	ctx, span := g.step(ctx, "resolve")
	res, r := g.runResolve(ctx, k)
	endStep(span, r)
	return res, r
}

func (g *Gate) runResolve(ctx context.Context, k *call) (Resolved, *Refusal) {
	var res Resolved
	err := safely(func() error {
		var err error
		res, err = k.t.Resolve(ctx, k.c)
		return err
	})
	if err != nil {
		return nil, asRefusal(err, ReasonResolverFailed)
	}
	if len(res) == 0 {
		return nil, refusal(ReasonResolverFailed, "the resolver found nothing for these arguments")
	}
	return res, nil
}

// preview asks the tool for its plan and digests what the approval binds:
// the resolved context and the targets with their state.
func (g *Gate) preview(ctx context.Context, t *gatedTool, c Call, res Resolved) (_ Plan, _ string, r *Refusal) {
	ctx, span := g.step(ctx, "preview")
	defer func() { endStep(span, r) }()
	var plan Plan
	err := safely(func() error {
		var err error
		plan, err = t.Preview(ctx, c, res)
		return err
	})
	if err != nil {
		return Plan{}, "", asRefusal(err, ReasonPreviewFailed)
	}
	if strings.TrimSpace(plan.Summary) == "" {
		return Plan{}, "", refusal(ReasonPreviewFailed, "the tool's preview has no summary")
	}
	b, err := json.Marshal(struct {
		Resolved Resolved `json:"resolved"`
		Targets  []Target `json:"targets"`
	}{res, plan.Targets})
	if err != nil {
		return Plan{}, "", refusal(ReasonResolverFailed, "resolved context cannot be encoded: %v", err)
	}
	// Not RFC 8785: the resolved context is the server's own data (inodes,
	// nanosecond times) that need not fit an IEEE double, and encoding/json
	// is deterministic for it (sorted map keys, exact integers).
	sum := sha256.Sum256(b)
	// Redacted after the digest: the binding covers what the tool saw.
	return redactPlan(plan, journal.FindSecrets(c.Arguments, t.SecretFields)), hex.EncodeToString(sum[:]), nil
}

// matchRule runs a rule; only an exact true with a nil error is a match. A
// panic is an error.
func matchRule(ctx context.Context, rule Rule, c Call, res Resolved) (bool, error) {
	if rule.Match == nil {
		return false, fmt.Errorf("rule %q has no Match", rule.Name)
	}
	var hit bool
	err := safely(func() error {
		var err error
		hit, err = rule.Match(ctx, c, res)
		return err
	})
	if err != nil {
		return false, err
	}
	return hit, nil
}

// safely runs f and turns a panic into an error.
func safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}

// firstCall chooses the approval path for a call that carries no approval.
func (g *Gate) firstCall(ctx context.Context, k *call) (*mcp.CallToolResult, *Refusal) {
	t := k.t
	if t.mode != ModeElicit && t.minAssur <= AssuranceClientRelayed {
		for _, rule := range t.AutoApprove {
			hit, err := matchRule(ctx, rule, k.c, k.resolved)
			if err != nil {
				g.opts.Logger.Warn("auto-approve rule failed; asking instead", "tool", t.Name, "rule", rule.Name, "err", err)
				continue
			}
			if hit {
				nonce, err := newNonce()
				if err != nil {
					return nil, refusal(ReasonLedgerUnavailable, "%v", err)
				}
				return g.execute(ctx, k, k.target, Approval{
					Decision: journal.PolicyAutoApproved, By: rule.Name,
					Assurance: AssuranceClientRelayed, CallID: nonce,
				})
			}
		}
	}
	if res, r, ok := g.useStanding(ctx, k); ok {
		return res, r
	}
	canElicit := clientCanElicit(k.req)
	switch t.mode {
	case ModeChannel:
		return g.askChannel(ctx, k)
	case ModeElicit:
		if !canElicit {
			return nil, elicitationUnsupported(t.Name, !t.OwnsTokenField, "this tool needs the user's approval through the client, but %s", whyCannotElicit(k.req))
		}
		return g.askElicitation(ctx, k)
	case ModeToken:
		if t.OwnsTokenField {
			return nil, refusal(ReasonPolicyDenied, "%s takes its own approval_token argument, so this server has no one-time token path for it: approve it by elicitation or the channel", t.Name)
		}
		if !g.tokenAllowed(t, k.now) {
			return nil, refusal(ReasonPolicyDenied, "%s is irreversible and the operator has not allowed approval tokens for it", t.Name)
		}
		return g.issueToken(ctx, k)
	default: // ModeAuto
		if canElicit {
			return g.askElicitation(ctx, k)
		}
		if g.tokenAllowed(t, k.now) {
			return g.issueToken(ctx, k)
		}
		if t.OwnsTokenField {
			return nil, elicitationUnsupported(t.Name, false, "%s takes its own approval_token argument, so this server has no one-time token path for it, and it needs the user's approval through the client, but %s", t.Name, whyCannotElicit(k.req))
		}
		return nil, elicitationUnsupported(t.Name, true, "%s is irreversible and needs the user's approval through the client, but %s", t.Name, whyCannotElicit(k.req))
	}
}

// whyCannotElicit says why clientCanElicit is false, so that an operator
// whose client did declare elicitation learns what is in the way.
func whyCannotElicit(req *mcp.CallToolRequest) string {
	caps := req.ClientCapabilities()
	switch {
	case caps == nil:
		// Only a session the server never saw initialize has no
		// capabilities: stateless HTTP with a client before MRTR.
		return "this connection carries no client capabilities: a client on protocol " + req.ProtocolVersion() +
			" declares elicitation once per session and is asked in-call, which stateless HTTP cannot do; serve it over stdio or HTTP with sessions (mcpsafe files/proxy: without --http-stateless), or use a client on protocol " + mrtrProtocol
	case caps.Elicitation == nil:
		return "the client did not declare the elicitation capability"
	default:
		return "the client declared only URL elicitation, which cannot show the approval form"
	}
}

func clientCanElicit(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	// A client that declares only URL elicitation cannot show our form.
	return !(caps.Elicitation.Form == nil && caps.Elicitation.URL != nil)
}

// issue creates a grant for this call, records its nonce in the ledger and
// seals it.
func (g *Gate) issue(ctx context.Context, k *call, mode string) (*grant, string, *Refusal) {
	nonce, err := newNonce()
	if err != nil {
		return nil, "", refusal(ReasonLedgerUnavailable, "%v", err)
	}
	exp := k.now.Add(g.opts.TTL)
	gr := &grant{
		Version: grantVersion, Tool: k.t.Name, Args: k.digest, Resolved: k.target,
		Policy: k.t.policy, Principal: k.c.Principal, Audience: g.opts.Audience,
		IssuedAt: k.now.UnixMilli(), ExpiresAt: exp.UnixMilli(), Nonce: nonce, Mode: mode,
	}
	if err := g.pending.add(nonce, g.pendingKey(k), exp, k.now); err != nil {
		return nil, "", refusal(ReasonTooManyPending, "%v; approve or let the pending ones expire first", err)
	}
	if err := g.ledger.Issue(ctx, nonce, exp); err != nil {
		g.pending.done(nonce)
		return nil, "", refusal(ReasonLedgerUnavailable, "the approval ledger could not record the request: %v", err)
	}
	sealed, err := sealGrant(g.ring, gr)
	if err != nil {
		g.pending.done(nonce)
		return nil, "", refusal(ReasonLedgerUnavailable, "sealing the approval failed: %v", err)
	}
	return gr, sealed, nil
}

func (g *Gate) issueToken(ctx context.Context, k *call) (_ *mcp.CallToolResult, r *Refusal) {
	ctx, span := g.step(ctx, "ask")
	defer func() { endStep(span, r) }()
	view := planView(k.plan)
	shown := renderPlan(view) + "\n" + renderArguments(argumentLines(k.c.Arguments, k.t.SecretFields))
	if r := checkPromptSize(shown); r != nil {
		return nil, r
	}
	gr, sealed, r := g.issue(ctx, k, grantToken)
	if r != nil {
		return nil, r
	}
	if !g.park(gr.Nonce, "token", k, nil, gr.expires()) {
		g.spend(ctx, gr.Nonce)
		return nil, shuttingDown("no approval is handed out")
	}
	exp := gr.expires().UTC().Format(time.RFC3339Nano)
	text := fmt.Sprintf("Approval required before %s runs. Show this plan to the user, word for word, and ask them to approve it:\n\n%s\n\n"+
		"Only if the user approves, call %s again with exactly the same arguments plus %q set to the approval_token of the JSON below (valid until %s, single use). Do not approve on the user's behalf.",
		k.t.Name, shown, k.t.Name, TokenField, exp)
	sc := ApprovalRequired{Status: "approval_required", ApprovalToken: sealed, ExpiresAt: exp, Plan: view}
	// The spec asks for structured content serialized in a text block too:
	// clients that forward only content would leave the model without the
	// token.
	js, err := json.Marshal(sc)
	if err != nil {
		g.spend(ctx, gr.Nonce)
		return nil, refusal(ReasonLedgerUnavailable, "encoding the approval failed: %v", err)
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}, &mcp.TextContent{Text: string(js)}},
		StructuredContent: sc,
	}, nil
}

// openFor authenticates a sealed grant and checks every binding against
// this call, then spends it in the ledger. The order matters: verify before
// parse, bindings before redeem, and redeem before the answer is looked at.
func (g *Gate) openFor(ctx context.Context, k *call, sealed, mode string) (_ *grant, r *Refusal) {
	ctx, span := g.step(ctx, "redeem")
	defer func() { endStep(span, r) }()
	gr, r := g.checkGrant(k, sealed, mode)
	if r != nil {
		return nil, r
	}
	ok, err := g.ledger.Redeem(ctx, gr.Nonce)
	g.pending.done(gr.Nonce)
	g.unpark(gr.Nonce)
	if err != nil {
		return nil, refusal(ReasonLedgerUnavailable, "the approval ledger could not be checked: %v", err)
	}
	if !ok {
		return nil, refusal(ReasonTokenSpent, "this approval was already used or has expired")
	}
	if o := g.opts.Observer; o != nil {
		o.HumanDecision(mode, k.now.Sub(time.UnixMilli(gr.IssuedAt)))
	}
	return gr, nil
}

// checkGrant authenticates a sealed grant and checks every binding against
// this call, without spending it.
func (g *Gate) checkGrant(k *call, sealed, mode string) (*grant, *Refusal) {
	gr, err := openGrant(g.ring, g.opts.Audience, sealed)
	if err != nil {
		return nil, refusal(ReasonTokenInvalid, "the approval is not valid for this server")
	}
	switch {
	case gr.Mode != mode:
		return nil, refusal(ReasonTokenInvalid, "the approval was issued for another approval path")
	case gr.Tool != k.t.Name:
		return nil, refusal(ReasonTokenInvalid, "the approval was issued for another tool")
	case gr.Principal != k.c.Principal:
		return nil, refusal(ReasonTokenInvalid, "the approval was issued to another principal")
	case gr.Policy != k.t.policy:
		return nil, refusal(ReasonTokenInvalid, "the tool's policy changed since the approval was issued")
	case gr.Policy != g.currentPolicy(k.t.Name):
		// The human was asked while the call waited in this handler, and
		// meanwhile the tool was re-registered with another definition.
		return nil, refusal(ReasonTokenInvalid, "the tool was redefined or removed while the approval was pending")
	case time.UnixMilli(gr.IssuedAt).After(k.now.Add(maxClockSkew)):
		return nil, refusal(ReasonTokenInvalid, "the approval claims to be issued in the future")
	case !k.now.Before(gr.expires()):
		return nil, refusal(ReasonTokenExpired, "the approval expired at %s; preview the call again", gr.expires().UTC().Format(time.RFC3339))
	case gr.Args != k.digest:
		return nil, refusal(ReasonArgumentsChanged, "the arguments differ from the ones that were approved; preview the call again")
	}
	return gr, nil
}

func (g *Gate) redeemToken(ctx context.Context, k *call) (*mcp.CallToolResult, *Refusal) {
	if !g.tokenAllowed(k.t, k.now) || k.t.mode == ModeElicit || k.t.mode == ModeChannel {
		return nil, refusal(ReasonPolicyDenied, "approval tokens are not allowed for %s", k.t.Name)
	}
	gr, r := g.openFor(ctx, k, *k.token, grantToken)
	if r != nil {
		return nil, r
	}
	return g.execute(ctx, k, gr.Resolved, Approval{
		Decision: journal.TokenRedeemed, By: "token", Assurance: AssuranceClientRelayed, CallID: gr.Nonce,
	})
}

// approvalSchema is the form the human answers: one boolean, and when
// standing grants are offered, a choice among them (absent: this call only).
func approvalSchema(offers []GrantOffer) map[string]any {
	props := map[string]any{
		"approve": map[string]any{
			"type":        "boolean",
			"title":       "Approve",
			"description": "Set to true to allow exactly the action described above.",
		},
	}
	if len(offers) > 0 {
		choices := []any{map[string]any{"const": OnceOffer, "title": "Just this call"}}
		for _, o := range offers {
			choices = append(choices, map[string]any{"const": o.ID, "title": o.Label})
		}
		props[grantField] = map[string]any{
			"type":        "string",
			"title":       "Approve for",
			"description": "Just this call, or this call and calls like it for a while (see the message).",
			"oneOf":       choices,
			"default":     OnceOffer,
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": []string{"approve"}}
}

// grantField is the form field that chooses a standing grant.
const grantField = "grant"

func elicitParams(message string, offers []GrantOffer) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:            "form",
		Message:         message,
		RequestedSchema: approvalSchema(offers),
	}
}

// askElicitation asks the human through the client. Clients that speak
// MRTR get an input-required result with the sealed grant as requestState;
// older clients are asked in-call, and their answer goes through the same
// verification as a retry would.
func (g *Gate) askElicitation(ctx context.Context, k *call) (*mcp.CallToolResult, *Refusal) {
	offers, err := g.offers(k, AssuranceClientRelayed)
	if err != nil {
		return nil, refusal(ReasonPreviewFailed, "%v", err)
	}
	msg, r := g.approvalMessage(k, offers)
	if r != nil {
		return nil, r
	}
	gr, sealed, r := g.issue(ctx, k, grantElicit)
	if r != nil {
		return nil, r
	}
	params := elicitParams(msg, offers)
	if k.req.ProtocolVersion() >= mrtrProtocol {
		if !g.park(gr.Nonce, "elicitation", k, nil, gr.expires()) {
			g.spend(ctx, gr.Nonce)
			return nil, shuttingDown("no approval is asked for")
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{approvalInputID: params},
			RequestState:  sealed,
		}, nil
	}
	waited, ok := g.waitOn(gr.Nonce, k.t.Name, "elicitation")
	if !ok {
		g.spend(ctx, gr.Nonce)
		return nil, shuttingDown("no approval is asked for")
	}
	ectx, cancel := context.WithTimeout(ctx, g.opts.ElicitTimeout)
	defer cancel()
	defer g.onStop(cancel)()
	ectx, span := g.step(ectx, "ask")
	res, err := k.req.Session.Elicit(ectx, params)
	span.End()
	waited()
	if g.stopping() {
		// Whatever the user answered: the approval was withdrawn when
		// shutdown began.
		g.spend(ctx, gr.Nonce)
		return nil, shuttingDown("the pending approval was withdrawn")
	}
	if err != nil {
		g.spend(ctx, gr.Nonce)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ectx.Err(), context.DeadlineExceeded) {
			return nil, refusal(ReasonTimeout, "no answer from the user within %s", g.opts.ElicitTimeout)
		}
		return nil, refusal(ReasonElicitationFailed, "asking the user failed: %v", err)
	}
	k.now = g.opts.Clock() // the answer may have taken a while; expiry counts from now
	return g.redeemElicitation(ctx, k, sealed, mcp.InputResponseMap{approvalInputID: res})
}

// redeemElicitation verifies the request state and then reads the answer.
// The state is spent before the answer is looked at, so a declined state
// can never be accepted later.
func (g *Gate) redeemElicitation(ctx context.Context, k *call, state string, answers mcp.InputResponseMap) (*mcp.CallToolResult, *Refusal) {
	if k.t.mode == ModeToken || k.t.mode == ModeChannel {
		return nil, refusal(ReasonPolicyDenied, "%s does not take approvals through the client's elicitation", k.t.Name)
	}
	if state == "" {
		return nil, refusal(ReasonTokenInvalid, "an answer arrived without the request state it belongs to")
	}
	gr, r := g.openFor(ctx, k, state, grantElicit)
	if r != nil {
		return nil, r
	}
	if r := approvalAnswer(answers); r != nil {
		return nil, r
	}
	choice, r := grantChoice(answers)
	if r != nil {
		return nil, r
	}
	a := Approval{Decision: journal.ClientAccepted, By: "client", Assurance: AssuranceClientRelayed, CallID: gr.Nonce}
	if r := g.chooseStanding(ctx, k, choice, &a, gr.Resolved); r != nil {
		return nil, r
	}
	return g.execute(ctx, k, gr.Resolved, a)
}

// chooseStanding creates the standing grant the approver chose, if any.
// The offers are computed again from the same call and policy; only an
// exact listed choice counts, and anything else refuses the approval.
func (g *Gate) chooseStanding(ctx context.Context, k *call, choice *string, a *Approval, approvedTarget string) *Refusal {
	if choice == nil || *choice == OnceOffer {
		return nil
	}
	// The offers derive from the resolved state: recomputed on another
	// state they could differ from what the approver saw. The human may
	// have taken a while (in-call elicitation, channel), so look again.
	res, r := g.resolve(ctx, k)
	if r != nil {
		return refusal(ReasonTargetChanged, "what the call points at changed since it was approved (now %s: %s); preview it again", r.Reason, r.Message)
	}
	_, target, r := g.preview(ctx, k.t, k.c, res)
	if r != nil || target != approvedTarget {
		return refusal(ReasonTargetChanged, "what the call points at changed since it was approved; preview it again")
	}
	k.resolved = res
	offers, err := g.offers(k, a.Assurance)
	if err != nil {
		return refusal(ReasonPreviewFailed, "%v", err)
	}
	if len(offers) == 0 && *choice != OnceOffer {
		return refusal(ReasonDeclined, "the answer chose a standing grant, and none was offered")
	}
	o, err := chosenOffer(offers, *choice)
	if err != nil {
		return refusal(ReasonDeclined, "%v", err)
	}
	if o == nil {
		return nil
	}
	id, r := g.createStanding(ctx, k, o, *a)
	if r != nil {
		return r
	}
	a.Grant = id
	return nil
}

// approvalAnswer accepts only action "accept" with approve exactly the JSON
// boolean true. Everything else is a refusal.
func approvalAnswer(answers mcp.InputResponseMap) *Refusal {
	if len(answers) != 1 {
		return refusal(ReasonDeclined, "expected exactly one answer, got %d", len(answers))
	}
	res, ok := answers[approvalInputID].(*mcp.ElicitResult)
	if !ok || res == nil {
		return refusal(ReasonDeclined, "the answer is not the approval form")
	}
	switch res.Action {
	case "accept":
		if v, ok := res.Content["approve"].(bool); ok && v {
			return nil
		}
		return refusal(ReasonDeclined, "the user did not approve")
	case "decline":
		return refusal(ReasonDeclined, "the user declined; do not retry unless the user asks")
	case "cancel":
		return refusal(ReasonCancelled, "the user dismissed the approval request")
	default:
		return refusal(ReasonDeclined, "unrecognized answer %q counts as no", res.Action)
	}
}

// grantChoice returns the standing grant an accepted answer chose, nil when
// the answer has no such field. The field must be a string; the caller
// checks it against the offers.
func grantChoice(answers mcp.InputResponseMap) (*string, *Refusal) {
	res, _ := answers[approvalInputID].(*mcp.ElicitResult)
	if res == nil {
		return nil, refusal(ReasonDeclined, "the answer is not the approval form")
	}
	raw, present := res.Content[grantField]
	if !present {
		return nil, nil
	}
	choice, ok := raw.(string)
	if !ok {
		return nil, refusal(ReasonDeclined, "the %s field of the answer is not a string", grantField)
	}
	return &choice, nil
}

// execute is the shared tail of every approval path: re-resolve and compare
// with what was approved, write the approval to the journal durably, run,
// and record the outcome.
func (g *Gate) execute(ctx context.Context, k *call, approvedTarget string, a Approval) (*mcp.CallToolResult, *Refusal) {
	if a.Assurance < k.t.minAssur {
		return nil, refusal(ReasonAssuranceTooLow, "%s requires a stronger approval than %s", k.t.Name, a.Decision)
	}
	// What was approved may no longer resolve at all (deleted, replaced
	// by a directory or a symlink): that too is a changed target.
	res, plan, r := g.recheck(ctx, k, approvedTarget)
	if r != nil {
		return nil, r
	}
	a.Resolved, a.Plan = res, plan
	outcome := g.record(k, journal.Executed)
	outcome.Call, outcome.Summary = a.CallID, plan.Summary
	// The point of no return: once shutdown began no Execute starts, and
	// one admitted before it is waited for (the grace) or cut.
	ectx, claim, done, ok := g.admit(ctx, outcome)
	if !ok {
		return nil, shuttingDown("the approved call was not started")
	}
	defer done()
	rec := g.record(k, a.Decision)
	rec.Call, rec.By, rec.Summary, rec.Grant = a.CallID, a.By, plan.Summary, a.Grant
	rec.Assurance, rec.Evidence = a.Assurance.String(), a.Evidence
	if err := g.opts.Journal.Append(ctx, rec); err != nil {
		return nil, refusal(ReasonJournalUnavailable, "the audit journal could not record the approval, so nothing ran: %v", err)
	}
	var out *mcp.CallToolResult
	err := safely(func() error {
		var err error
		out, err = k.t.Execute(ectx, k.c, a)
		return err
	})
	if err == nil && out == nil {
		err = errors.New("the tool returned no result")
	}
	if err != nil {
		outcome.Decision, outcome.Error = journal.Failed, err.Error()
	}
	if err != nil && ectx.Err() != nil {
		// The caller gave up, or the shutdown grace ended, while Execute
		// ran: whatever Execute reports (usually the cancellation itself)
		// says nothing about whether the action took effect, so the
		// record must not claim it failed.
		outcome.Decision = journal.Ambiguous
		outcome.Reason = "the caller cancelled while the call was running; it may or may not have taken effect: check by hand"
		if errors.Is(context.Cause(ectx), errGraceOver) {
			outcome.Reason = "the server shut down (the shutdown grace ended) while the call was running; it may or may not have taken effect: check by hand"
		}
	}
	// The outcome is written even when the caller cancelled: what ran must
	// be on record, and a cancelled ctx would refuse the write. Shutdown
	// writes it instead when Execute outlives the grace by too much.
	jctx, jcancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeWriteTimeout)
	defer jcancel()
	if claim() { // (else Shutdown journaled it ambiguous already)
		if jerr := g.opts.Journal.Append(jctx, outcome); jerr != nil {
			// The file journal keeps it and writes it late once writes
			// work again; if the process stops first, the next Open marks
			// the call ambiguous.
			g.opts.Logger.Error("journal: outcome not recorded yet", "tool", k.t.Name, "call", a.CallID, "err", jerr)
		}
	}
	if err != nil {
		var rf *Refusal
		if errors.As(err, &rf) {
			return nil, rf
		}
		return &mcp.CallToolResult{
			IsError: true,
			Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s failed: %v", k.t.Name, err)}},
		}, nil
	}
	return out, nil
}

// recheck resolves and previews the call again right before it runs and
// compares the target with the approved one.
func (g *Gate) recheck(ctx context.Context, k *call, approvedTarget string) (_ Resolved, _ Plan, r *Refusal) {
	ctx, span := g.step(ctx, "recheck")
	defer func() { endStep(span, r) }()
	res, r := g.resolve(ctx, k)
	if r != nil {
		return nil, Plan{}, refusal(ReasonTargetChanged, "what the call points at changed since it was approved (now %s: %s); preview it again", r.Reason, r.Message)
	}
	plan, target, r := g.preview(ctx, k.t, k.c, res)
	if r != nil {
		return nil, Plan{}, refusal(ReasonTargetChanged, "the call can no longer be previewed as approved (%s: %s)", r.Reason, r.Message)
	}
	if target != approvedTarget {
		return nil, Plan{}, refusal(ReasonTargetChanged, "what the call points at changed since it was approved; preview it again")
	}
	return res, plan, nil
}

func (g *Gate) record(k *call, decision string) journal.Record {
	return journal.Record{
		Tool: k.t.Name, Principal: k.c.Principal, Session: k.c.Session,
		ArgsDigest: k.digest, Args: k.c.Arguments, Decision: decision,
		SecretFields: k.t.SecretFields,
	}
}

// journalRefusal records a refusal. It is best effort: the call is refused
// whether or not the record lands.
func (g *Gate) journalRefusal(ctx context.Context, k *call, tool string, r *Refusal) {
	var rec journal.Record
	if k != nil && k.t != nil {
		rec = g.record(k, journal.Refused)
		rec.Summary = k.plan.Summary
		// Refused before there was a plan (the target missing, outside
		// the roots...): the message is what names the target.
		if rec.Summary == "" && r.Reason != ReasonArgumentsInvalid {
			rec.Summary = r.Message
		}
	} else {
		rec = journal.Record{Tool: tool, Decision: journal.Refused}
	}
	switch r.Reason {
	case ReasonDeclined:
		rec.Decision = journal.Declined
	case ReasonCancelled:
		rec.Decision = journal.Cancelled
	case ReasonTimeout:
		rec.Decision = journal.Timeout
	}
	if r.Reason == ReasonArgumentsInvalid {
		rec.Args = nil // unparseable input is not worth keeping and may hold anything
	}
	rec.Reason = r.Reason
	if r.Reason == ReasonJournalUnavailable {
		// The operator must hear of a full disk even if no model reports it.
		g.opts.Logger.Error("journal: approval not recorded, so the call was refused", "tool", tool, "err", r.Message)
	}
	// A caller that cancelled must not take its refusal out of the
	// journal with it: the write gets its own bounded context.
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalGrace)
	defer cancel()
	if err := g.opts.Journal.Append(jctx, rec); err != nil {
		level := slog.LevelWarn
		if errors.Is(err, journal.ErrRefusalsCapped) {
			level = slog.LevelDebug // the journal noted the limit once; not a log line per refusal
		}
		g.opts.Logger.Log(ctx, level, "journal: refusal not recorded", "tool", tool, "reason", r.Reason, "err", err)
	}
}

// currentPolicy is the policy hash of the tool registered as name now, or
// "" when none is.
func (g *Gate) currentPolicy(name string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.tools[name]; ok {
		return t.policy
	}
	return ""
}

// spend redeems a grant that will never be used, so that it can never be
// used later and stops counting against the pending caps.
func (g *Gate) spend(ctx context.Context, nonce string) {
	g.pending.done(nonce)
	g.unpark(nonce)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalGrace)
	defer cancel()
	if _, err := g.ledger.Redeem(sctx, nonce); err != nil {
		g.opts.Logger.Warn("ledger: could not spend an abandoned grant; it expires on its own", "err", err)
	}
}

type noJournal struct{}

func (noJournal) Append(context.Context, journal.Record) error { return nil }
