package prompt

import (
	"fmt"
	"strings"
	"unicode"
)

// Visible makes plan text safe to show a human: control characters, bidi
// overrides and isolates, zero-width and other invisible format characters
// become visible escapes such as \n or \u202e, so a summary cannot reorder
// or hide what the approver reads. The gate sanitizes plans already; the
// service does it again because any gated server holding the secret can
// send it text. HTML escaping is html/template's job, on top of this.
func Visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == unicode.ReplacementChar:
			b.WriteString(`\ufffd`)
		case r == ' ':
			b.WriteRune(r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zs, r) ||
			unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r) || unicode.Is(unicode.Co, r) ||
			!unicode.IsPrint(r) || isInvisible(r):
			if r > 0xffff {
				fmt.Fprintf(&b, `\U%08x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isInvisible lists characters that render as nothing or as blank space
// but are not in the categories above.
func isInvisible(r rune) bool {
	switch r {
	case 0x115f, 0x1160, 0x3164, 0xffa0, 0x2800, 0x034f, 0x17b4, 0x17b5:
		return true
	}
	return (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0xe0100 && r <= 0xe01ef)
}
