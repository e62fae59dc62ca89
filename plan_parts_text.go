package mcpsafe

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

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

// shownLimits is how much of each long thing a prompt shows. The whole
// form (wholeLimits) abbreviates only parts, to their short form, and
// lists every argument in full; a bounded form (boundedLimits, for the
// elicitation form only) also abbreviates long argument values. Either
// says what it left out, in words and counts.
type shownLimits struct {
	bounded    bool
	diffLines  int // of a diff part
	tableRows  int // of a table part
	blockLines int // display lines of an argument shown as a block
	valueRunes int // of a one-line string argument
}

var wholeLimits = shownLimits{diffLines: plan.ShortDiffLines, tableRows: plan.ShortTableRows}

// renderParts writes the parts, each whole or abbreviated to its short
// form with the count of what is not shown, and returns the arguments that
// parts shown whole showed, with words for the argument list.
func renderParts(b *strings.Builder, parts []plan.PartView) map[string]string {
	return renderPartsWithin(b, parts, wholeLimits)
}

func renderPartsWithin(b *strings.Builder, parts []plan.PartView, lim shownLimits) map[string]string {
	shown := map[string]string{}
	for i, p := range parts {
		b.WriteString("\n")
		whole := false
		switch p.Kind {
		case "diff":
			whole = renderDiff(b, p, lim)
		case "table":
			whole = renderTable(b, p, lim)
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

func renderDiff(b *strings.Builder, p plan.PartView, lim shownLimits) bool {
	partHeading(b, p, fmt.Sprintf("%s added, %d removed", plural(p.Added, "line"), p.Removed))
	if len(p.Lines) == 0 {
		b.WriteString("\n" + diffGutter + "(no change)")
		return true
	}
	n := min(len(p.Lines), lim.diffLines)
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
		fmt.Fprintf(b, "\n%s… %d more diff lines not shown here%s", diffGutter, more, lim.restOfPart("diff"))
		return false
	}
	return true
}

func renderTable(b *strings.Builder, p plan.PartView, lim shownLimits) bool {
	partHeading(b, p, plural(len(p.Rows), "row"))
	b.WriteString("\n" + diffGutter + strings.Join(p.Columns, " | "))
	n := min(len(p.Rows), lim.tableRows)
	for _, r := range p.Rows[:n] {
		b.WriteString("\n" + diffGutter + strings.Join(r, " | "))
	}
	if more := len(p.Rows) - n; more > 0 {
		fmt.Fprintf(b, "\n%s… %d more rows not shown here%s", diffGutter, more, lim.restOfPart("table"))
		return false
	}
	return true
}

// restOfPart says where the rest of an abbreviated part is.
func (lim shownLimits) restOfPart(kind string) string {
	if lim.bounded {
		return "; every argument it stands for is listed below, as far as this form shows it"
	}
	return ": the approval page shows the whole " + kind + ", and every argument it stands for is listed in full below"
}

// argumentBlock renders an argument that reads better over several lines:
// a JSON object or array as indented JSON, a string of several lines as
// its lines. Each line is shown after the block gutter. "" for a value that
// fits one line (argumentValue shows it). A bounded form shows the first
// lim.blockLines display lines and then counts what it left out.
func argumentBlock(raw json.RawMessage, lim shownLimits) string {
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
	shown := 0 // display lines written
	for i, l := range lines {
		for j, piece := range prompt.Wrap(prompt.CodeLine(l), wrapWidth) {
			if lim.bounded && shown == lim.blockLines {
				b.WriteString(blockRest(lines, i, s))
				return b.String()
			}
			mark := " "
			if j > 0 {
				mark = wrapMark
			}
			b.WriteString("\n" + blockGutter + mark + piece)
			shown++
		}
	}
	return b.String()
}

// blockRest says what a bounded form leaves out of a block whose lines
// before from were shown whole (line from may have been shown in part: it
// is counted as left out). It stands after the gutter without its bar,
// where no line of the value can be. text is the value when it is a
// string: its SHA-256 is what the written file's will be.
func blockRest(lines []string, from int, text string) string {
	chars := len(lines) - from - 1 // the newlines between the lines left out
	for _, l := range lines[from:] {
		chars += utf8.RuneCountInString(l)
	}
	total := len(lines) - 1
	for _, l := range lines {
		total += utf8.RuneCountInString(l)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s… not shown here: lines %d to %d of %d (%d of its %d characters)",
		strings.TrimSuffix(blockGutter, "│"), from+1, len(lines), len(lines), chars, total)
	if text != "" {
		sum := sha256.Sum256([]byte(text))
		fmt.Fprintf(&b, "; the whole text's SHA-256 is %s", hex.EncodeToString(sum[:]))
	}
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
