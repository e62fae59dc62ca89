package mcpsafe

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// Part is one typed part of a plan, besides its Summary and Details: a
// change of text shown as a unified diff, or a table. Exactly one of Diff
// and Table is set. (The plan's targets with their current state are the
// third kind: Plan.Targets.)
//
// Every surface shows the parts: the approval prompt a client shows (plain
// text, a compact unified diff), the page of `mcpsafe approvals serve` (a
// diff view, long diffs folded behind "expand"), the channel request (as
// data, plan.PartView). A part is shown whole on the page and in the channel
// request; the prompt shows at most ShortDiffLines lines of a diff and
// ShortTableRows rows of a table, and says how many more there are and
// where to see them, never cutting silently. The approval binds the whole
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

// Limits on the parts of one plan. A plan over them is refused
// (plan_too_large) rather than shown in part.
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

// partViews renders the plan's parts (already redacted, redactPlan) and
// refuses parts over the limits.
func partViews(parts []Part) ([]plan.PartView, *Refusal) {
	if len(parts) > MaxParts {
		return nil, refusal(ReasonPlanTooLarge, "the plan has %d parts, over the limit of %d", len(parts), MaxParts)
	}
	var out []plan.PartView
	for i, p := range parts {
		v, err := partView(p)
		if err != nil {
			var rf *Refusal
			if errors.As(err, &rf) {
				return nil, rf
			}
			return nil, refusal(ReasonPreviewFailed, "plan part %d: %v", i+1, err)
		}
		out = append(out, v)
	}
	return out, nil
}

func partView(p Part) (plan.PartView, error) {
	v := plan.PartView{Title: displayLine(p.Title), Shows: p.Shows}
	switch {
	case p.Diff != nil && p.Table == nil:
		d := p.Diff
		if n := len(d.Old) + len(d.New) + len(d.Unified); n > MaxPartBytes {
			return v, tooLarge("a diff of %d bytes", n)
		}
		v.Kind, v.Path = "diff", prompt.QuoteWhole(d.Path)
		if d.Path == "" {
			v.Path = ""
		}
		var lines []plan.DiffLine
		var err error
		if d.Unified != "" {
			if d.Old != "" || d.New != "" {
				return v, errors.New("a diff has Unified and Old/New; give one")
			}
			lines, err = parseUnified(d.Unified)
		} else {
			lines, err = computeDiff(d.Old, d.New)
		}
		if err != nil {
			return v, err
		}
		if len(lines) > MaxPartLines {
			return v, tooLarge("a diff of %d lines", len(lines))
		}
		for i, l := range lines {
			switch l.Op {
			case plan.OpAdd:
				v.Added++
			case plan.OpRemove:
				v.Removed++
			}
			if l.Op != plan.OpHunk {
				lines[i].Text = prompt.CodeLine(l.Text)
			}
		}
		v.Lines = lines
	case p.Table != nil && p.Diff == nil:
		t := p.Table
		if len(t.Rows) > MaxPartLines {
			return v, tooLarge("a table of %d rows", len(t.Rows))
		}
		n := 0
		v.Kind = "table"
		for _, c := range t.Columns {
			n += len(c)
			v.Columns = append(v.Columns, displayLine(c))
		}
		for _, r := range t.Rows {
			if len(r) != len(t.Columns) {
				return v, fmt.Errorf("a table row has %d cells for %d columns", len(r), len(t.Columns))
			}
			row := make([]string, len(r))
			for i, c := range r {
				n += len(c)
				row[i] = prompt.Quote(c)
			}
			v.Rows = append(v.Rows, row)
		}
		if n > MaxPartBytes {
			return v, tooLarge("a table of %d bytes", n)
		}
	default:
		return v, errors.New("a part must have exactly one of Diff and Table")
	}
	return v, nil
}

func tooLarge(format string, a ...any) *Refusal {
	return refusal(ReasonPlanTooLarge, "the plan has %s, over the limit of %d lines and %d bytes a part may have to be shown whole; it is never cut, so the call is refused. Split it into smaller calls",
		fmt.Sprintf(format, a...), MaxPartLines, MaxPartBytes)
}

