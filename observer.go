package mcpsafe

import (
	"time"

	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Observer is told what the gate does, for metrics (see package metrics).
// Its methods run on the call path and must return quickly. They only ever
// get tool names, fixed outcome words and reason codes: never arguments,
// principals or sessions.
type Observer interface {
	// CallDone is called once per answered tools/call of a gated tool,
	// with one of the journal.Outcome words; reason is the reason code of a
	// refusal, else "".
	CallDone(tool, outcome, reason string)
	// HumanDecision is called when an approval's answer is redeemed, with
	// the time since it was issued; path is "elicit", "token", "channel",
	// "page" (the approval page) or "card".
	HumanDecision(path string, d time.Duration)
	// Approved is called once per approval the journal recorded, before
	// the call runs, with the journal's decision word (page-approved,
	// channel-approved, ...) and assurance level (client_relayed,
	// local_page, channel, passkey): how strongly each tool's approvals
	// were proven.
	Approved(tool, decision, assurance string)
}

// Pending is the number of approvals issued by this gate and not yet
// redeemed, expired or abandoned.
func (g *Gate) Pending() int {
	g.pending.mu.Lock()
	defer g.pending.mu.Unlock()
	return len(g.pending.byNonce)
}

// observe classifies one answered call for the Observer.
func (g *Gate) observe(tool string, res *mcp.CallToolResult, r *Refusal) {
	o := g.opts.Observer
	if o == nil {
		return
	}
	switch {
	case r != nil:
		o.CallDone(tool, journal.OutcomeRefused, r.Reason)
	case res == nil:
		o.CallDone(tool, journal.OutcomeFailed, "")
	case len(res.InputRequests) > 0:
		o.CallDone(tool, journal.OutcomeInputRequired, "")
	default:
		status := ""
		switch res.StructuredContent.(type) {
		case result.Required:
			status = journal.OutcomeApprovalRequired
		case *result.Required:
			status = journal.OutcomeApprovalRequired
		case result.Pending:
			status = journal.OutcomeApprovalPending
		case *result.Pending:
			status = journal.OutcomeApprovalPending
		}
		switch {
		case status != "":
			o.CallDone(tool, status, "")
		case res.IsError:
			o.CallDone(tool, journal.OutcomeFailed, "")
		default:
			o.CallDone(tool, journal.OutcomeExecuted, "")
		}
	}
}
