// Package approver is the contract between the gate and whoever asks a
// person somewhere else: the Request the gate sends, the Decision it gets
// back, the Approver interface with its explicit capabilities (Awaiter,
// Withdrawer), the Page of a browser approval and the Card of an MCP Apps
// host, the standing grants a person may choose instead (GrantOffer, Once),
// the errors an approver wraps, and the Assurance levels an approval can
// prove.
//
// Package channel implements it over a webhook (the approval service of
// `mcpsafe approvals serve` answers), package approvalpage on a loopback
// page, package appcard in the chat; set one in mcpsafe.Options.Approver,
// Options.Page or Options.Card.
package approver

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/mcpsafe/mcpsafe/plan"
)

// Assurance orders how much an approval proves about who approved.
type Assurance int

const (
	// AssuranceClientRelayed: an elicitation accept or a token typed back.
	// A client, or a hook in it, can produce either without a person.
	AssuranceClientRelayed Assurance = iota + 1
	// AssuranceLocalPage: a click on the local approval page (package
	// approvalpage) of a server on the user's machine. It proves that
	// someone who could use a browser there decided (a person, or an agent
	// with a browser tool), not who.
	AssuranceLocalPage
	// AssuranceChannel: an approver authenticated by an out-of-band channel.
	AssuranceChannel
	// AssurancePasskey: each approver signed this exact call with a
	// registered passkey (WebAuthn, user verified), checked by the gate
	// against the approver's public key, not taken from the channel's word.
	AssurancePasskey
)

// String is the level's name as journal records spell it.
func (a Assurance) String() string {
	switch a {
	case AssuranceClientRelayed:
		return "client_relayed"
	case AssuranceLocalPage:
		return "local_page"
	case AssuranceChannel:
		return "channel"
	case AssurancePasskey:
		return "passkey"
	}
	return "assurance(" + strconv.Itoa(int(a)) + ")"
}

// Request is what the gate sends an Approver: the call in words, its
// plan, and what the approver may choose.
type Request struct {
	ID      string        `json:"id"`
	Tool    string        `json:"tool"`
	Summary string        `json:"summary"` // sanitized for display
	Details []string      `json:"details,omitempty"`
	Targets []plan.Target `json:"targets,omitempty"`
	// Parts are the plan's parts as rendered, whole (see package plan).
	Parts []plan.PartView `json:"parts,omitempty"`
	// Arguments are the call's arguments in full, sensitive values
	// redacted (journal.Redact with the tool's SecretFields), so that the
	// approver can see every one of them.
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	ArgsDigest   string          `json:"args_digest"`
	Principal    string          `json:"principal"`
	Audience     string          `json:"audience"`
	Irreversible bool            `json:"irreversible"`
	ExpiresAt    time.Time       `json:"expires_at"`
	// Grants are the standing grants the approver may choose instead of
	// this call alone (empty: none offered).
	Grants []GrantOffer `json:"grants,omitempty"`
	// MinAssurance is the tool's: an approver that cannot meet it must not
	// answer yes.
	MinAssurance Assurance `json:"min_assurance,omitempty"`
	// PageOnly is set for the local approval page only (Plan.PageOnly):
	// it never leaves the server's process (no JSON form).
	PageOnly *plan.PageOnly `json:"-"`
}

// Decision is an Approver's answer.
type Decision struct {
	Approved  bool     // exactly true approves
	Approvers []string // identities the channel vouches for
	// Grant is the ID of the standing grant chosen from the request's
	// Grants; empty or Once approves this call alone. Any other value
	// refuses the approval.
	Grant string
	// Assurance is what the approver could verify of the decision:
	// AssurancePasskey when every required approver's passkey assertion
	// checked out; 0 means as the approvers imply (AssuranceChannel when
	// named).
	Assurance Assurance
	// Evidence is the channel's proof of the decision as received (the
	// approval service's signed statement), journaled with the approval.
	Evidence json.RawMessage
}

// Approver asks a human somewhere else. Any error means not approved.
//
// What else an approver can do is part of its type, never found by a type
// assertion that a wrapper (metrics, tracing, a test double) would
// silently defeat: Awaiter and Withdrawer return nil when the approver
// cannot. A wrapper that embeds the Approver it wraps forwards both; one
// that does not must decide. The gate asks once, in New.
type Approver interface {
	Approve(ctx context.Context, r Request) (Decision, error)
	// Awaiter returns the approver's way of keeping a request open
	// across calls, or nil when it has none.
	Awaiter() Awaiter
	// Withdrawer returns the approver's way of taking a request back, or
	// nil when it has none.
	Withdrawer() Withdrawer
}

