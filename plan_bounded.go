package mcpsafe

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// The elicitation form shows a bounded plan when the whole one would be
// over the prompt's limits (a long write_file in VS Code, Claude Code or
// Cursor): the plan, every target and every argument by name stay whole;
// long argument values and changes show their first lines (a one-line
// value its start and end), and each says, in counts, what it leaves out.
// The form opens with a note that it is bounded, and the approval stays
// bound to the whole call (the argument digest, the target digest), so
// nothing runs that differs from what the person was asked about. Only
// when even that does not fit (hundreds of arguments, a huge plan) is the
// call refused (plan_too_large).
//
// Each step abbreviates more than the one before; the first that fits is
// shown. A value under the last step's sizes is never abbreviated.
var boundedSteps = []shownLimits{
	{bounded: true, diffLines: 60, tableRows: 20, blockLines: 120, valueRunes: 4000},
	{bounded: true, diffLines: 40, tableRows: 20, blockLines: 60, valueRunes: 2000},
	{bounded: true, diffLines: 20, tableRows: 10, blockLines: 30, valueRunes: 800},
	{bounded: true, diffLines: 10, tableRows: 5, blockLines: 12, valueRunes: 320},
	{bounded: true, diffLines: 4, tableRows: 3, blockLines: 5, valueRunes: 160},
}

// boundedMessage is the approval message of a call whose whole message
// (whole) is over the limits, bounded; or the refusal when no step fits.
func (g *Gate) boundedMessage(k *call, offers []approver.GrantOffer, whole string) (string, *Refusal) {
	lines, runes := strings.Count(whole, "\n")+1, utf8.RuneCountInString(whole)
	note := fmt.Sprintf("This request is too long for this form to show whole (%d lines and %d characters; a form shows at most %d lines and %d characters). "+
		"It shows the plan, every target and every argument; long values and changes show their first lines and say what they leave out. "+
		"The approval covers the whole call exactly as the assistant sent it, every line of it, not only what this form shows: "+
		"to read all of it, see the assistant's tool call in your client if it shows the arguments%s; if you cannot, decline and ask for smaller calls.\n\n",
		lines, runes, maxPromptLines, maxPromptRunes, pageHint(k, "; the operator can serve the approval page (--approval-page 127.0.0.1:0), which shows long changes whole"))
	var msg string
	for _, lim := range boundedSteps {
		msg = approvalText(k, offers, lim, note)
		if checkPromptSize(msg) == nil {
			return msg, nil
		}
	}
	return "", refusal(ReasonPlanTooLarge, "the approval request would be %d lines and %d characters, and still %d lines and %d characters with its long values and changes abbreviated, "+
		"over the limit of %d lines and %d characters a form shows; the plan, its targets and its arguments are never cut, so the call is refused. Split it into smaller calls%s",
		lines, runes, strings.Count(msg, "\n")+1, utf8.RuneCountInString(msg), maxPromptLines, maxPromptRunes,
		pageHint(k, ", or ask the operator to serve the approval page (--approval-page 127.0.0.1:0), which is not bound by a form's size"))
}

// pageHint is hint when the approval page could take this tool's
// approvals (its mode is auto), and "" when the tool's mode pins another
// path: naming a page there would send the person after a setting that
// changes nothing.
func pageHint(k *call, hint string) string {
	if k.t.mode != ModeAuto {
		return ""
	}
	return hint
}

// longValue shows a one-line string argument over lim.valueRunes by its
// start and end (prompt.QuoteN, which counts its characters and gives a
// SHA-256 prefix), saying so; false for anything else or a whole form.
func (lim shownLimits) longValue(raw json.RawMessage) (string, bool) {
	if !lim.bounded {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || utf8.RuneCountInString(s) <= lim.valueRunes {
		return "", false
	}
	return prompt.QuoteN(s, lim.valueRunes) + " (abbreviated: only its start and end are shown)", true
}
