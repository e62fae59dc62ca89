package mcpsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// Limits on an approval prompt (the elicitation message, the text a token
// result asks the assistant to show). A prompt over them is refused with
// plan_too_large, never cut: a cut would hide whatever padding pushed past
// it, and the approver would approve a call they could not see whole.
const (
	maxPromptRunes = 32 << 10
	maxPromptLines = 400
)

// displayLine renders one line of plan text for a human. A tool's preview
// should already quote agent-supplied values with prompt.Quote; this is the
// backstop: a line that could pose as prompt structure (a newline, a bidi
// override, an invisible character) is shown quoted and escaped instead,
// and never cut.
func displayLine(s string) string {
	if plainLine(s) {
		return s
	}
	return prompt.QuoteWhole(s)
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

// redactPlan cuts the call's secret values out of the plan, wherever the
// preview copied them, so that no approver, model or journal sees them.
func redactPlan(p Plan, s journal.Secrets) Plan {
	if s.Empty() {
		return p
	}
	out := Plan{Summary: s.Text(p.Summary)}
	for _, d := range p.Details {
		out.Details = append(out.Details, s.Text(d))
	}
	for _, t := range p.Targets {
		out.Targets = append(out.Targets, Target{Name: s.Text(t.Name), State: s.Text(t.State)})
	}
	for _, pt := range p.Parts {
		r := plan.Part{Title: s.Text(pt.Title), Shows: pt.Shows}
		if d := pt.Diff; d != nil {
			r.Diff = &plan.Diff{Path: s.Text(d.Path), Old: s.Text(d.Old), New: s.Text(d.New), Unified: s.Text(d.Unified)}
		}
		if t := pt.Table; t != nil {
			r.Table = &plan.Table{}
			for _, c := range t.Columns {
				r.Table.Columns = append(r.Table.Columns, s.Text(c))
			}
			for _, row := range t.Rows {
				cells := make([]string, len(row))
				for i, c := range row {
					cells[i] = s.Text(c)
				}
				r.Table.Rows = append(r.Table.Rows, cells)
			}
		}
		out.Parts = append(out.Parts, r)
	}
	if po := p.PageOnly; po != nil {
		out.PageOnly = &plan.PageOnly{Title: s.Text(po.Title)}
		for _, l := range po.Lines {
			out.PageOnly.Lines = append(out.PageOnly.Lines, s.Text(l))
		}
	}
	return out
}

// planView is the whole plan, every line rendered for display.
func planView(p Plan) result.PlanView {
	v := result.PlanView{Summary: displayLine(p.Summary), Details: []string{}, Parts: p.views}
	for _, d := range p.Details {
		v.Details = append(v.Details, displayLine(d))
	}
	return v
}

// shownPlan is the plan as a prompt shows it (the elicitation message, the
// text a token result asks the assistant to show): the plan, its targets,
// its parts (a part over its short form abbreviated, saying so) and every
// argument once, an argument a part shows whole named rather than
// repeated.
func shownPlan(k *call) string { return shownPlanWithin(k, wholeLimits) }

func shownPlanWithin(k *call, lim shownLimits) string {
	var b strings.Builder
	b.WriteString("Plan: ")
	b.WriteString(renderPlan(planView(k.plan)))
	if len(k.plan.Targets) > 0 {
		b.WriteString("\nTargets:")
		for _, t := range k.plan.Targets {
			fmt.Fprintf(&b, "\n  - %s", prompt.QuoteWhole(t.Name))
			if t.State != "" {
				fmt.Fprintf(&b, ": %s", displayLine(t.State))
			}
		}
	}
	shown := renderPartsWithin(&b, k.plan.views, lim)
	b.WriteString("\n")
	b.WriteString(renderArguments(argumentLinesWithin(k.c.Arguments, k.t.SecretFields, shown, lim), lim))
	return b.String()
}

func renderPlan(v result.PlanView) string {
	var b strings.Builder
	b.WriteString(v.Summary)
	for _, d := range v.Details {
		b.WriteString("\n  - ")
		b.WriteString(d)
	}
	return b.String()
}

// argumentLines renders every argument of the call, one per line, in the
// canonical order, with sensitive values redacted (journal.Redact, the
// same rule as the journal) and nothing cut.
//
// shown names the arguments a part of the plan showed whole, with the words
// that say where; they are not repeated.
func argumentLines(args json.RawMessage, secretFields []string, shown map[string]string) []string {
	return argumentLinesWithin(args, secretFields, shown, wholeLimits)
}

func argumentLinesWithin(args json.RawMessage, secretFields []string, shown map[string]string, lim shownLimits) []string {
	red := journal.Redact(args, secretFields)
	dec := json.NewDecoder(bytes.NewReader(red))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return []string{displayLine(string(red))}
	}
	var out []string
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			break
		}
		if where, ok := shown[key]; ok {
			out = append(out, prompt.QuoteWhole(key)+": "+where)
			continue
		}
		if block := argumentBlock(raw, lim); block != "" {
			out = append(out, prompt.QuoteWhole(key)+": "+block)
			continue
		}
		if v, ok := lim.longValue(raw); ok {
			out = append(out, prompt.QuoteWhole(key)+": "+v)
			continue
		}
		out = append(out, prompt.QuoteWhole(key)+": "+argumentValue(raw))
	}
	return out
}

