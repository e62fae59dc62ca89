package mcpsafe

import (
	"context"
	"errors"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mrtrProtocol is the first protocol version with Multi Round-Trip Requests.
// Older clients are asked in-call with elicitation/create instead.
const mrtrProtocol = "2026-07-28"

// approvalInputID keys our elicitation in InputRequests/InputResponses.
const approvalInputID = "mcpsafe_approval"

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

func clientCanElicit(req *mcp.CallToolRequest) bool { return capsElicit(req.ClientCapabilities()) }

func capsElicit(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	// A client that declares only URL elicitation cannot show our form.
	return !(caps.Elicitation.Form == nil && caps.Elicitation.URL != nil)
}

// approvalSchema is the form the human answers: one boolean, and when
// standing grants are offered, a choice among them (absent: this call only).
func approvalSchema(offers []approver.GrantOffer) map[string]any {
	props := map[string]any{
		"approve": map[string]any{
			"type":        "boolean",
			"title":       "Approve",
			"description": "Set to true to allow exactly the action described above.",
		},
	}
	if len(offers) > 0 {
		choices := []any{map[string]any{"const": approver.Once, "title": "Just this call"}}
		for _, o := range offers {
			choices = append(choices, map[string]any{"const": o.ID, "title": o.Label})
		}
		props[grantField] = map[string]any{
			"type":        "string",
			"title":       "Approve for",
			"description": "Just this call, or this call and calls like it for a while (see the message).",
			"oneOf":       choices,
			"default":     approver.Once,
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": []string{"approve"}}
}

// grantField is the form field that chooses a standing grant.
const grantField = "grant"

func elicitParams(message string, offers []approver.GrantOffer) *mcp.ElicitParams {
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
	ectx, span := g.step(ectx, "mcpsafe.ask")
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
	return g.redeemElicitation(ctx, k, sealed, mcp.InputResponseMap{approvalInputID: res}, true)
}

// redeemElicitation verifies the request state and then reads the answer.
// The state is spent before the answer is looked at, so a declined state
// can never be accepted later.
//
// inCall says the state never left this process (the elicitation was
// asked within the call): a kill ends the call with it and nothing can
// present the state again, so its redemption needs no Redeeming record
// (which would cost the path a second fsync). An MRTR state came back
// from the client and could be presented again: its redemption has one
// when the answer approves.
func (g *Gate) redeemElicitation(ctx context.Context, k *call, state string, answers mcp.InputResponseMap, inCall bool) (*mcp.CallToolResult, *Refusal) {
	if k.t.mode == ModeToken || k.t.mode == ModeChannel {
		return nil, refusal(ReasonPolicyDenied, "%s does not take approvals through the client's elicitation", k.t.Name)
	}
	if state == "" {
		return nil, refusal(ReasonTokenInvalid, "an answer arrived without the request state it belongs to")
	}
	gr, r := g.openFor(ctx, k, state, grantElicit, !inCall && approvalAnswer(answers) == nil)
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
