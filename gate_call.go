package mcpsafe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outcomeWriteTimeout bounds the outcome's journal write, which no longer
// follows the caller's cancellation.
const outcomeWriteTimeout = time.Minute

// call is one gated tools/call on its way through the gate.
type call struct {
	t      *gatedTool
	req    *mcp.CallToolRequest
	c      Call
	in     any // the arguments as a ToolFor's In; nil for a Tool
	token  *string
	st     state
	plan   Plan
	target string // digest of the resolved state + plan targets
	now    time.Time
	// protocolErr is a JSON-RPC error Execute returned, which the client
	// gets as it is (the journal records the call as failed).
	protocolErr *jsonrpc.Error
	// linkSent ends a URL elicitation of the approval page's link
	// (approval_page.go), nil when none was sent.
	linkSent func()
	// secrets are the secret values among the arguments (secretsOf).
	secrets *journal.Secrets
	// opened is the last sealed value this call authenticated (openSealed).
	opened *openedGrant
	// redeeming is the grant whose Redeeming record is durable while no
	// approval record followed it yet: a refusal of this call carries it
	// as its Call, closing the redemption in the journal.
	redeeming string
}

// openedGrant is a sealed value and what openGrant made of it.
type openedGrant struct {
	sealed string
	gr     *grant
	err    error
}

// openSealed is openGrant for this call: the approval a call carries is
// looked at by several steps (is it a card handle, a channel or page
// handle, a token), and each would otherwise authenticate and parse it
// again. Only the outcome of openGrant is kept, so nothing is parsed
// before it was authenticated; the grant is never modified.
func (g *Gate) openSealed(k *call, sealed string) (*grant, error) {
	if o := k.opened; o != nil && o.sealed == sealed {
		return o.gr, o.err
	}
	gr, err := openGrant(g.ring, g.opts.Audience, sealed)
	k.opened = &openedGrant{sealed: sealed, gr: gr, err: err}
	return gr, err
}

func (g *Gate) handler(t *gatedTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if !g.enterCall() {
			r := shuttingDown("it takes no new calls")
			g.journalRefusal(ctx, nil, t.Name, r)
			return t.refused(r), nil
		}
		defer g.exitCall()
		ctx, span := g.startCall(ctx, t.Name, req)
		res, r, perr := g.serve(ctx, t, req)
		g.observe(t.Name, res, r)
		endStep(span, r)
		switch {
		case r != nil:
			return t.refused(r), nil
		case perr != nil:
			return nil, perr
		}
		return res, nil
	}
}

// refused is the result that reports r to the model. A tool that
// advertises an output schema gets it without structuredContent (the text
// still says "Refused (REASON): ..."): a refusal does not follow the
// tool's schema, and clients of TypeScript SDK 1.x validate the structured
// content of every result against it, error or not, and turn the refusal
// into a protocol error (-32602 "Structured content does not match the
// tool's output schema") the model never reads. The specification asks a
// structured result to follow the schema; an error result need carry none.
func (t *gatedTool) refused(r *Refusal) *mcp.CallToolResult {
	res := r.Result()
	if t.outSchema {
		res.StructuredContent = nil
	}
	return res
}

// serve runs one call down the path in design.md. It returns a result, a
// refusal, or the protocol error Execute returned; every early return is a
// refusal, so nothing after a failed step runs.
func (g *Gate) serve(ctx context.Context, t *gatedTool, req *mcp.CallToolRequest) (*mcp.CallToolResult, *Refusal, error) {
	_, span := g.step(ctx, "mcpsafe.decode")
	k, r := g.decode(t, req)
	endStep(span, r)
	if r != nil {
		g.journalRefusal(ctx, k, t.Name, r)
		return nil, r, nil
	}
	if res, r, ok := g.cardLookup(ctx, k); ok {
		// The model's handle of an approval card only looks the outcome
		// up, which the target's later state does not change.
		return res, r, nil
	}
	rctx, span := g.step(ctx, "mcpsafe.rules")
	r = g.checkRules(rctx, k)
	endStep(span, r)
	if r != nil {
		if r.Reason != ReasonPolicyDenied && g.carriesGenuineApproval(k) {
			// The approved target no longer resolves or previews (deleted,
			// replaced by a directory, behind a swapped-in symlink).
			r = refusal(ReasonTargetChanged, "what the call points at changed since it was approved (now %s: %s); preview it again", r.Reason, r.Message)
		}
		g.journalRefusal(ctx, k, t.Name, r)
		return nil, r, nil
	}

	var res *mcp.CallToolResult
	switch {
	case k.token != nil && g.handleMode(k, *k.token) != "":
		// A handle of a pending channel or page request.
		res, r = g.resumeVia(ctx, k, g.via(g.handleMode(k, *k.token)), *k.token)
	case k.token != nil && k.t.mode == ModeChannel:
		res, r = g.resumeVia(ctx, k, g.channel, *k.token)
	case k.token != nil:
		res, r = g.redeemToken(ctx, k)
	case g.handleMode(k, req.Params.RequestState) != "":
		// The retry after a URL elicitation of the page's (or the
		// approval service's) link: the client's answer only says the
		// person agreed to open it.
		res, r = g.resumeVia(ctx, k, g.via(g.handleMode(k, req.Params.RequestState)), req.Params.RequestState)
	case req.Params.RequestState != "" || len(req.Params.InputResponses) > 0:
		res, r = g.redeemElicitation(ctx, k, req.Params.RequestState, req.Params.InputResponses, false)
	default:
		res, r = g.firstCall(ctx, k)
	}
	if r != nil {
		g.journalRefusal(ctx, k, t.Name, r)
		return nil, r, nil
	}
	if k.protocolErr != nil {
		return nil, nil, k.protocolErr
	}
	return res, nil, nil
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
	gr, err := g.openSealed(k, sealed)
	return err == nil && gr.Tool == k.t.Name && gr.Principal == k.c.Principal
}