// argumentValue shows a string quoted and escaped, and any other value as
// its compact JSON (quoted too when it holds what could pose as prompt
// structure).
func argumentValue(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return prompt.QuoteWhole(s)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return prompt.QuoteWhole(string(raw))
	}
	return displayLine(b.String())
}

// renderArguments is the arguments section of a prompt.
func renderArguments(lines []string, lim shownLimits) string {
	if len(lines) == 0 {
		return "Arguments: none"
	}
	var b strings.Builder
	if lim.bounded {
		fmt.Fprintf(&b, "Arguments (all %d; long values abbreviated, each saying what it leaves out; sensitive values redacted):", len(lines))
	} else {
		fmt.Fprintf(&b, "Arguments (all %d, in full; sensitive values redacted):", len(lines))
	}
	for _, l := range lines {
		b.WriteString("\n  - ")
		b.WriteString(l)
	}
	return b.String()
}

// checkPromptSize refuses a prompt that cannot be shown whole.
func checkPromptSize(text string) *Refusal {
	runes, lines := utf8.RuneCountInString(text), strings.Count(text, "\n")+1
	if runes <= maxPromptRunes && lines <= maxPromptLines {
		return nil
	}
	return refusal(ReasonPlanTooLarge, "the approval request would be %d lines and %d characters, over the limit of %d lines and %d characters that is shown to the approver; "+
		"it is never cut, so the call is refused. Split it into smaller calls", lines, runes, maxPromptLines, maxPromptRunes)
}

// requestedBy is the prompt's "Requested by" line in words a person
// understands. Over stdio there is no identity to name ("stdio" is the
// transport, not a person) and the one asked is the one at the client, so
// there is no line; a caller that did not sign in is said to be one; any
// other principal is named, quoted.
func requestedBy(principal string) string {
	switch principal {
	case "stdio":
		return ""
	case "anonymous":
		return "Requested by: a client that did not sign in (no identity)\n"
	}
	return "Requested by: " + prompt.Quote(principal) + "\n"
}

// grantHolder names who may use a standing grant, as requestedBy does.
func grantHolder(principal string) string {
	switch principal {
	case "stdio":
		return "this client"
	case "anonymous":
		return "any client that did not sign in"
	}
	return prompt.Quote(principal)
}

// approvalMessage is the text the client shows the human. Its structure is
// fixed here; everything that came from the agent or the world is a
// rendered line inside it. It shows the whole plan and every argument, or
// the call is refused.
//
// A message over the limits is shown bounded instead (boundedMessage).
func (g *Gate) approvalMessage(k *call, offers []approver.GrantOffer) (string, *Refusal) {
	msg := approvalText(k, offers, wholeLimits, "")
	if r := checkPromptSize(msg); r != nil {
		return g.boundedMessage(k, offers, msg)
	}
	return msg, nil
}

// approvalText is the approval message with lim, and the note of a
// bounded form after its first line.
func approvalText(k *call, offers []approver.GrantOffer, lim shownLimits, note string) string {
	var b strings.Builder
	b.WriteString("Approve this action?\n\n")
	b.WriteString(note)
	fmt.Fprintf(&b, "Tool: %s", k.t.Name)
	if k.t.Irreversible {
		b.WriteString(" (irreversible: it cannot be undone)")
	}
	b.WriteString("\n")
	b.WriteString(requestedBy(k.c.Principal))
	b.WriteString(shownPlanWithin(k, lim))
	b.WriteString("\n\nThe approval covers exactly these arguments and this state, once.")
	if len(offers) > 0 {
		fmt.Fprintf(&b, "\n\nInstead, you may approve a standing grant: this call and later calls of %s by %s that fit a scope, without asking again, until it expires or its uses are taken:", k.t.Name, grantHolder(k.c.Principal))
		for _, o := range offers {
			fmt.Fprintf(&b, "\n  - %s (as CEL: %s)", o.Label, prompt.Quote(o.CEL))
		}
	}
	return b.String()
}
