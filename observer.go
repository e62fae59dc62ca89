package mcpsafe

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Observer is told what the gate does, for metrics (see package metrics).
// Its methods run on the call path and must return quickly. They only ever
// get tool names, fixed outcome words and reason codes: never arguments,
// principals or sessions.
type Observer interface {
	// CallDone is called once per answered tools/call of a gated tool,
	// with one of the Outcome words; reason is the reason code of a
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

// Outcomes passed to Observer.CallDone.
const (
	OutcomeExecuted         = "executed"          // the tool ran and returned a result
	OutcomeFailed           = "failed"            // the tool ran and failed
	OutcomeRefused          = "refused"           // a refusal; see the reason code
	OutcomeApprovalRequired = "approval_required" // a token or channel approval was asked for
	OutcomeApprovalPending  = "approval_pending"  // a channel approval is still waiting
	OutcomeInputRequired    = "input_required"    // MRTR: the client was asked to elicit
)

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
		o.CallDone(tool, OutcomeRefused, r.Reason)
	case res == nil:
		o.CallDone(tool, OutcomeFailed, "")
	case len(res.InputRequests) > 0:
		o.CallDone(tool, OutcomeInputRequired, "")
	default:
		status := ""
		switch res.StructuredContent.(type) {
		case ApprovalRequired:
			status = OutcomeApprovalRequired
		case *ApprovalRequired:
			status = OutcomeApprovalRequired
		case ApprovalPending:
			status = OutcomeApprovalPending
		case *ApprovalPending:
			status = OutcomeApprovalPending
		}
		switch {
		case status != "":
			o.CallDone(tool, status, "")
		case res.IsError:
			o.CallDone(tool, OutcomeFailed, "")
		default:
			o.CallDone(tool, OutcomeExecuted, "")
		}
	}
}