// firstCall chooses the approval path for a call that carries no approval.
func (g *Gate) firstCall(ctx context.Context, k *call) (*mcp.CallToolResult, *Refusal) {
	t := k.t
	if t.mode != ModeElicit && t.minAssur <= AssuranceClientRelayed {
		for _, rule := range t.AutoApprove {
			hit, err := matchRule(ctx, rule, k.c, k.st.resolved)
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
	case ModePage:
		return g.askVia(ctx, k, g.page)
	case ModeCard:
		return g.askCard(ctx, k)
	case ModeElicit:
		if !canElicit {
			return nil, elicitationUnsupported(t.Name, t.mode, !t.OwnsTokenField, "this tool needs the user's approval through the client, but %s", whyCannotElicit(k.req))
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
	default: // ModeAuto: the strongest path configured and open to the client
		switch {
		case g.page != nil && (g.channel == nil || t.minAssur <= g.page.page.Assurance()):
			return g.askVia(ctx, k, g.page)
		case g.channel != nil:
			return g.askChannel(ctx, k)
		case canElicit:
			return g.askElicitation(ctx, k)
		case g.cardFor(k):
			return g.askCard(ctx, k)
		}
		if g.tokenAllowed(t, k.now) {
			return g.issueToken(ctx, k)
		}
		if t.OwnsTokenField {
			return nil, elicitationUnsupported(t.Name, t.mode, false, "%s takes its own approval_token argument, so this server has no one-time token path for it, and it needs the user's approval through the client, but %s", t.Name, whyCannotElicit(k.req))
		}
		return nil, elicitationUnsupported(t.Name, t.mode, true, "%s is irreversible and needs the user's approval through the client, but %s", t.Name, whyCannotElicit(k.req))
	}
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
	st, plan, r := g.recheck(ctx, k, approvedTarget)
	if r != nil {
		return nil, r
	}
	a.Resolved, a.Plan = as[Resolved](st.v), plan
	// The point of no return: once shutdown began no Execute starts, and
	// one admitted before it is waited for (the grace) or cut.
	x := g.start(ctx, k, &a)
	if x == nil {
		return nil, shuttingDown("the approved call was not started")
	}
	defer x.done()
	if r := g.journalApproval(ctx, k, &a); r != nil {
		return nil, r
	}
	var out *mcp.CallToolResult
	err := safely(func() error {
		var err error
		out, err = k.t.execute(x.ectx, &k.c, k.in, st.v, &a)
		return err
	})
	return g.finish(ctx, k, x, a.CallID, out, err)
}

// start admits Execute (admit) with its outcome record. It is apart from
// execute, and so are the approval record and the outcome's handling, so
// that execute's own frame, on the stack while Execute runs, stays small:
// the request goroutine then needs no larger stack than an ungated call (a
// larger one is a copy of the whole stack per call).
func (g *Gate) start(ctx context.Context, k *call, a *Approval) *runningExec {
	outcome := g.record(k, journal.Executed)
	outcome.Call, outcome.Summary = a.CallID, a.Plan.Summary
	x, ok := g.admit(ctx, outcome)
	if !ok {
		return nil
	}
	return x
}

// finish records what Execute did (always, even when the caller left) and
// turns it into the call's answer.
func (g *Gate) finish(ctx context.Context, k *call, x *runningExec, callID string, out *mcp.CallToolResult, err error) (*mcp.CallToolResult, *Refusal) {
	outcome, ectx := x.rec, x.ectx
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
	if x.claim() { // (else Shutdown journaled it ambiguous already)
		if jerr := g.report(ctx, outcome, outcomeWriteTimeout); jerr != nil {
			// The file journal keeps it and writes it late once writes
			// work again; if the process stops first, the next Open marks
			// the call ambiguous.
			g.opts.Logger.Error("journal: outcome not recorded yet", "tool", k.t.Name, "call", callID, "err", jerr)
		}
	}
	if err != nil {
		var rf *Refusal
		if errors.As(err, &rf) {
			return nil, rf
		}
		if errors.As(err, &k.protocolErr) {
			return nil, nil
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
func (g *Gate) recheck(ctx context.Context, k *call, approvedTarget string) (_ state, _ Plan, r *Refusal) {
	ctx, span := g.step(ctx, "mcpsafe.recheck")
	defer func() { endStep(span, r) }()
	st, r := g.resolve(ctx, k)
	if r != nil {
		return state{}, Plan{}, refusal(ReasonTargetChanged, "what the call points at changed since it was approved (now %s: %s); preview it again", r.Reason, r.Message)
	}
	plan, target, r := g.preview(ctx, k, st)
	if r != nil {
		return state{}, Plan{}, refusal(ReasonTargetChanged, "the call can no longer be previewed as approved (%s: %s)", r.Reason, r.Message)
	}
	if target != approvedTarget {
		return state{}, Plan{}, refusal(ReasonTargetChanged, "what the call points at changed since it was approved; preview it again")
	}
	return st, plan, nil
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
