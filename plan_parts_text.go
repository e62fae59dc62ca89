package mcpsafe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// The plain-text form of plan parts and of long arguments, in a prompt.
// Every line that came from the agent or the world is shown after a gutter
// fixed here ("    +", "      │"), rendered by prompt.CodeLine, and wrapped
// at wrapWidth with a continuation mark in the gutter: nothing in it can
// pose as a line of the prompt's own structure, however it is crafted.
const (
	wrapWidth   = 160
	diffGutter  = "    "
	blockGutter = "      │"
	wrapMark    = "↪"
)

// renderParts writes the parts, each whole or abbreviated to its short
// form with the count of what is not shown, and returns the arguments that
// parts shown whole showed, with words for the argument list.
func renderParts(b *strings.Builder, parts []plan.PartView) map[string]string {
	shown := map[string]string{}
	for i, p := range parts {
		b.WriteString("\n")
		whole := false
		switch p.Kind {
		case "diff":
			whole = renderDiff(b, p)
		case "table":
			whole = renderTable(b, p)
		}
		if !whole {
			continue
		}
		for _, a := range p.Shows {
			shown[a] = fmt.Sprintf("shown in full by change %d above", i+1)
		}
	}
	return shown
}

func partHeading(b *strings.Builder, p plan.PartView, counts string) {
	switch {
	case p.Title != "":
		b.WriteString(p.Title)
	case p.Kind == "diff" && p.Path != "":
		b.WriteString("Change to " + p.Path)
	case p.Kind == "diff":
		b.WriteString("Change")
	default:
		b.WriteString("Table")
	}
	fmt.Fprintf(b, " (%s):", counts)
}

func renderDiff(b *strings.Builder, p plan.PartView) bool {
	partHeading(b, p, fmt.Sprintf("%s added, %d removed", plural(p.Added, "line"), p.Removed))
	if len(p.Lines) == 0 {
		b.WriteString("\n" + diffGutter + "(no change)")
		return true
	}
	n := min(len(p.Lines), plan.ShortDiffLines)
	for _, l := range p.Lines[:n] {
		if l.Op == plan.OpHunk {
			b.WriteString("\n" + diffGutter + "@@ " + l.Text + " @@")
			continue
		}
		for j, piece := range prompt.Wrap(l.Text, wrapWidth) {
			op := l.Op
			if j > 0 {
				op = wrapMark
			}
			b.WriteString("\n" + diffGutter + op + piece)
		}
	}
	if more := len(p.Lines) - n; more > 0 {
		fmt.Fprintf(b, "\n%s… %d more diff lines not shown here: the approval page shows the whole diff, and every argument it stands for is listed in full below", diffGutter, more)
		return false
	}
	return true
}

func renderTable(b *strings.Builder, p plan.PartView) bool {
	partHeading(b, p, plural(len(p.Rows), "row"))
	b.WriteString("\n" + diffGutter + strings.Join(p.Columns, " | "))
	n := min(len(p.Rows), plan.ShortTableRows)
	for _, r := range p.Rows[:n] {
		b.WriteString("\n" + diffGutter + strings.Join(r, " | "))
	}
	if more := len(p.Rows) - n; more > 0 {
		fmt.Fprintf(b, "\n%s… %d more rows not shown here: the approval page shows the whole table, and every argument it stands for is listed in full below", diffGutter, more)
		return false
	}
	return true
}

// argumentBlock renders an argument that reads better over several lines:
// a JSON object or array as indented JSON, a string of several lines as
// its lines. Each line is shown after the block gutter. "" for a value that
// fits one line (argumentValue shows it).
func argumentBlock(raw json.RawMessage) string {
	var lines []string
	var head string
	var s string
	switch {
	case json.Unmarshal(raw, &s) == nil:
		if !strings.Contains(s, "\n") {
			return ""
		}
		lines = strings.Split(s, "\n")
		head = fmt.Sprintf("text of %d lines, %d characters:", len(lines), len([]rune(s)))
	case len(raw) > 0 && (raw[0] == '{' || raw[0] == '['):
		var buf bytes.Buffer
		if json.Indent(&buf, raw, "", "  ") != nil {
			return ""
		}
		if !bytes.Contains(buf.Bytes(), []byte("\n")) {
			return "" // {} or []
		}
		lines = strings.Split(buf.String(), "\n")
		head = "JSON:"
	default:
		return ""
	}
	var b strings.Builder
	b.WriteString(head)
	for _, l := range lines {
		for j, piece := range prompt.Wrap(prompt.CodeLine(l), wrapWidth) {
			mark := " "
			if j > 0 {
				mark = wrapMark
			}
			b.WriteString("\n" + blockGutter + mark + piece)
		}
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
