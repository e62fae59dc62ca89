package approvals

import (
	"testing"

	"github.com/mcpsafe/mcpsafe"
)

// The service takes only parts of the kinds and ops it can show, within
// the gate's limits; the control is a part the gate would send.
func TestPartsFit(t *testing.T) {
	diff := func(op string, n int) []mcpsafe.PartView {
		lines := make([]mcpsafe.DiffLine, n)
		for i := range lines {
			lines[i] = mcpsafe.DiffLine{Op: op, Text: "x"}
		}
		return []mcpsafe.PartView{{Kind: "diff", Lines: lines}}
	}
	for _, c := range []struct {
		name  string
		parts []mcpsafe.PartView
		ok    bool
	}{
		{"control: a diff", diff(mcpsafe.OpAdd, 10), true},
		{"control: a table", []mcpsafe.PartView{{Kind: "table", Columns: []string{"a", "b"}, Rows: [][]string{{"1", "2"}}}}, true},
		{"an op the page cannot mark", diff("!", 1), false},
		{"an op that looks like context", diff("  ", 1), false},
		{"too many lines", diff(mcpsafe.OpAdd, mcpsafe.MaxPartLines+1), false},
		{"a row short of a cell", []mcpsafe.PartView{{Kind: "table", Columns: []string{"a", "b"}, Rows: [][]string{{"1"}}}}, false},
		{"an unknown kind", []mcpsafe.PartView{{Kind: "html"}}, false},
		{"too many parts", make([]mcpsafe.PartView, mcpsafe.MaxParts+1), false},
	} {
		if got := partsFit(c.parts); got != c.ok {
			t.Errorf("%s: partsFit = %v, want %v", c.name, got, c.ok)
		}
	}
}
