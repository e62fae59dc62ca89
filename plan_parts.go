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
	"unicode/utf8"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// partViews renders the plan's parts (already redacted, redactPlan) and
// refuses parts over the limits.
func partViews(parts []plan.Part) ([]plan.PartView, *Refusal) {
	if len(parts) > plan.MaxParts {
		return nil, refusal(ReasonPlanTooLarge, "the plan has %d parts, over the limit of %d", len(parts), plan.MaxParts)
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

func partView(p plan.Part) (plan.PartView, error) {
	v := plan.PartView{Title: displayLine(p.Title), Shows: p.Shows}
	switch {
	case p.Diff != nil && p.Table == nil:
		d := p.Diff
		if n := len(d.Old) + len(d.New) + len(d.Unified); n > plan.MaxPartBytes {
			return summarizedDiff(v, d, fmt.Sprintf("%d bytes", n)), nil
		}
		if n := strings.Count(d.Unified, "\n"); n > plan.MaxPartLines {
			return summarizedDiff(v, d, fmt.Sprintf("%d lines", n)), nil
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
		if len(lines) > plan.MaxPartLines {
			return summarizedDiff(v, d, fmt.Sprintf("%d lines", len(lines))), nil
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
		if len(t.Rows) > plan.MaxPartLines {
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
		if n > plan.MaxPartBytes {
			return v, tooLarge("a table of %d bytes", n)
		}
	default:
		return v, errors.New("a part must have exactly one of Diff and Table")
	}
	return v, nil
}

// summarizedDiff is a diff over the limits of a part, shown as what it is
// instead of refused: a table of its texts with their sizes and SHA-256,
// under a title that says the diff is too long to show and that the
// arguments it stands for are listed instead (Shows is dropped, so every
// surface lists them). The digests bind the texts as the diff would have:
// a current text that changes before Execute voids the approval. The
// texts were redacted before (redactPlan).
func summarizedDiff(v plan.PartView, d *plan.Diff, size string) plan.PartView {
	what := v.Title
	switch {
	case what != "":
	case d.Path != "":
		what = "Change to " + prompt.QuoteWhole(d.Path)
	default:
		what = "Change"
	}
	out := plan.PartView{
		Kind: "table",
		Title: fmt.Sprintf("%s: too long to show as a diff (a diff of %s; a part shows at most %d lines and %d KiB), so each text is counted here, and every argument it stands for is listed with the arguments",
			what, size, plan.MaxPartLines, plan.MaxPartBytes>>10),
		Columns: []string{"text", "lines", "characters", "SHA-256"},
	}
	row := func(name, text string) {
		sum := sha256.Sum256([]byte(text))
		out.Rows = append(out.Rows, []string{name, strconv.Itoa(lineCount(text)), strconv.Itoa(utf8.RuneCountInString(text)), "sha256:" + hex.EncodeToString(sum[:])})
	}
	if d.Unified != "" {
		row("the diff", d.Unified)
		return out
	}
	if d.Old != "" {
		row("current", d.Old)
	}
	row("new", d.New)
	return out
}

// lineCount is the number of lines of text: a last line without a
// newline counts, an empty text has none.
func lineCount(text string) int {
	n := strings.Count(text, "\n")
	if text != "" && !strings.HasSuffix(text, "\n") {
		n++
	}
	return n
}

func tooLarge(format string, a ...any) *Refusal {
	return refusal(ReasonPlanTooLarge, "the plan has %s, over the limit of %d lines and %d bytes a part may have to be shown whole; it is never cut, so the call is refused. Split it into smaller calls",
		fmt.Sprintf(format, a...), plan.MaxPartLines, plan.MaxPartBytes)
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
	sc.Buffer(make([]byte, 0, 64<<10), plan.MaxPartBytes+1)
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
	if err != nil || del < 0 || ins < 0 || del+ins > plan.MaxPartLines {
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