// A Page is an approval page: an Approver (with an Awaiter, so that calls
// can answer "pending" and pick the decision up later) whose requests a
// person decides in a browser.
type Page interface {
	Approver
	// Link registers r and returns the address of its page, for a URL-mode
	// elicitation; the page opens nothing for a request it handed out.
	Link(r Request) (string, error)
	// Assurance is what the page's approvals prove: AssuranceLocalPage
	// for a click, AssurancePasskey when it takes a passkey assertion over
	// the call. The gate takes no decision of the page as stronger.
	Assurance() Assurance
}

// A Card is the approval card's page: an MCP Apps view (HTML) the gate
// serves at a ui:// address (mcpsafe.Options.Card). Package appcard has
// one.
type Card interface {
	// Resource returns the card's ui:// address and its HTML, which must be
	// self-contained (no network) and render the plan as text only.
	Resource() (uri, html string)
}

// CardDecisionTool is the app-only tool the card decides with. tools/list
// shows it only to clients that declared the MCP Apps extension, marked
// visibility ["app"] so that hosts keep it from the model.
const CardDecisionTool = "mcpsafe_card_decision"

// ErrPending is what an Awaiter returns when nobody has decided yet
// and the request stays open: asking again with the same request picks the
// decision up. It never approves.
var ErrPending = errors.New("mcpsafe: no decision yet; the request stays open")

// ErrNotShown joins ErrPending when the approver could not show the request
// to anyone (an approval page whose browser did not open): the gate's
// pending answer then says so, for the model to tell the person where to
// look. It never approves.
var ErrNotShown = errors.New("mcpsafe: the request could not be shown to the person")

// Withdraw reasons an approver is told when the gate stops waiting.
const (
	WithdrawCallerGone = "caller_gone" // the caller cancelled or disconnected
	WithdrawTimedOut   = "timed_out"   // the gate stopped waiting (ChannelTimeout)
	// WithdrawShuttingDown: the gate withdraws a pending request because
	// its server is shutting down.
	WithdrawShuttingDown = "shutting_down"
)

// A Withdrawer (Approver.Withdrawer) takes back a request that will never
// be picked up, so that no human approves a call that cannot run any
// more. The gate calls it, best effort, when the caller goes away or the
// gate stops waiting.
type Withdrawer interface {
	Withdraw(ctx context.Context, r Request, reason string) error
}

// An Awaiter keeps a request open across calls (Approver.Awaiter). Await
// asks (or, for a request it already holds, asks again) and waits at most
// wait (no limit but ctx when wait <= 0); when nobody has decided by then
// it returns an error wrapping ErrPending and keeps the request open.
// Clients that cannot wait long then get a "pending" result with a sealed
// handle and call again with it. A decision is delivered to one Await
// only.
type Awaiter interface {
	Await(ctx context.Context, r Request, wait time.Duration) (Decision, error)
}

// GrantOffer is one standing grant a human may choose when approving.
type GrantOffer struct {
	ID    string        `json:"id"`    // what to answer to choose it
	Label string        `json:"label"` // the whole offer in words, sanitized
	Words string        `json:"scope"` // the scope in words, sanitized
	CEL   string        `json:"cel"`
	TTL   time.Duration `json:"ttl"`
	Uses  int           `json:"uses"` // the approving call included
}

// Once is the answer (Decision.Grant) that approves the call alone.
const Once = "once"

// Errors an Approver wraps so that the gate can tell a person's "no" and a
// deadline from a failing channel: ErrDenied is reported as channel_denied,
// ErrNoDecision as timeout, anything else as channel_unavailable. Each of
// them refuses the call. ErrPlanTooLarge is reported as plan_too_large.
var (
	ErrDenied     = errors.New("mcpsafe: the approver denied the request")
	ErrNoDecision = errors.New("mcpsafe: no decision before the deadline")
	// ErrPlanTooLarge: the channel cannot show the request whole; the gate
	// reports plan_too_large.
	ErrPlanTooLarge = errors.New("mcpsafe: the plan is too large for the approval channel to show whole")
	// ErrUnreachable: the approver could not be reached just now (its
	// connection dropped, no replica was up), and the request may still be
	// open there. The gate reports channel_unavailable; a call that came
	// back with its approval_pending handle keeps the handle, so the
	// decision still reaches it later. It never approves.
	ErrUnreachable = errors.New("mcpsafe: the approver could not be reached just now")
)
