package plan

import "time"

// PageOnly is what a person on the server's own approval page is shown
// beyond the plan, and nobody else: the first lines of a file about to be
// deleted, "binary, 12.3 KB" for one that is not text. It may hold what the
// model must not read, so it is never sent to the client, the model, an
// approval channel or the journal (it has no JSON form); only the local
// page (package approvalpage) shows it, each line sanitized, at most
// PageOnlyLines lines.
type PageOnly struct {
	Title string   // what it shows: "What would be lost: the first lines of notes.txt"
	Lines []string // shown as preformatted text, each line sanitized
	// Modified, when set, is when what would be lost last changed: the
	// page says how long ago, at the moment it is shown ("modified 5
	// minutes ago"), which no plan text may (a plan reads the same on
	// every call).
	Modified time.Time
}

// PageOnlyLines is the most lines of a PageOnly the page shows.
const PageOnlyLines = 40
