package prompt

import (
	"strconv"
	"strings"
)

// MaxSpaceRun is the longest run of spaces CodeLine shows as spaces; a
// longer run is shown as a count, "⟨N spaces⟩".
const MaxSpaceRun = 16

// TabWidth is how many spaces CodeLine shows a tab as.
const TabWidth = 4

// CodeLine renders one line of text from an untrusted source that a human
// reads as code or file content: a line of a diff, a line of a JSON value,
// a line of a multi-line argument. It is meant to be shown after a prefix
// the caller fixes (a diff's "+" or "-", a gutter), so that nothing in the
// line can pose as the structure around it:
//
//   - it never yields a line break: a newline or carriage return in s is
//     shown as \n or \r (a carriage return could overprint the line);
//   - everything Text escapes is escaped here too: bidi controls,
//     zero-width and other invisible characters, other controls, invalid
//     UTF-8, combining marks without a visible base;
//   - a tab is shown as TabWidth spaces, and a run of more than
//     MaxSpaceRun spaces (tabs counted as TabWidth) as "⟨N spaces⟩", so that
//     a run of spaces cannot push text onto what looks like a line of its
//     own when the reader's screen wraps; a run at the end of the line is
//     always shown as a count, so two lines that differ only in trailing
//     spaces do not look the same;
//   - a literal "⟨" is escaped (\u27e8), so that the count cannot be faked.
//
// Indentation, quotes and backslashes stay as they are: like Text, CodeLine
// is not injective (a literal \n and an escaped newline look the same).
// Use Quote for a value a human compares character by character.
func CodeLine(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	var e escaper
	run := 0
	flush := func(end bool) {
		switch {
		case run == 0:
		case run > MaxSpaceRun || end:
			b.WriteString("⟨" + strconv.Itoa(run) + " spaces⟩")
		default:
			b.WriteString(strings.Repeat(" ", run))
		}
		run = 0
	}
	for i := 0; i < len(s); {
		t, n := e.next(s, i)
		r := s[i]
		switch {
		case n == 1 && r == ' ':
			run++
			e.base, e.marks = false, 0
		case n == 1 && r == '\t':
			run += TabWidth
			e.base, e.marks = false, 0
		case n == 1 && (r == '"' || r == '\\'):
			flush(false)
			b.WriteByte(r)
		case n == 3 && s[i:i+n] == "⟨":
			flush(false)
			b.WriteString(`\u27e8`)
		case n > 1 && lookalikes[decodeAt(s, i)]:
			flush(false)
			b.WriteString(s[i : i+n])
		default:
			flush(false)
			b.WriteString(t.text)
		}
		i += n
	}
	flush(true)
	return b.String()
}

// Wrap cuts a rendered line into pieces of at most width runes, for a
// reader whose screen would wrap it anyway: the caller shows each piece
// after its own continuation marker, so a piece never starts a line of
// its own. A width under 1 returns the line whole.
func Wrap(line string, width int) []string {
	if width < 1 {
		return []string{line}
	}
	var out []string
	runes := []rune(line)
	for len(runes) > width {
		out = append(out, string(runes[:width]))
		runes = runes[width:]
	}
	return append(out, string(runes))
}
