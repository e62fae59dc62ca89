// Package plan holds the typed parts of a plan (mcpsafe.Plan.Parts), the
// effect of a gated call shown to the person who approves it: a Diff or a
// Table in a Part, within the limits below; and the PartView, a part as the
// approval surfaces show it and the approver's request carries it.
//
//	plan.Part{Title: "Overwrite notes.txt", Diff: &plan.Diff{Path: "notes.txt", Old: before, New: after}}
package plan

// Part is one typed part of a plan, besides its Summary and Details: a
// change of text shown as a unified diff, or a table. Exactly one of Diff
// and Table is set. (The plan's targets with their current state are the
// third kind: mcpsafe.Plan.Targets.)
//
// Every surface shows the parts: the approval prompt a client shows (plain
// text, a compact unified diff), the page of `mcpsafe approvals serve` (a
// diff view, long diffs folded behind "expand"), the channel request (as
// data, PartView). A part is shown whole on the page and in the channel
// request; the prompt shows at most ShortDiffLines lines of a diff and
// ShortTableRows rows of a table, and says how many more there are and
// where to see them, never cutting silently (an elicitation form over its
// size limit shows fewer, the same way). The approval binds the whole
// arguments whatever a part shows, and the parts as rendered are bound
// like the targets: a preview that renders differently right before
// Execute (the file changed) voids the approval. A preview's parts must
// therefore be a function of the arguments and the current state.
type Part struct {
	// Title says what the part is, in words: "Overwrite /data/a.txt (3 lines
	// changed)". Optional.
	Title string `json:"title,omitempty"`
	Diff  *Diff  `json:"diff,omitempty"`
	Table *Table `json:"table,omitempty"`
	// Shows names the arguments this part shows in full (the new content
	// of a file shown as the diff against its current content). Where the
	// part is shown whole, the prompt's list of arguments says so instead
	// of repeating their values; where it is abbreviated, they are listed
	// in full as usual.
	Shows []string `json:"shows,omitempty"`
}

// Diff is a change of text: Old and New, whose unified diff is computed
// (with github.com/aymanbagabas/go-udiff, three lines of context), or a
// ready unified diff in Unified (such as a server's dry run returns). Old
// empty and New set is a creation: every line is added.
type Diff struct {
	Path    string `json:"path,omitempty"`
	Old     string `json:"old,omitempty"`
	New     string `json:"new,omitempty"`
	Unified string `json:"unified,omitempty"`
}

// Table is rows of cells under column names.
type Table struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// Limits on the parts of one plan. A diff over MaxPartLines or
// MaxPartBytes is shown on every surface as a table of its texts' sizes
// and SHA-256, titled as too long to show, standing for no argument (so
// the arguments are listed); a table over them, or more than MaxParts
// parts, is refused (plan_too_large) rather than shown in part.
const (
	MaxParts     = 8
	MaxPartLines = 2000      // diff lines or table rows in one part
	MaxPartBytes = 256 << 10 // text in one part (Old+New+Unified, or all cells)
	// ShortDiffLines and ShortTableRows are what the approval prompt shows
	// of a part; the rest is counted, and shown on the approval page and
	// in the arguments.
	ShortDiffLines = 80
	ShortTableRows = 20
)
