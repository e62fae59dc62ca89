package mcpsafe

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mode chooses how a gated tool asks for approval.
type Mode string

const (
	// ModeAuto takes the strongest path configured and open to the
	// client, in this order: the approval page (Options.Page; the channel
	// first when both are set and the tool needs more than the page
	// proves), the out-of-band channel (Options.Approver), elicitation
	// when the client declared it, the approval card (Options.Card) for a
	// client that declared MCP Apps, and last a one-time token for a
	// reversible tool or one named in Options.AllowTokenFor. Else the
	// call is refused (elicitation_unsupported). Auto-approve rules and
	// standing grants are looked at before any of them.
	ModeAuto Mode = "auto"
	// ModeElicit always asks the human through the client and refuses when
	// the client cannot elicit. Auto-approve rules are ignored.
	ModeElicit Mode = "elicit"
	// ModeToken returns the plan and a one-time token; the assistant shows
	// the plan and calls again with approval_token.
	ModeToken Mode = "token"
	// ModeChannel asks only the configured out-of-band Approver, never the
	// MCP client.
	ModeChannel Mode = "channel"
)

// Assurance orders how much an approval proves about who approved (see
// package approver, which defines the levels).
type Assurance = approver.Assurance

// The levels of Assurance, weakest first.
const (
	// AssuranceClientRelayed: an elicitation accept or a token typed back.
	// A client, or a hook in it, can produce either without a person.
	AssuranceClientRelayed = approver.AssuranceClientRelayed
	// AssuranceLocalPage: a click on the local approval page (package
	// approvalpage) of a server on the user's machine.
	AssuranceLocalPage = approver.AssuranceLocalPage
	// AssuranceChannel: an approver authenticated by an out-of-band channel.
	AssuranceChannel = approver.AssuranceChannel
	// AssurancePasskey: each approver signed this exact call with a
	// registered passkey, checked by the gate.
	AssurancePasskey = approver.AssurancePasskey
)

// Call is one tools/call as the gate checked it: every function of a
// gated tool (rules, Resolve, Preview, Execute) receives it.
type Call struct {
	Tool string
	// Arguments are the call's arguments in canonical form (RFC 8785),
	// read strictly (no duplicate or case-folded keys) and checked against
	// the input schema. They never contain approval_token, unless the tool
	// owns that field (Tool.OwnsTokenField).
	Arguments json.RawMessage
	// ArgsDigest is the digest of Arguments that approvals bind.
	ArgsDigest string
	Principal  string // from the transport's auth info; "stdio" when there is none
	Session    string
	// Request is the tools/call as received, for what the arguments do
	// not carry (its _meta, progress token, session). Read the arguments
	// from Arguments, never from Request.Params: those bytes were not
	// canonicalized and may hold approval_token.
	Request *mcp.CallToolRequest
}

// Decode unmarshals the call's arguments into v.
func (c Call) Decode(v any) error { return json.Unmarshal(c.Arguments, v) }

// Resolved describes what the arguments really point at, as looked up by
// Tool.Resolve: a label, a role, a size, a content hash. It is bound into
// the approval and looked up again right before Execute; any difference
// refuses the call. Rules and grant scopes read a ToolFor's State as a
// Resolved too: its JSON object.
type Resolved map[string]any

// Target is something a call will touch, with its current state
// (plan.Target: the approver's request carries the targets too).
type Target = plan.Target

// Plan is what Preview returns: what will happen, in words for a human.
// Targets are the things the call touches with their current state; Parts
// show the effect (a diff, a table), see Part.
type Plan struct {
	Summary string      `json:"summary"`
	Details []string    `json:"details,omitempty"`
	Targets []Target    `json:"targets,omitempty"`
	Parts   []plan.Part `json:"parts,omitempty"`
	// PageOnly is shown on the local approval page (Options.Page) and
	// nowhere else: never to the client, the model, a channel or the
	// journal (see plan.PageOnly). Nil: nothing more.
	PageOnly *plan.PageOnly `json:"-"`

	views []plan.PartView // Parts as rendered, set by the gate after Preview
}

