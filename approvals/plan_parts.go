package approvals

import (
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/plan"
)

// partsFit reports whether a request's parts are within the gate's own
// limits (plan.MaxParts, MaxPartLines) and use only the known kinds and
// ops.
func partsFit(parts []plan.PartView) bool {
	if len(parts) > plan.MaxParts {
		return false
	}
	for _, p := range parts {
		if len(p.Lines) > plan.MaxPartLines || len(p.Rows) > plan.MaxPartLines {
			return false
		}
		switch p.Kind {
		case "diff":
			for _, l := range p.Lines {
				switch l.Op {
				case plan.OpAdd, plan.OpRemove, plan.OpContext, plan.OpHunk:
				default:
					return false
				}
			}
		case "table":
			for _, r := range p.Rows {
				if len(r) != len(p.Columns) {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// partTexts lists every text of the parts, for the UTF-8 check.
func partTexts(parts []plan.PartView) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p.Title, p.Path)
		out = append(out, p.Columns...)
		out = append(out, p.Shows...)
		for _, l := range p.Lines {
			out = append(out, l.Text)
		}
		for _, r := range p.Rows {
			out = append(out, r...)
		}
	}
	return out
}

// redactParts cuts the secret values out of the parts, as out of the rest
// of the plan.
func redactParts(parts []plan.PartView, s journal.Secrets) []plan.PartView {
	out := make([]plan.PartView, len(parts))
	for i, p := range parts {
		q := p
		q.Title, q.Path = s.Text(p.Title), s.Text(p.Path)
		q.Lines = make([]plan.DiffLine, len(p.Lines))
		for j, l := range p.Lines {
			q.Lines[j] = plan.DiffLine{Op: l.Op, Text: s.Text(l.Text)}
		}
		q.Rows = make([][]string, len(p.Rows))
		for j, r := range p.Rows {
			q.Rows[j] = make([]string, len(r))
			for k, c := range r {
				q.Rows[j][k] = s.Text(c)
			}
		}
		out[i] = q
	}
	return out
}

// shownBy marks the argument rows a part shows in full: the page shows
// every part whole, so the row names the part instead of repeating it.
func shownBy(rows []argRow, parts []plan.PartView) []argRow {
	for i, p := range parts {
		for _, a := range p.Shows {
			for j := range rows {
				if rows[j].Key == a {
					rows[j].ShownBy = i + 1
				}
			}
		}
	}
	return rows
}
