// Package prompt renders untrusted values (file names, arguments, targets)
// for a human who is about to approve an action, so that what the human
// reads is what will happen.
//
// Quote puts a value on one line between double quotes and makes every
// character that could hide, fake or reorder text visible as an escape.
// The rendering is injective: two different values never render the same.
// That holds because
//
//   - inside the quotes every backslash starts an escape and the escapes
//     are self-delimiting (\\ \" \n \r \t \xHH \uHHHH \UHHHHHHHH), and a
//     raw double quote never appears, so the quoted part decodes to exactly
//     one byte string;
//   - a value too long to show whole is cut in the middle with "…" (which
//     never appears raw in an uncut value: a real U+2026 is shown as
//     \u2026) and followed by its length and a SHA-256 prefix of the whole
//     value, so two long values that share both ends still differ;
//   - the mixed-script flag that may follow is a function of the value.
//
// Escaped (never passed through):
//
//   - \ and " as \\ and \"; newline, carriage return and tab as \n \r \t;
//   - other C0 controls and DEL as \xHH; invalid UTF-8 bytes as \xHH with
//     HH >= 80 (a valid character is never written that way, so the two
//     cannot be confused);
//   - everything unicode.IsPrint refuses: C1 controls, format characters
//     (bidi embeddings, overrides and isolates U+202A-202E and U+2066-2069,
//     zero-width U+200B-200F, U+2060-2064, U+FEFF, soft hyphen, tag
//     characters), private use, surrogates, unassigned code points (as of
//     Go's Unicode tables, so characters newer than them are escaped too),
//     and all spaces other than U+0020 (U+00A0, U+3000, U+2028, ...);
//   - default-ignorable characters that Unicode classes as letters or marks
//     (Hangul fillers, U+034F, Khmer inherent vowels, variation selectors)
//     and the blank Braille pattern U+2800, which all render as nothing;
//   - the ASCII space when it is first or last or follows another space, so
//     "a b", "a  b", "ab", " ab" and "cache.txt " all look different; a
//     single inner space stays a space;
//   - combining marks (Mn, Me, Mc) that have no visible base to sit on (at
//     the start, after a space, punctuation or an escape), the third and
//     later marks in a row (stacked marks can cover neighbouring text),
//     and marks of the Inherited script, i.e. the generic diacritics and
//     selectors that attach to any letter: "e\u0301" is shown that way so
//     it cannot pass for the precomposed "é", which a file system treats
//     as a different name. Script-specific marks after a letter (Devanagari
//     vowel signs, Thai tone marks, Hebrew points) are shown as they are;
//   - look-alikes of the characters that carry this format: double quotes
//     (“ ” „ ‟ ″ ＂ ...), backslashes (＼ ∖ ⧵ ...), the ellipsis and U+FFFD.
//
// Strong right-to-left letters (Hebrew, Arabic) are shown as they are and
// can still reorder neighbouring digits and punctuation on screen; such a
// value mixed with Latin is flagged by MixedScript. Emoji and other
// symbols pass through.
package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultMax is the number of runes Quote shows between the quotes.
const DefaultMax = 120

// minMax keeps both ends of a cut value long enough to recognize.
const minMax = 16

// Quote renders s for a human: one line, quoted, escaped, at most
// DefaultMax runes between the quotes.
func Quote(s string) string { return QuoteN(s, DefaultMax) }

// QuoteWhole is Quote without a length limit: the value is never cut. Use
// it where a cut could hide the part that matters, and bound the text
// around it instead.
func QuoteWhole(s string) string {
	// An escape is at most 4 columns per input byte (\xHH for one byte,
	// \uHHHH for two or three, \UHHHHHHHH for four).
	return QuoteN(s, 4*len(s)+minMax)
}

