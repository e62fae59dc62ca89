package prompt

import "strings"

// Text renders free text from an untrusted source, such as the title or
// description an upstream MCP server gives its tools, for a reader who
// expects prose: line breaks, tabs, spaces, quotes and backslashes stay as
// they are, and no quotes are added. Everything else Quote would escape is
// escaped the same way: bidi controls and other format characters,
// zero-width and invisible characters (so instructions hidden in Unicode
// tag characters become visible), controls other than newline and tab
// (a carriage return included, which could overprint a line), invalid
// UTF-8, and combining marks without a visible base.
//
// Text is not injective (a literal backslash sequence and an escape look
// the same) and never cuts the text: use it for prose a human reads, and
// Quote for a value a human compares or approves.
func Text(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	var e escaper
	for i := 0; i < len(s); {
		t, n := e.next(s, i)
		switch r := s[i]; {
		case n == 1 && (r == '\n' || r == '\t' || r == ' ' || r == '"' || r == '\\'):
			b.WriteByte(r)
		case n > 1 && lookalikes[decodeAt(s, i)]:
			// Nothing here for a look-alike quote or backslash to fake.
			b.WriteString(s[i : i+n])
		default:
			b.WriteString(t.text)
		}
		i += n
	}
	return b.String()
}

func decodeAt(s string, i int) rune {
	for _, r := range s[i:] {
		return r
	}
	return 0
}
