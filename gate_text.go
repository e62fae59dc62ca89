package mcpsafe

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpsafe/mcpsafe/prompt"
)

// Limits on what a plan may put in front of a human; a longer plan is cut
// visibly, never silently.
const (
	maxPlanLine    = 400
	maxPlanDetails = 20
	maxPlanTargets = 20
)

// displayLine renders one line of plan text for a human. A tool's preview
// should already quote agent-supplied values with prompt.Quote; this is the
// backstop: a line that could pose as prompt structure (a newline, a bidi
// override, an invisible character) is shown quoted and escaped instead.
func displayLine(s string) string {
	if plainLine(s) && utf8.RuneCountInString(s) <= maxPlanLine {
		return s
	}
	return prompt.QuoteN(s, maxPlanLine)
}

func plainLine(s string) bool {
	if !utf8.ValidString(s) || strings.TrimSpace(s) != s {
		return false
	}
	for _, r := range s {
		if r == ' ' {
			continue
		}
		if !unicode.IsGraphic(r) || unicode.Is(unicode.Zs, r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
}

func planView(p Plan) PlanView {
	v := PlanView{Summary: displayLine(p.Summary), Details: []string{}}
	for i, d := range p.Details {
		if i == maxPlanDetails {
			v.Details = append(v.Details, fmt.Sprintf("(%d more lines not shown)", len(p.Details)-maxPlanDetails))
			break
		}
		v.Details = append(v.Details, displayLine(d))
	}
	return v
}

func renderPlan(v PlanView) string {
	var b strings.Builder
	b.WriteString(v.Summary)
	for _, d := range v.Details {
		b.WriteString("\n  - ")
		b.WriteString(d)
	}
	return b.String()
}

// approvalMessage is the text the client shows the human. Its structure is
// fixed here; everything that came from the agent or the world is a
// rendered line inside it.
func (g *Gate) approvalMessage(k *call) string {
	var b strings.Builder
	b.WriteString("Approve this action?\n\n")
	fmt.Fprintf(&b, "Tool: %s", k.t.Name)
	if k.t.Irreversible {
		b.WriteString(" (irreversible: it cannot be undone)")
	}
	fmt.Fprintf(&b, "\nRequested by: %s\n", prompt.Quote(k.c.Principal))
	b.WriteString("Plan: ")
	b.WriteString(renderPlan(planView(k.plan)))
	if len(k.plan.Targets) > 0 {
		b.WriteString("\nTargets:")
		for i, t := range k.plan.Targets {
			if i == maxPlanTargets {
				fmt.Fprintf(&b, "\n  (%d more targets not shown)", len(k.plan.Targets)-maxPlanTargets)
				break
			}
			fmt.Fprintf(&b, "\n  - %s", prompt.Quote(t.Name))
			if t.State != "" {
				fmt.Fprintf(&b, ": %s", displayLine(t.State))
			}
		}
	}
	b.WriteString("\n\nThe approval covers exactly these arguments and this state, once.")
	return b.String()
}