// QuoteN is Quote with a limit of max runes between the quotes (at least
// 16). A longer rendering is cut in the middle and followed by the value's
// length in characters and a SHA-256 prefix, e.g.
//
//	"aaaa…zzzz" (5000 chars, sha256:1a2b3c4d5e6f7a8b)
//
// A value that mixes scripts is followed by a flag such as
// [mixed scripts: Cyrillic+Latin].
func QuoteN(s string, max int) string {
	if max < minMax {
		max = minMax
	}
	var b strings.Builder
	b.Grow(max*2 + 64)
	b.WriteByte('"')
	// One pass, keeping only what can be shown: the first tokens while the
	// value might still fit, then a sliding window for the tail. A huge
	// value costs time linear in its length and memory in max.
	var e escaper
	shown := make([]token, 0, min(len(s), max+1))
	width, i := 0, 0
	for i < len(s) && width <= max {
		t, n := e.next(s, i)
		shown = append(shown, t)
		width += t.width
		i += n
	}
	if width <= max {
		for _, t := range shown {
			b.WriteString(t.text)
		}
		b.WriteByte('"')
	} else {
		// Whole escapes only: cutting "\u202e" to "\u20" would show a
		// different, harmless-looking character.
		budget := max - 1 // the ellipsis
		head, used := 0, 0
		for head < len(shown) && used+shown[head].width <= (budget+1)/2 {
			used += shown[head].width
			head++
		}
		for _, t := range shown[:head] {
			b.WriteString(t.text)
		}
		tailBudget := budget - used
		tail, tailWidth := shown[head:], width-used
		for {
			for tailWidth > tailBudget {
				tailWidth -= tail[0].width
				tail = tail[1:]
			}
			if i >= len(s) {
				break
			}
			t, n := e.next(s, i)
			tail = append(tail, t)
			tailWidth += t.width
			i += n
		}
		b.WriteString("…")
		for _, t := range tail {
			b.WriteString(t.text)
		}
		sum := sha256.Sum256([]byte(s))
		fmt.Fprintf(&b, `" (%d chars, sha256:%s)`, utf8.RuneCountInString(s), hex.EncodeToString(sum[:8]))
	}
	if scripts := MixedScript(s); scripts != nil {
		b.WriteString(" [mixed scripts: ")
		b.WriteString(strings.Join(scripts, "+"))
		b.WriteByte(']')
	}
	return b.String()
}

// token is the rendering of one input rune (or invalid byte).
type token struct {
	text  string
	width int // runes on screen
}

// escaper renders one rune (or invalid byte) at a time; it carries the
// little context the rules need.
type escaper struct {
	prev  rune
	base  bool // the last shown rune can carry a combining mark
	marks int  // combining marks shown in a row on that base
}

func (e *escaper) next(s string, i int) (token, int) {
	r, size := utf8.DecodeRuneInString(s[i:])
	var t token
	switch {
	case r == utf8.RuneError && size == 1:
		t = esc(`\x` + hex2(uint32(s[i]), 2))
	case r == ' ':
		if i == 0 || i+size == len(s) || e.prev == ' ' {
			t = esc(`\x20`)
		} else {
			t = lit(" ")
		}
	case r < 0x80:
		t = escapeASCII(r, s[i:i+1])
	case unicode.IsMark(r):
		if !e.base || e.marks >= 2 || unicode.Is(unicode.Inherited, r) || hidden(r) {
			t = escRune(r)
		} else {
			t = lit(s[i : i+size])
			e.marks++
		}
	case hidden(r):
		t = escRune(r)
	default:
		t = lit(s[i : i+size])
	}
	if t.width != 1 || t.text == " " {
		e.base, e.marks = false, 0
	} else if !unicode.IsMark(r) {
		e.base = unicode.IsLetter(r) || unicode.IsNumber(r)
		e.marks = 0
	}
	e.prev = r
	if size == 1 && r == utf8.RuneError {
		e.prev = -1
	}
	return t, size
}

func hex2(v uint32, digits int) string {
	const hexdigits = "0123456789abcdef"
	var buf [8]byte
	for k := digits - 1; k >= 0; k-- {
		buf[k] = hexdigits[v&0xf]
		v >>= 4
	}
	return string(buf[:digits])
}

func lit(s string) token { return token{text: s, width: 1} }
func esc(s string) token { return token{text: s, width: len(s)} }

func escRune(r rune) token {
	if r > 0xffff {
		return esc(`\U` + hex2(uint32(r), 8))
	}
	return esc(`\u` + hex2(uint32(r), 4))
}

func escapeASCII(r rune, raw string) token {
	switch r {
	case '\\':
		return esc(`\\`)
	case '"':
		return esc(`\"`)
	case '\n':
		return esc(`\n`)
	case '\r':
		return esc(`\r`)
	case '\t':
		return esc(`\t`)
	}
	if r < 0x20 || r == 0x7f {
		return esc(`\x` + hex2(uint32(r), 2))
	}
	return lit(raw)
}

// lookalikes pose as the characters this format is made of: the quotes
// around a value, the backslash of an escape, the ellipsis of a cut, or
// the replacement character a reader may take for a rendering problem.
var lookalikes = map[rune]bool{
	'\u02ba': true, '\u02dd': true, '\u02ee': true, '\u05f4': true,
	'\u201c': true, '\u201d': true, '\u201e': true, '\u201f': true, '\u2033': true,
	'\u2036': true, '\u3003': true, '\u301d': true, '\u301e': true, '\u301f': true,
	'\uff02': true,
	'\u2216': true, '\u2572': true, '\u27cd': true, '\u29f5': true, '\u29f9': true,
	'\ufe68': true, '\uff3c': true,
	'\u2026': true, '\ufffd': true, '\u22ef': true, '\u2025': true,
}

// hidden reports a non-ASCII rune that must be escaped.
func hidden(r rune) bool {
	return !unicode.IsPrint(r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r) ||
		r == '\u2800' ||
		lookalikes[r]
}