// Approval tells Execute how the call was approved.
type Approval struct {
	Decision  string    // a journal decision word, e.g. journal.ClientAccepted
	By        string    // approver identity or rule name, when known
	Assurance Assurance // what the approval proves
	Resolved  Resolved  // the state that was approved (and re-checked); nil for a ToolFor, whose Execute gets its State
	Plan      Plan      // as shown to the approver: secret values redacted
	CallID    string
	Grant     string // the standing grant the call ran under, if any
	// Evidence is the approver side's proof, journaled with the approval.
	Evidence json.RawMessage
}

// Rule is a named predicate over a call. Only an exact true with a nil
// error counts as a match; an error or a panic is handled as the safe
// outcome for the list the rule is in (a deny rule that fails denies, an
// auto-approve rule that fails asks a human).
type Rule struct {
	Name  string
	Match func(ctx context.Context, c Call, r Resolved) (bool, error)
}

// Tool is a gated tool: a dangerous operation split into Preview and
// Execute, with untyped arguments (Call.Arguments) and state (Resolved).
// ToolFor is the typed form, which holds a Tool for everything else.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the tool's JSON schema (type object). The gate adds an
	// optional string property approval_token to it (see OwnsTokenField).
	InputSchema any
	// OwnsTokenField says that approval_token is one of the tool's own
	// arguments, as for a tool of a server behind its own mcpsafe gate
	// fronted by a proxy. The gate then adds nothing to the schema, passes
	// approval_token on to Execute as an ordinary argument (bound into the
	// approval like every other), and has no one-time token path for the
	// tool: it is approved by elicitation or the channel, or refused.
	OwnsTokenField bool
	// OutputSchema is advertised only in ModeElicit, and in ModeChannel
	// when the Approver cannot answer "pending" (has no Awaiter). Otherwise the first call can answer with an
	// approval_required or approval_pending result, which is not an error
	// and does not follow the tool's schema, and clients that validate
	// structured output would reject it. Where it is advertised, the
	// tool's refusals carry no structuredContent (their text still starts
	// "Refused (REASON): "): a refusal does not follow the schema, and
	// TypeScript SDK 1.x clients validate the structured content of error
	// results too.
	OutputSchema any
	// Annotations are advertised as given, except that the gate sets
	// ReadOnlyHint false, and DestructiveHint true for an irreversible tool.
	Annotations *mcp.ToolAnnotations

	// Irreversible marks delete, send, publish, drop: never a token unless
	// named in Options.AllowTokenFor.
	Irreversible bool
	// Mode overrides Options.Mode for this tool.
	Mode Mode
	// MinAssurance is the weakest approval this tool accepts.
	MinAssurance Assurance

	// Resolve looks up what the arguments point at. Optional; when set, an
	// error or an empty result refuses the call.
	Resolve func(ctx context.Context, c Call) (Resolved, error)
	// Preview describes the call. It must change nothing.
	Preview func(ctx context.Context, c Call, r Resolved) (Plan, error)
	// Execute runs the approved call. An error is the tool's failure,
	// reported in an error result, except a *Refusal (reported as that
	// refusal) and a *jsonrpc.Error (the JSON-RPC error the client gets,
	// as it is: a proxy relays its upstream's this way). The journal
	// records the call as failed either way.
	Execute func(ctx context.Context, c Call, a Approval) (*mcp.CallToolResult, error)

	// Deny rules refuse a call that matches (policy_denied), before any
	// approval path runs.
	Deny []Rule
	// Allow rules, when present, refuse a call that matches none of them.
	Allow []Rule
	// AutoApprove rules skip the human when one matches exactly true.
	// Ignored in ModeElicit and when MinAssurance is above client-relayed.
	AutoApprove []Rule

	// Grants, when set, lets the approver choose a standing grant instead
	// of approving one call. An irreversible tool offers none unless
	// Options.AllowGrantsFor names it.
	Grants *GrantPolicy

	// SecretFields name argument fields whose values are secret, in
	// addition to the common names journal.Redact knows (password, token,
	// api_key, ...). Their values are redacted wherever the call is shown:
	// the journal, the plan (also where the preview copied a value into its
	// text), the approval prompt and the channel request.
	SecretFields []string
}

// OptIn names one irreversible tool that may use one-time tokens.
type OptIn struct {
	Tool  string
	Until time.Time // zero: no expiry; otherwise valid while now < Until
}
