package journal

import (
	"context"
	"encoding/json"
	"time"
)

// Decision words. They say what the server observed, never more: an
// elicitation "accept" is client-accepted because the server cannot tell a
// person from a script that answers for one.
const (
	ClientAccepted  = "client-accepted"
	TokenRedeemed   = "token-redeemed"
	ChannelApproved = "channel-approved"
	// PageApproved: a click on the server's own approval page (package
	// approvalpage): someone who could use a browser on that machine.
	PageApproved = "page-approved"
	// CardAccepted: Approve in the MCP Apps approval card, as the client
	// (the host) relayed it; the server cannot tell a click from a host
	// that calls the card's decision tool by itself.
	CardAccepted       = "card-accepted"
	PolicyAutoApproved = "policy-auto-approved"
	// GrantUsed approves a call covered by a standing grant; Grant names it.
	GrantUsed = "grant-used"
	// GrantCreated records a standing grant a human approved: By is who,
	// Summary its scope in words and in CEL and its limits.
	GrantCreated = "grant-created"
	// GrantEnded records the end of a standing grant; Reason says why
	// (used-up, revoked, policy-changed).
	GrantEnded = "grant-ended"
	Declined   = "declined"
	Cancelled  = "cancelled"
	Timeout    = "timeout"
	Refused    = "refused"
	Executed   = "executed"
	Failed     = "failed"
	Ambiguous  = "ambiguous"
	// Redeeming is written, durably, just before a gate spends an
	// approval in its ledger (Call names it): it is no approval, and
	// nothing runs on it. Its approval record follows, or a refusal
	// with the same Call (the grant was spent already, the target
	// changed...). When neither follows before the journal is reopened,
	// the gate stopped in between: Open closes it with a refusal that
	// says the approval may be spent and that nothing ran, since a call
	// runs only after its approval record.
	Redeeming = "redeeming"
)

// RedemptionInterrupted begins the Reason of the refusal Open writes for a
// Redeeming record that nothing followed.
const RedemptionInterrupted = "redemption_interrupted"

// Observer is told what a gate does (mcpsafe.Options.Observer), for
// metrics (package metrics implements it).
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

// Outcomes of a gated call, as Observer.CallDone is told them
// (metrics count calls by them; they are not journal decision words).
const (
	OutcomeExecuted         = "executed"          // the tool ran and returned a result
	OutcomeFailed           = "failed"            // the tool ran and failed
	OutcomeRefused          = "refused"           // a refusal; see the reason code
	OutcomeApprovalRequired = "approval_required" // a token or channel approval was asked for
	OutcomeApprovalPending  = "approval_pending"  // a channel approval is still waiting
	OutcomeInputRequired    = "input_required"    // MRTR: the client was asked to elicit
)

// Record is one line of the journal. Seq, Prev and Time are filled in by
// Append; the caller fills in the rest.
type Record struct {
	Seq        uint64          `json:"seq"`
	Prev       string          `json:"prev"`
	Time       time.Time       `json:"time"`
	Call       string          `json:"call,omitempty"` // links an approval record to its outcome
	Tool       string          `json:"tool"`
	Principal  string          `json:"principal,omitempty"`
	Session    string          `json:"session,omitempty"`
	ArgsDigest string          `json:"args_digest,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"` // redacted copy, never the approval token
	Summary    string          `json:"summary,omitempty"`
	// Shown is the SHA-256 of the plan as the approver was shown it
	// (summary, details, targets, parts as rendered), "sha256:HEX": what
	// was shown is identified without keeping a copy of it.
	Shown    string `json:"shown,omitempty"`
	Decision string `json:"decision"`
	By       string `json:"by,omitempty"`    // approver identity, rule name, "client", "token"
	Grant    string `json:"grant,omitempty"` // the standing grant a record is about
	Reason   string `json:"reason,omitempty"`
	Error    string `json:"error,omitempty"`
	// Assurance names what the approval proved (client_relayed, channel).
	Assurance string `json:"assurance,omitempty"`
	// Evidence is what the approver side handed over as proof, kept as
	// received so an auditor can re-check it: for a channel approval, the
	// approval service's signed statement (channel.CheckJournalRecord).
	Evidence json.RawMessage `json:"evidence,omitempty"`

	// SecretFields names extra argument fields to redact; not written.
	SecretFields []string `json:"-"`
}

// Appender receives audit records: what a gate writes to
// (mcpsafe.Options.Journal). Append returns only once the record is
// durable; an error means nothing may run. *Journal is one.
type Appender interface {
	Append(ctx context.Context, r Record) error
}

// Discard is an Appender that records nothing, for callers that decided to
// run without an audit trail.
var Discard Appender = discard{}

type discard struct{}

func (discard) Append(context.Context, Record) error { return nil }
