package mcpsafe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The approval page path: a person approves on a web page, not in the
// client. The page (Options.Page; package approvalpage serves one on the
// user's machine) gets the plan as an ApprovalRequest, as the channel does,
// and the call waits for the decision made there, as a channel call does
// (progress while it waits, "approval_pending" with a handle when the
// client cannot wait).
//
// The link reaches the person:
//   - by URL-mode elicitation when the client declares elicitation.url: on
//     2025-11-25 in the call (elicitation/create with mode "url", then
//     notifications/elicitation/complete when decided), on 2026-07-28 as an
//     input_required result whose sealed requestState is the handle; the
//     client's "accept" only means the person agreed to open the page, and
//     approves nothing;
//   - otherwise by the page itself (approvalpage opens the user's browser).
//
// The decision is bound like every approval (tool, argument digest, target,
// principal, audience, expiry, single use) and journaled as page-approved,
// at AssuranceLocalPage, or AssurancePasskey for a page that takes a
// passkey (the assertion is journaled as the evidence).

// ModePage asks only the approval page (Options.Page).
const ModePage Mode = "page"

// pageInputID names the URL request in an input_required result.
const pageInputID = "mcpsafe_approval_page"

// clientTakesURL reports whether the client declared URL-mode elicitation.
func clientTakesURL(req *mcp.CallToolRequest) bool {
	caps := req.ClientCapabilities()
	return caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
}

// ElicitationIDPrefix starts the id of every URL elicitation the gate
// sends; a proxy refuses an upstream's elicitation whose id has it.
const ElicitationIDPrefix = "mcpsafe-"

// elicitationID correlates a URL elicitation with its completion; it is
// derived from the grant's nonce, not the nonce itself.
func elicitationID(gr *grant) string {
	sum := sha256.Sum256([]byte("mcpsafe approval page\x00" + gr.Nonce))
	return ElicitationIDPrefix + hex.EncodeToString(sum[:12])
}

// sendLink sends the page's link to a client that declared URL-mode
// elicitation. On 2026-07-28 that is the answer (done): an input_required
// result carrying the handle as requestState. On 2025-11-25 the URL
// elicitation runs beside the wait, and its answer is not looked at.
func (g *Gate) sendLink(ctx context.Context, k *call, via *outOfBand, gr *grant, sealed string) (*mcp.CallToolResult, *Refusal, bool) {
	if via.link == nil || k.req.Session == nil || !clientTakesURL(k.req) || k.t.OwnsTokenField {
		return nil, nil, false
	}
	req := g.requestVia(k, via, gr)
	mrtr := k.req.ProtocolVersion() >= mrtrProtocol
	if via.page == nil && (mrtr || via.awaiter != nil) {
		// The approval service learns of the request before anyone is
		// sent to it. (A decision this fast is left for the wait, which
		// asks again and re-attaches.)
		if via.awaiter == nil || !g.announce(ctx, via, req) {
			return nil, nil, false
		}
	}
	link, err := via.link(req)
	if err != nil {
		g.opts.Logger.Warn("no link to send the person to; waiting without one", "via", via.mode, "tool", k.t.Name, "err", err)
		return nil, nil, false
	}
	msg := fmt.Sprintf("Approve or deny on %s: %s", via.words, planView(k.plan).Summary)
	if mrtr {
		if !g.park(gr.Nonce, via.mode, k, &req, gr.expires()) {
			g.withdraw(ctx, via, req, approver.WithdrawShuttingDown)
			g.spend(ctx, gr.Nonce)
			return nil, shuttingDown("no approval is asked for"), true
		}
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{pageInputID: &mcp.ElicitParams{Mode: "url", Message: msg, URL: link}},
			RequestState:  sealed,
		}, nil, true
	}
	ectx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k.linkSent = func() {
		cancel()
		nctx, done := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
		defer done()
		if err := k.req.Session.NotifyElicitationComplete(nctx, &mcp.ElicitationCompleteParams{ElicitationID: elicitationID(gr)}); err != nil {
			g.opts.Logger.Debug("approval page: elicitation complete not sent", "tool", k.t.Name, "err", err)
		}
	}
	go func() {
		// The answer says whether the person agreed to open the link;
		// the decision is the page's, so it is not read.
		ectx, stop := context.WithTimeout(ectx, g.opts.ChannelTimeout)
		defer stop()
		_, err := k.req.Session.Elicit(ectx, &mcp.ElicitParams{Mode: "url", Message: msg, URL: link, ElicitationID: elicitationID(gr)})
		if err != nil && ectx.Err() == nil {
			g.opts.Logger.Debug("approval page: URL elicitation failed; the link stays valid", "tool", k.t.Name, "err", err)
		}
	}()
	return nil, nil, false
}

// announce sends req to the approval service and leaves it open there
// (an Await that answers "pending" at once); false when the service did
// not take it as pending.
func (g *Gate) announce(ctx context.Context, via *outOfBand, req approver.Request) bool {
	err := safely(func() error {
		_, err := via.awaiter.Await(ctx, req, time.Second)
		return err
	})
	if !errors.Is(err, approver.ErrPending) {
		g.opts.Logger.Debug("approval service: the request was not left pending; waiting for it instead of sending a link", "tool", req.Tool, "err", err)
		return false
	}
	return true
}

// linkDone tells a client that got the link in the call that the page was
// decided (or the wait ended).
func (g *Gate) linkDone(k *call, via *outOfBand, _ *grant) {
	if via.link != nil && k.linkSent != nil {
		k.linkSent()
		k.linkSent = nil
	}
}

// handleMode is the envelope of a sealed handle this gate issued for an
// out-of-band path (channel or page), or "" for anything else. It only
// authenticates; the handle is checked in full on the path.
func (g *Gate) handleMode(k *call, sealed string) string {
	if sealed == "" {
		return ""
	}
	gr, err := g.openSealed(k, sealed)
	if err != nil || (gr.Mode != grantChannel && gr.Mode != grantPage) {
		return ""
	}
	return gr.Mode
}
