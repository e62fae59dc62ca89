// Package plan holds the typed parts of a plan, the effect of a gated call
// shown to the person who approves it: a diff or a table, and the view of
// a part as the approval surfaces show it.
package plan
