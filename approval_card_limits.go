package mcpsafe

import (
	"encoding/json"
	"strings"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// The approval card's own limit. The card gets the plan as data in the
// pending result's _meta (cardView) and shows all of it: every part whole
// (a diff of up to plan.MaxPartLines lines), every argument whole, long
// ones in a box that scrolls. It is not a form, so the form's limits
// (maxPromptLines, maxPromptRunes) are not its: what bounds it is how
// much one view carries. maxCardBytes is that bound on the view as JSON,
// without the capability and expiry: 4 MiB, the size the SDK takes by
// default for one MCP message (mcphttp.DefaultMaxBodyBytes), room for
// arguments of the size a call may have (internal/canon's 1 MiB) beside
// parts near their limits. Measured with lines of 64 characters
// (TestLongPlanShownWholeInCard logs them): a 1,000-line write makes
// about 85 KiB (its content is shown by its diff, not repeated), a
// 2,000-line diff beside a 5,000-line argument about 550 KiB. Over it the
// call is refused (plan_too_large), never cut.
const maxCardBytes = 4 << 20

// cardLimits show every part whole, as the card does.
var cardLimits = shownLimits{diffLines: plan.MaxPartLines, tableRows: plan.MaxPartLines}

// cardViewOf is what the card shows of k, before the grant is issued:
// the plan, the targets, the parts and the arguments, an argument a part
// shows named rather than repeated.
func cardViewOf(k *call) cardView {
	view := planView(k.plan)
	shown := renderPartsWithin(&strings.Builder{}, view.Parts, cardLimits)
	cv := cardView{
		Tool: k.t.Name, Summary: view.Summary, Details: view.Details, Parts: view.Parts,
		Arguments:    argumentLines(k.c.Arguments, k.t.SecretFields, shown),
		DecisionTool: approver.CardDecisionTool,
	}
	for _, t := range k.plan.Targets {
		cv.Targets = append(cv.Targets, Target{Name: prompt.QuoteWhole(t.Name), State: displayLine(t.State)})
	}
	return cv
}

// checkCardSize refuses a view the card cannot carry whole.
func checkCardSize(k *call, cv cardView) *Refusal {
	b, err := json.Marshal(cv)
	if err != nil {
		return refusal(ReasonPreviewFailed, "the approval card's view could not be encoded: %v", err)
	}
	if len(b) <= maxCardBytes {
		return nil
	}
	return refusal(ReasonPlanTooLarge, "the approval card would carry %d KiB of plan and arguments, over the %d KiB a card carries; it is never cut, so the call is refused. Split it into smaller calls%s",
		len(b)>>10, maxCardBytes>>10, pageHint(k, ", or ask the operator to serve the approval page (--approval-page 127.0.0.1:0), which is not bound by a card's size"))
}
