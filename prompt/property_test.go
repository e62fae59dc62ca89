package prompt

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// tricky holds runes and bytes that look alike, vanish, or take part in
// the escape syntax itself.
var tricky = []string{
	" ", "  ", "\\", `"`, "n", "x", "u", "U", "2", "0", "e", "a", "…", ".", "(", ")",
	"\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x80", "\xff", "\xe2\x80", "\u0085",
	"\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\u00ad", "\u00a0", "\u3000",
	"\u0430", "\u0435", "\u0301", "\u034f", "\ufe0f", "\u3164", "\u2800",
	"\u201d", "\uff02", "\uff3c", "\ufffd", "\U000e0041", "é", "\u093f", "\u0e34",
	"\\x20", "\\u202e", `\"`,
}

func genTricky(t *rapid.T, label string) string {
	parts := rapid.SliceOfN(rapid.SampledFrom(tricky), 0, 12).Draw(t, label)
	return strings.Join(parts, "")
}

func genValue(t *rapid.T, label string) string {
	switch rapid.IntRange(0, 2).Draw(t, label+"-kind") {
	case 0:
		return rapid.String().Draw(t, label)
	case 1:
		return genTricky(t, label)
	default:
		return string(rapid.SliceOfN(rapid.Byte(), 0, 20).Draw(t, label))
	}
}

// nearTwin returns a different string that shares most of s: one edit at
// a random place.
func nearTwin(t *rapid.T, s string) string {
	i := rapid.IntRange(0, len(s)).Draw(t, "at")
	ins := rapid.SampledFrom(tricky).Draw(t, "insert")
	switch rapid.IntRange(0, 2).Draw(t, "edit") {
	case 0:
		return s[:i] + ins + s[i:]
	case 1:
		if i < len(s) {
			return s[:i] + s[i+1:]
		}
		return s + ins
	default:
		if i < len(s) {
			return s[:i] + ins + s[i+1:]
		}
		return ins + s
	}
}

func TestPropertyInjective(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		max := rapid.IntRange(0, 200).Draw(t, "max")
		a := genValue(t, "a")
		var b string
		if rapid.Bool().Draw(t, "twin") {
			if rapid.Bool().Draw(t, "long") {
				pad := strings.Repeat(rapid.SampledFrom([]string{"a", " ", "\u202e", "\x80", "é"}).Draw(t, "pad"), rapid.IntRange(50, 400).Draw(t, "n"))
				a = pad + a + pad
			}
			b = nearTwin(t, a)
		} else {
			b = genValue(t, "b")
		}
		if a == b {
			return
		}
		qa, qb := QuoteN(a, max), QuoteN(b, max)
		if qa == qb {
			t.Fatalf("%q and %q both render as %s", a, b, qa)
		}
	})
}

func TestPropertyOneLineDecodable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genValue(t, "s")
		if rapid.Bool().Draw(t, "long") {
			s = strings.Repeat(s, rapid.IntRange(1, 60).Draw(t, "times"))
		}
		max := rapid.IntRange(0, 200).Draw(t, "max")
		checkRendering(t, s, max, QuoteN(s, max))
	})
}
