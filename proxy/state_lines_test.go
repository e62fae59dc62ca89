package proxy

import (
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
)

// The resolver's state reaches the human as fields, one a line, each whole
// and escaped: a long or hostile state is never cut to one line.
func TestStateLines(t *testing.T) {
	long := strings.Repeat("x", 2000) + "END"
	for _, c := range []struct {
		name string
		r    mcpsafe.Resolved
		want []string
	}{
		{"nothing resolved", nil, nil},
		{"text report", mcpsafe.Resolved{"tool": "info", "text": "size: 12\nmode: 644\n"},
			[]string{`current state, as "info" reports it:`, `state "size" = "12"`, `state "mode" = "644"`}},
		{"a line that is no field", mcpsafe.Resolved{"tool": "info", "text": "the file is locked"},
			[]string{`current state, as "info" reports it:`, `state: "the file is locked"`}},
		{"structured fields, sorted", mcpsafe.Resolved{"tool": "info", "structured": map[string]any{"b": 2.0, "a": "x"}},
			[]string{`current state, as "info" reports it:`, `state "a" = "x"`, `state "b" = "2"`}},
		{"a report wrapped in one field", mcpsafe.Resolved{"tool": "info", "structured": map[string]any{"content": "size: 1\nowner: bob"}},
			[]string{`current state, as "info" reports it:`, `state "size" = "1"`, `state "owner" = "bob"`}},
		{"a long value is shown whole", mcpsafe.Resolved{"tool": "info", "text": "note: " + long},
			[]string{`current state, as "info" reports it:`, `state "note" = "` + long + `"`}},
		{"bidi and newlines cannot pose as structure", mcpsafe.Resolved{"tool": "info", "text": "owner: bob\u202e\r\nmode: 1"},
			[]string{`current state, as "info" reports it:`, `state "owner" = "bob\u202e"`, `state "mode" = "1"`}},
	} {
		got := stateLines(c.r)
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}
