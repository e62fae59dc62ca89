package mcpsafe

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Reason codes a refused call carries in structuredContent.reason. They are a
// stable contract with the model: a human "no" (declined) is never confused
// with a timeout (which may be retried) or a policy decision.
const (
	ReasonElicitationUnsupported = "elicitation_unsupported"
	ReasonElicitationFailed      = "elicitation_failed" // the client errored or went away
	ReasonDeclined               = "declined"
	ReasonCancelled              = "cancelled"
	ReasonTimeout                = "timeout"
	ReasonTokenInvalid           = "token_invalid"
	ReasonTokenExpired           = "token_expired"
	ReasonTokenSpent             = "token_spent"
	ReasonArgumentsInvalid       = "arguments_invalid"
	ReasonArgumentsChanged       = "arguments_changed"
	ReasonTargetChanged          = "target_changed"
	ReasonResolverFailed         = "resolver_failed"
	ReasonPreviewFailed          = "preview_failed"
	ReasonPolicyDenied           = "policy_denied"
	ReasonLedgerUnavailable      = "ledger_unavailable"
	ReasonJournalUnavailable     = "journal_unavailable"
	ReasonTooManyPending         = "too_many_pending"
	ReasonChannelDenied          = "channel_denied"
	ReasonChannelUnavailable     = "channel_unavailable"
	ReasonAssuranceTooLow        = "assurance_too_low"
	// ReasonPageDenied: the person clicked Deny on the approval page
	// (Options.Page); the journal names the page, not the channel.
	ReasonPageDenied = "page_denied"
	// ReasonPlanTooLarge: the plan and arguments cannot be shown to the
	// approver whole within the display limits, and are never cut.
	ReasonPlanTooLarge = "plan_too_large"
	// ReasonShuttingDown: the server began to shut down (Gate.Shutdown).
	// The call arrived after that, its approval was still pending then
	// (the approval is withdrawn and can no longer be redeemed), or it was
	// approved but had not started. Nothing ran.
	ReasonShuttingDown = "shutting_down"
	// ReasonInvalidPath: a path argument is not one the tool can show
	// honestly (mcpsafe files: empty, a NUL byte, not UTF-8; mcpsafe proxy:
	// an effect's path with a "." or ".." element, "//" or a trailing
	// separator, which the read tool and the gated tool may resolve
	// differently). Nothing was asked and nothing ran.
	ReasonInvalidPath = "invalid_path"
)

// Refusal is an error that refuses a call with a reason code. Tools return
// one from Resolve, Preview or Execute to refuse with a tool-specific code
// (for example outside_roots); the gate passes it to the model unchanged.
type Refusal struct {
	Reason  string
	Message string
}

func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// Refuse returns a *Refusal with the given reason code and message.
func Refuse(reason, format string, args ...any) error {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func refusal(reason, format string, args ...any) *Refusal {
	return &Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// elicitationUnsupported refuses a call that needs the user's approval
// through a client that cannot ask for it. The message says why (for the
// model), what the model should tell its user, and what the operator may
// change; nothing here changes it: the default stays a refusal. tokens
// says whether a one-time token opt-in could serve this tool at all. A
// tool whose mode pins one path (elicit, card) is told only what would
// change that: another path's setup (an approval page, a channel, tokens)
// is never used for it, so it is not named.
func elicitationUnsupported(tool string, mode Mode, tokens bool, format string, args ...any) *Refusal {
	var b strings.Builder
	b.WriteString(fmt.Sprintf(format, args...))
	b.WriteString(". Nothing ran. Tell the user: this action needs their approval, and this client cannot show an approval prompt (MCP elicitation). ")
	if mode != ModeAuto {
		fmt.Fprintf(&b, "This tool's approval mode is %s, so only a client that supports it can approve it; or the operator of this server can change the tool's mode (mode: in a proxy policy, --mode, Tool.Mode in the library; see docs/USAGE.md, approval paths and modes).", mode)
		return &Refusal{Reason: ReasonElicitationUnsupported, Message: b.String()}
	}
	b.WriteString("They can use a client that supports elicitation, or ask the operator of this server to set up an approval page: ")
	b.WriteString("for a server on the user's own machine, start it with --approval-page 127.0.0.1:0 (the page opens in the browser for each call; Options.Page in the library); ")
	b.WriteString("for approvers elsewhere, run `mcpsafe approvals serve` and start this server with --approver-url URL --approver-secret-file FILE (see docs/USAGE.md, channel approvals)")
	if tokens {
		fmt.Fprintf(&b, ", or to allow one-time approval tokens for this tool by name, which the user confirms in the chat: --allow-token-for %s (Options.AllowTokenFor in the library; not with --mode elicit)", tool)
	}
	b.WriteString(".")
	return &Refusal{Reason: ReasonElicitationUnsupported, Message: b.String()}
}

// asRefusal returns err as a *Refusal, or wraps it with the fallback reason.
func asRefusal(err error, fallback string) *Refusal {
	var r *Refusal
	if errors.As(err, &r) {
		return r
	}
	return &Refusal{Reason: fallback, Message: err.Error()}
}

// Result is the tool result that reports the refusal to the model.
func (r *Refusal) Result() *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{
			Text: fmt.Sprintf("Refused (%s): %s", r.Reason, r.Message),
		}},
		StructuredContent: result.Refused{Status: "refused", Reason: r.Reason, Message: r.Message},
	}
}
