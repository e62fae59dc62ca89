package mcpsafe

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/plan"
	"slices"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The approval card path: for a client that renders MCP Apps (the
// io.modelcontextprotocol/ui extension: Claude Desktop and claude.ai,
// ChatGPT, VS Code, Goose...) but cannot elicit, the plan and
// Approve/Deny appear in the conversation, in a card the host renders
// from a ui:// resource the gate serves (Options.Card; package appcard
// has the page).
//
// A call that needs approval answers "approval_pending" with a handle for
// the model, as the channel does, and with the card's own decision
// capability in the result's _meta, which hosts give the card and not the
// model. The card sends the person's decision through the host to an
// app-only tool (approver.CardDecisionTool), bound like every approval (tool,
// argument digest, target, principal, audience, expiry, single use); an
// approval runs the call there, once, and the card hands its result to the
// conversation (ui/message). The model's handle never decides: calling the
// tool again with it only picks up the outcome.
//
// Nothing tells the server whether a person clicked or the host called the
// decision tool by itself, so the card is journaled card-accepted at
// AssuranceClientRelayed: a tool whose MinAssurance is above that never
// takes it.

// ModeCard asks only through the approval card, and refuses clients that
// did not declare the MCP Apps extension.
const ModeCard Mode = "card"

const (
	// appsExtension and appsMIMEType are how a client declares MCP Apps:
	// capabilities.extensions["io.modelcontextprotocol/ui"].mimeTypes
	// holding the MCP App profile of HTML.
	appsExtension = "io.modelcontextprotocol/ui"
	appsMIMEType  = "text/html;profile=mcp-app"
	// cardMetaKey holds, in a pending result's _meta, what only the card
	// gets: the plan to show and the decision capability.
	cardMetaKey = "io.mcpsafe/approval-card"
	// cardSentence ends the description of a gated tool for clients that
	// render the card.
	cardSentence = " When this tool needs approval, an approval card shows the user the plan in the chat with Approve and Deny; wait for their decision."
)

// clientTakesCard reports whether the client declared the MCP Apps
// extension with its HTML profile.
func clientTakesCard(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Extensions == nil {
		return false
	}
	ext, ok := caps.Extensions[appsExtension].(map[string]any)
	if !ok {
		return false
	}
	types, _ := ext["mimeTypes"].([]any)
	return slices.Contains(types, any(appsMIMEType))
}

// cardFor reports whether this call may take the card in mode auto.
func (g *Gate) cardFor(k *call) bool { return g.cardChosen(k.t, k.req.ClientCapabilities()) }

// cardChosen reports whether a call of t from a client with caps is
// approved in the card: mode card, or mode auto when nothing stronger is
// configured (page, channel) and the client cannot elicit (a form comes
// first; both are client-relayed). tools/list names the card for exactly
// these tools, so that hosts render it only where it will ask.
func (g *Gate) cardChosen(t *gatedTool, caps *mcp.ClientCapabilities) bool {
	if g.opts.Card == nil || t.minAssur > AssuranceClientRelayed || !clientTakesCard(caps) {
		return false
	}
	switch t.mode {
	case ModeCard:
		return true
	case ModeAuto:
		return g.page == nil && g.channel == nil && !capsElicit(caps)
	}
	return false
}

// cardView is what the card shows: the plan whole, sanitized like every
// prompt (the card sets it as text, never as markup).
type cardView struct {
	Tool      string          `json:"tool"`
	Server    string          `json:"server,omitempty"` // the audience, sanitized: the card's title names it
	Summary   string          `json:"summary"`
	Details   []string        `json:"details"`
	Targets   []Target        `json:"targets,omitempty"`
	Parts     []plan.PartView `json:"parts,omitempty"`
	Arguments []string        `json:"arguments"`
	ExpiresAt string          `json:"expires_at"`
	// Decision is the capability the card decides with; the model's
	// handle is another envelope of the same grant and decides nothing.
	Decision     string `json:"decision"`
	DecisionTool string `json:"decision_tool"`
}

// askCard answers a call with the plan for the card and a handle for the
// model; the decision comes through CardDecisionTool.
func (g *Gate) askCard(ctx context.Context, k *call) (_ *mcp.CallToolResult, r *Refusal) {
	ctx, span := g.step(ctx, "mcpsafe.ask")
	defer func() { endStep(span, r) }()
	if !clientTakesCard(k.req.ClientCapabilities()) || g.opts.Card == nil {
		return nil, elicitationUnsupported(k.t.Name, k.t.mode, false, "%s is approved in an approval card, and the client did not declare the MCP Apps extension (%s)", k.t.Name, appsExtension)
	}
	cv := cardViewOf(k)
	cv.Server = prompt.Text(g.opts.Audience)
	if r := checkCardSize(k, cv); r != nil {
		return nil, r
	}
	gr, handle, r := g.issue(ctx, k, grantCard)
	if r != nil {
		return nil, r
	}
	dec := *gr
	dec.Mode = grantCardDecision
	capability, err := sealGrant(g.ring, &dec)
	if err != nil {
		g.spend(ctx, gr.Nonce)
		return nil, refusal(ReasonLedgerUnavailable, "sealing the approval failed: %v", err)
	}
	if !g.park(gr.Nonce, "card", k, nil, gr.expires()) {
		g.spend(ctx, gr.Nonce)
		return nil, shuttingDown("no approval is asked for")
	}
	cv.ExpiresAt, cv.Decision = gr.expires().UTC().Format(time.RFC3339Nano), capability
	res := g.pendingResult(k, gr, handle, "")
	text := fmt.Sprintf("An approval card shows the user this plan in the chat, with Approve and Deny; nothing has run yet:\n\n%s\n\n"+
		"Wait for the user's decision in the card; its result reaches the conversation from the card. Do not approve on the user's behalf.", renderPlan(planView(k.plan)))
	if !k.t.OwnsTokenField { // (else approval_token is the tool's own argument)
		text += fmt.Sprintf(" To ask for the outcome later, call %s again with exactly the same arguments plus %q set to structuredContent.approval_token "+
			"(a handle to look the decision up, not an approval; valid until %s).", k.t.Name, TokenField, cv.ExpiresAt)
	}
	res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
	res.Meta = mcp.Meta{cardMetaKey: cv}
	return res, nil
}

// isCardHandle reports whether sealed is a card handle this gate issued
// (the model's envelope). It only authenticates.
func (g *Gate) isCardHandle(k *call, sealed string) bool {
	gr, err := g.openSealed(k, sealed)
	return err == nil && gr.Mode == grantCard
}

// cardLookup answers a call that carries a card handle (ok): the outcome
// when the card decided, the pending answer again when not. It never runs
// the call: the handle the model saw is not the decision. A decided
// outcome was journaled when decided.
func (g *Gate) cardLookup(ctx context.Context, k *call) (_ *mcp.CallToolResult, _ *Refusal, ok bool) {
	if k.token == nil || !g.isCardHandle(k, *k.token) {
		return nil, nil, false
	}
	gr, r := g.checkGrant(k, *k.token, grantCard)
	if r != nil {
		g.journalRefusal(ctx, k, k.t.Name, r)
		return nil, r, true
	}
	res, r := g.cardOutcome(ctx, k, gr, *k.token)
	return res, r, true
}

func (g *Gate) cardOutcome(ctx context.Context, k *call, gr *grant, handle string) (*mcp.CallToolResult, *Refusal) {
	o, ok, err := g.cards.get(ctx, gr.Nonce)
	switch {
	case err != nil:
		g.opts.Logger.Warn("approval card: could not read a decided outcome", "tool", k.t.Name, "call", gr.Nonce, "err", err)
		return nil, refusal(ReasonLedgerUnavailable, "the store that keeps the card's decision could not be read; nothing new ran. Call again in a moment")
	case !ok:
		text := "The user has not decided in the approval card yet; nothing has run. Wait for their decision in the card."
		// The plan again, previewed now (read only; nothing is bound to
		// it): the model, and a person reading the transcript, see what
		// is still waiting. A call that no longer previews gets none.
		if st, r := g.resolve(ctx, k); r == nil {
			if p, _, r := g.preview(ctx, k, st); r == nil {
				k.plan = p
				text += " The card shows this plan:\n\n" + renderPlan(planView(p))
			}
		}
		res := g.pendingResult(k, gr, handle, "")
		res.Content = []mcp.Content{&mcp.TextContent{Text: text}}
		return res, nil
	case o.r != nil:
		return nil, o.r
	}
	return o.res, nil
}

// cardDecision is the decision tool's input.
type cardDecision struct {
	Decision  string          `json:"decision"`
	Arguments json.RawMessage `json:"arguments"`
	Approve   json.RawMessage `json:"approve"`
}

var cardDecisionSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"decision":{"type":"string","description":"the decision capability the approval card was given"},` +
	`"arguments":{"type":"object","description":"the arguments of the call the card shows"},` +
	`"approve":{"type":"boolean","description":"true approves the call; anything else denies it"}},` +
	`"required":["decision","arguments","approve"],"additionalProperties":false}`)

// decideCard is CardDecisionTool's handler: the person's decision, from
// the card through the host. The capability is checked like every grant
// and spent before the answer is read; an approval runs the call here.
func (g *Gate) decideCard(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if !g.enterCall() {
		r := shuttingDown("it takes no new calls")
		g.journalRefusal(ctx, nil, approver.CardDecisionTool, r)
		return r.Result(), nil
	}
	defer g.exitCall()
	res, r := g.cardDecide(ctx, req)
	if r != nil {
		return r.Result(), nil
	}
	return res, nil
}

func (g *Gate) cardDecide(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, *Refusal) {
	fail := func(k *call, tool string, r *Refusal) (*mcp.CallToolResult, *Refusal) {
		g.journalRefusal(ctx, k, tool, r)
		return nil, r
	}
	if !clientTakesCard(req.ClientCapabilities()) {
		return fail(nil, approver.CardDecisionTool, refusal(ReasonPolicyDenied, "%s is the approval card's, and this client did not declare the MCP Apps extension", approver.CardDecisionTool))
	}
	var in cardDecision
	if err := frame.Decode(req.Params.Arguments, &in); err != nil || in.Decision == "" || len(in.Arguments) == 0 {
		return fail(nil, approver.CardDecisionTool, refusal(ReasonArgumentsInvalid, "%s takes exactly decision, arguments and approve", approver.CardDecisionTool))
	}
	gr, err := openGrant(g.ring, g.opts.Audience, in.Decision)
	if err != nil || gr.Mode != grantCardDecision {
		return fail(nil, approver.CardDecisionTool, refusal(ReasonTokenInvalid, "that is not an approval card's decision for this server (a handle the model was given decides nothing)"))
	}
	g.mu.Lock()
	t := g.tools[gr.Tool]
	g.mu.Unlock()
	if t == nil {
		return fail(nil, gr.Tool, refusal(ReasonTokenInvalid, "the tool was redefined or removed while the approval was pending"))
	}
	call := &mcp.CallToolRequest{Session: req.Session, Extra: req.Extra,
		Params: &mcp.CallToolParamsRaw{Name: gr.Tool, Arguments: in.Arguments}}
	ctx, span := g.startCall(ctx, t.Name, call)
	res, r := g.cardRun(ctx, t, call, in)
	g.observe(t.Name, res, r)
	endStep(span, r)
	return res, r
}

// cardRun checks the call the card decided on, spends its grant, and runs
// it when approved. The outcome is kept for the model's handle.
func (g *Gate) cardRun(ctx context.Context, t *gatedTool, req *mcp.CallToolRequest, in cardDecision) (_ *mcp.CallToolResult, r *Refusal) {
	k, r := g.decode(t, req)
	if r == nil && k.token != nil {
		r = refusal(ReasonArgumentsInvalid, "the card decides on the call's own arguments, without %s", TokenField)
	}
	if r == nil {
		r = g.checkRules(ctx, k)
	}
	if r != nil {
		g.journalRefusal(ctx, k, t.Name, r)
		return nil, r
	}
	gr, r := g.openFor(ctx, k, in.Decision, grantCardDecision, string(in.Approve) == "true")
	if r != nil {
		g.journalRefusal(ctx, k, t.Name, r)
		return nil, r
	}
	var res *mcp.CallToolResult
	if string(in.Approve) != "true" {
		r = refusal(ReasonDeclined, "the user denied the call in the approval card; do not retry unless the user asks")
	} else {
		res, r = g.execute(ctx, k, gr.Resolved, Approval{Decision: journal.CardAccepted, By: "card", Assurance: AssuranceClientRelayed, CallID: gr.Nonce})
	}
	if r != nil {
		g.journalRefusal(ctx, k, t.Name, r)
	}
	if k.protocolErr != nil { // (the proxy's upstream answered with a JSON-RPC error)
		res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s failed: %v", t.Name, k.protocolErr)}}}
	}
	g.cards.put(ctx, g, t.Name, gr.Nonce, cardOutcome{res: res, r: r}, gr.expires())
	return res, r
}