// computeDiff is the unified diff of old and new, three lines of context.
func computeDiff(old, new string) ([]plan.DiffLine, error) {
	if old == new {
		return nil, nil
	}
	u, err := udiff.ToUnifiedDiff("old", "new", old, udiff.Lines(old, new), udiff.DefaultContextLines)
	if err != nil {
		return nil, err
	}
	var out []plan.DiffLine
	for _, h := range u.Hunks {
		var del, ins int
		for _, l := range h.Lines {
			switch l.Kind {
			case udiff.Delete:
				del++
			case udiff.Insert:
				ins++
			default:
				del++
				ins++
			}
		}
		out = append(out, plan.DiffLine{Op: plan.OpHunk, Text: hunkRange(h.FromLine, del) + " " + strings.Replace(hunkRange(h.ToLine, ins), "-", "+", 1)})
		for _, l := range h.Lines {
			op := plan.OpContext
			switch l.Kind {
			case udiff.Delete:
				op = plan.OpRemove
			case udiff.Insert:
				op = plan.OpAdd
			}
			out = append(out, plan.DiffLine{Op: op, Text: strings.TrimSuffix(l.Content, "\n")})
		}
	}
	return out, nil
}

func hunkRange(start, n int) string {
	if n == 0 {
		start--
	}
	return "-" + strconv.Itoa(start) + "," + strconv.Itoa(n)
}

// parseUnified reads a ready unified diff: the hunks, each exactly as long
// as its header says; file headers ("--- a", "+++ b", "Index:", "===")
// and a Markdown fence around the diff are skipped. Anything else outside
// a hunk, or a hunk that ends early, is an error: a diff that cannot be
// read is not shown as if it were one.
func parseUnified(text string) ([]plan.DiffLine, error) {
	var out []plan.DiffLine
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), MaxPartBytes+1)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if !strings.HasPrefix(line, "@@ ") {
			if line == "" || line == "```" || line == "```diff" || strings.HasPrefix(line, "Index: ") || strings.HasPrefix(line, "===") ||
				strings.HasPrefix(line, "--- ") || strings.HasPrefix(line, "+++ ") || strings.HasPrefix(line, "diff ") {
				continue
			}
			return nil, fmt.Errorf("a line of the diff is neither a header nor in a hunk: %s", prompt.Quote(line))
		}
		del, ins, rng, err := hunkHeader(line)
		if err != nil {
			return nil, err
		}
		out = append(out, plan.DiffLine{Op: plan.OpHunk, Text: rng})
		for del > 0 || ins > 0 {
			if !sc.Scan() {
				return nil, errors.New("a hunk of the diff ends before its header says")
			}
			l := sc.Text()
			if strings.HasPrefix(l, `\ `) { // "\ No newline at end of file"
				continue
			}
			if l == "" {
				l = " " // some tools drop the space of an empty context line
			}
			op, body := l[:1], l[1:]
			switch op {
			case plan.OpContext:
				del--
				ins--
			case plan.OpRemove:
				del--
			case plan.OpAdd:
				ins--
			default:
				return nil, fmt.Errorf("a line in a hunk of the diff has no +, - or space: %s", prompt.Quote(l))
			}
			if del < 0 || ins < 0 {
				return nil, errors.New("a hunk of the diff is longer than its header says")
			}
			out = append(out, plan.DiffLine{Op: op, Text: body})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// hunkHeader reads "@@ -a,b +c,d @@ ..." into the counts of old and new
// lines and the range text "-a,b +c,d".
func hunkHeader(line string) (del, ins int, rng string, err error) {
	f := strings.Fields(line)
	if len(f) < 4 || f[3] != "@@" || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return 0, 0, "", fmt.Errorf("not a hunk header: %s", prompt.Quote(line))
	}
	count := func(r string) (int, error) {
		_, n, ok := strings.Cut(r[1:], ",")
		if !ok {
			return 1, nil
		}
		return strconv.Atoi(n)
	}
	if del, err = count(f[1]); err == nil {
		ins, err = count(f[2])
	}
	if err != nil || del < 0 || ins < 0 || del+ins > MaxPartLines {
		return 0, 0, "", fmt.Errorf("not a hunk header: %s", prompt.Quote(line))
	}
	return del, ins, f[1] + " " + f[2], nil
}

// shownDigest is the SHA-256 of the plan as shown (summary, details,
// targets and parts as rendered): what the journal records of it.
func shownDigest(v result.PlanView, targets []Target) string {
	b, _ := json.Marshal(struct {
		Plan    result.PlanView `json:"plan"`
		Targets []Target        `json:"targets,omitempty"`
	}{v, targets})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
