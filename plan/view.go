package plan

// Target is something a call will touch, with its current state.
type Target struct {
	Name  string `json:"name"`
	State string `json:"state,omitempty"`
}

// PartView is a part as it is shown and sent: its lines computed and
// rendered for a human (prompt.CodeLine for diff lines, prompt.Quote for
// table cells), sensitive values redacted.
type PartView struct {
	Kind    string     `json:"kind"` // "diff" or "table"
	Title   string     `json:"title,omitempty"`
	Path    string     `json:"path,omitempty"` // quoted
	Added   int        `json:"added,omitempty"`
	Removed int        `json:"removed,omitempty"`
	Lines   []DiffLine `json:"lines,omitempty"`
	Columns []string   `json:"columns,omitempty"`
	Rows    [][]string `json:"rows,omitempty"`
	Shows   []string   `json:"shows,omitempty"`
}

// DiffLine is one line of a diff view. Op is "+" (added), "-" (removed),
// " " (unchanged context) or "@@" (a hunk header, Text "-1,3 +1,4").
type DiffLine struct {
	Op   string `json:"op"`
	Text string `json:"text"`
}

// Diff ops.
const (
	OpAdd     = "+"
	OpRemove  = "-"
	OpContext = " "
	OpHunk    = "@@"
)
