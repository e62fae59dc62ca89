package mcpsafe

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/plan"
	"pgregory.net/rapid"
)

// applyDiff rebuilds the new text from the old one and diff lines: the
// check that a diff shows every change (and only changes).
func applyDiff(t *rapid.T, old []string, lines []plan.DiffLine) []string {
	var out []string
	at := 0 // next old line
	for _, l := range lines {
		switch l.Op {
		case plan.OpHunk:
			f := strings.Fields(l.Text)
			start, _, _ := strings.Cut(f[0][1:], ",")
			n, err := strconv.Atoi(start)
			if err != nil {
				t.Fatalf("hunk header %q", l.Text)
			}
			// 1-based, but "-3,0" (nothing removed) means after line 3.
			if _, count, _ := strings.Cut(f[0][1:], ","); count != "0" {
				n--
			}
			if n < at || n > len(old) {
				t.Fatalf("hunk %q goes back or past the end (at %d of %d)", l.Text, at, len(old))
			}
			out = append(out, old[at:n]...)
			at = n
		case plan.OpContext, plan.OpRemove:
			if at >= len(old) || old[at] != l.Text {
				t.Fatalf("line %q is not old line %d", l.Text, at)
			}
			if l.Op == plan.OpContext {
				out = append(out, l.Text)
			}
			at++
		case plan.OpAdd:
			out = append(out, l.Text)
		}
	}
	return append(out, old[at:]...)
}

func textOf(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n") + "\n"
}

// The computed diff, applied to the old text, gives the new one; written
// out as a unified diff and read back, it is the same diff.
func TestDiffProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		gen := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c", "", " +x", "-y", "@@ z"}), 0, 40)
		old, new := gen.Draw(t, "old"), gen.Draw(t, "new")
		lines, err := computeDiff(textOf(old), textOf(new))
		if err != nil {
			t.Fatal(err)
		}
		if got := applyDiff(t, old, lines); textOf(got) != textOf(new) {
			t.Fatalf("applied: %q, want %q", got, new)
		}
		var b strings.Builder
		b.WriteString("--- a\n+++ b\n")
		for _, l := range lines {
			if l.Op == plan.OpHunk {
				b.WriteString("@@ " + l.Text + " @@\n")
			} else {
				b.WriteString(l.Op + l.Text + "\n")
			}
		}
		back, err := parseUnified(b.String())
		if err != nil {
			t.Fatalf("reading back %q: %v", b.String(), err)
		}
		if len(back) != len(lines) {
			t.Fatalf("read back %d lines of %d", len(back), len(lines))
		}
		for i := range back {
			if back[i] != lines[i] {
				t.Fatalf("line %d read back as %+v, was %+v", i, back[i], lines[i])
			}
		}
	})
}

// Any text given as a ready diff is read or refused, never a panic, and
// what is read has only the four ops.
func TestParseUnifiedAnyText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom([]string{"@@ -1,2 +1,2 @@\n", "@@ -0,0 +1 @@\n", "@@ -1 +1,-1 @@\n", " a\n", "-b\n", "+c\n", "\\ No newline\n", "```diff\n", "x\n", "\n", "--- a\n", "@@ -1,99999 +1 @@\n"}), 0, 20).Draw(t, "diff")
		lines, err := parseUnified(strings.Join(parts, ""))
		if err != nil {
			return
		}
		for _, l := range lines {
			switch l.Op {
			case plan.OpAdd, plan.OpRemove, plan.OpContext, plan.OpHunk:
			default:
				t.Fatalf("op %q", l.Op)
			}
		}
	})
}

// The worst case a part may be: 999 lines replaced by 999 others
// (with the hunk header, about the limit of 2,000 diff lines), and a 200-line edit with every other
// line changed.
func BenchmarkDiffPart(b *testing.B) {
	gen := func(prefix string, n, every int) string {
		var sb strings.Builder
		for i := range n {
			if every > 0 && i%every == 0 {
				sb.WriteString(prefix)
			}
			sb.WriteString("line " + strconv.Itoa(i) + "\n")
		}
		return sb.String()
	}
	for _, c := range []struct{ name, old, new string }{
		{"all-999-replaced", gen("old ", 999, 1), gen("new ", 999, 1)},
		{"200-lines-every-other", gen("", 200, 0), gen("edited ", 200, 2)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := partView(plan.Part{Diff: &plan.Diff{Old: c.old, New: c.new}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
