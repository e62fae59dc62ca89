package mcpsafe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// issue creates a grant for this call, records its nonce in the ledger and
// seals it.
func (g *Gate) issue(ctx context.Context, k *call, mode string) (*grant, string, *Refusal) {
	nonce, err := newNonce()
	if err != nil {
		return nil, "", refusal(ReasonLedgerUnavailable, "%v", err)
	}
	exp := k.now.Add(g.opts.TTL)
	gr := &grant{
		Version: grantVersion, Tool: k.t.Name, Args: k.c.ArgsDigest, Resolved: k.target,
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
	ctx, span := g.step(ctx, "mcpsafe.ask")
	defer func() { endStep(span, r) }()
	view := planView(k.plan)
	shown := shownPlan(k)
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
	// One text block: the plan and the token once. Clients that forward
	// only content to the model still pass the token on; the structured
	// content carries it for programs. (A second block serializing the
	// structured content would repeat the token and the plan.)
	text := fmt.Sprintf("Approval required before %s runs. Show this plan to the user, word for word, and ask them to approve it:\n\n%s\n\n"+
		"Only if the user approves, call %s again with exactly the same arguments plus %q set to %q (valid until %s, single use). Do not approve on the user's behalf.",
		k.t.Name, shown, k.t.Name, TokenField, sealed, exp)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: result.Required{Status: "approval_required", ApprovalToken: sealed, ExpiresAt: exp, Plan: view},
	}, nil
}

// openFor authenticates a sealed grant and checks every binding against
// this call, then spends it in the ledger. The order matters: verify before
// parse, bindings before redeem, and redeem before the answer is looked at.
//
// The journal holds a Redeeming record before the ledger is asked, so a
// process killed between the redemption and the approval record (which
// Execute waits for) leaves the journal saying so: Open closes it with a
// refusal that says the approval may be spent and nothing ran. Without
// it, such a kill would spend a person's decision with no trace.
//
// traced is false when a kill in that window would lose nothing: the
// answer that comes with the grant already says no (a declined
// elicitation, a card's Deny), or the grant never left this process (an
// in-call elicitation, a channel decision waited for within the first
// call): a kill ends the call with it, and nothing can present it again.
// The grant is spent all the same.
func (g *Gate) openFor(ctx context.Context, k *call, sealed, mode string, traced bool) (_ *grant, r *Refusal) {
	ctx, span := g.step(ctx, "mcpsafe.redeem")
	defer func() { endStep(span, r) }()
	gr, r := g.checkGrant(k, sealed, mode)
	if r != nil {
		return nil, r
	}
	if traced {
		if g.spent.has(gr.Nonce, k.now) {
			return nil, refusal(ReasonTokenSpent, "this approval was already used or has expired")
		}
		if r := g.journalRedeeming(ctx, k, gr.Nonce); r != nil {
			return nil, r // (nothing spent: the grant stays good)
		}
	}
	ok, err := g.ledger.Redeem(ctx, gr.Nonce)
	g.pending.done(gr.Nonce)
	g.unpark(gr.Nonce)
	if err != nil {
		return nil, refusal(ReasonLedgerUnavailable, "the approval ledger could not be checked: %v", err)
	}
	g.spent.add(gr.Nonce, gr.expires(), k.now)
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
	gr, err := g.openSealed(k, sealed)
	if errors.Is(err, errGrantOldFormat) {
		return nil, refusal(ReasonTokenInvalid, "the approval was issued by an earlier version of this server; call %s again without it to be asked anew", k.t.Name)
	}
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
	case gr.Args != k.c.ArgsDigest:
		return nil, refusal(ReasonArgumentsChanged, "the arguments differ from the ones that were approved; preview the call again")
	}
	return gr, nil
}

func (g *Gate) redeemToken(ctx context.Context, k *call) (*mcp.CallToolResult, *Refusal) {
	if !g.tokenAllowed(k.t, k.now) || k.t.mode == ModeElicit || k.t.mode == ModeChannel {
		return nil, refusal(ReasonPolicyDenied, "approval tokens are not allowed for %s", k.t.Name)
	}
	gr, r := g.openFor(ctx, k, *k.token, grantToken, true)
	if r != nil {
		return nil, r
	}
	return g.execute(ctx, k, gr.Resolved, Approval{
		Decision: journal.TokenRedeemed, By: "token", Assurance: AssuranceClientRelayed, CallID: gr.Nonce,
	})
}

// tokenAllowed reports whether t may use a one-time token now.
func (g *Gate) tokenAllowed(t *gatedTool, now time.Time) bool {
	if t.OwnsTokenField {
		return false // approval_token is the tool's own argument
	}
	if !t.Irreversible {
		return true
	}
	return t.optIn != nil && (t.optIn.Until.IsZero() || now.Before(t.optIn.Until))
}
