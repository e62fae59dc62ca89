package approvals

import (
	"testing"

	"github.com/mcpsafe/mcpsafe/plan"
)

// The service takes only parts of the kinds and ops it can show, within
// the gate's limits; the control is a part the gate would send.
func TestPartsFit(t *testing.T) {
	diff := func(op string, n int) []plan.PartView {
		lines := make([]plan.DiffLine, n)
		for i := range lines {
			lines[i] = plan.DiffLine{Op: op, Text: "x"}
		}
		return []plan.PartView{{Kind: "diff", Lines: lines}}
	}
	for _, c := range []struct {
		name  string
		parts []plan.PartView
		ok    bool
	}{
		{"control: a diff", diff(plan.OpAdd, 10), true},
		{"control: a table", []plan.PartView{{Kind: "table", Columns: []string{"a", "b"}, Rows: [][]string{{"1", "2"}}}}, true},
		{"an op the page cannot mark", diff("!", 1), false},
		{"an op that looks like context", diff("  ", 1), false},
		{"too many lines", diff(plan.OpAdd, plan.MaxPartLines+1), false},
		{"a row short of a cell", []plan.PartView{{Kind: "table", Columns: []string{"a", "b"}, Rows: [][]string{{"1"}}}}, false},
		{"an unknown kind", []plan.PartView{{Kind: "html"}}, false},
		{"too many parts", make([]plan.PartView, plan.MaxParts+1), false},
	} {
		if got := partsFit(c.parts); got != c.ok {
			t.Errorf("%s: partsFit = %v, want %v", c.name, got, c.ok)
		}
	}
}
