package mcpsafe

import (
	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Pending is the number of approvals issued by this gate and not yet
// redeemed, expired or abandoned. An expired approval stops counting when
// it expires, not when a later call sweeps it: the gauge an alert watches
// (mcpsafe_pending_approvals) reads 0 on a server nobody is waiting on.
func (g *Gate) Pending() int {
	return g.pending.live(g.opts.Clock())
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
