package prompt

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestQuoteExact(t *testing.T) {
	long := strings.Repeat("a", 2500) + strings.Repeat("z", 2500)
	longSum := sha256.Sum256([]byte(long))
	cases := []struct {
		name, in, want string
	}{
		{"plain", "cache.txt", `"cache.txt"`},
		{"empty", "", `""`},
		{"newline", "a\nb", `"a\nb"`},
		{"one space", "a b", `"a b"`},
		{"two spaces", "a  b", `"a \x20b"`},
		{"three spaces", "a   b", `"a \x20\x20b"`},
		{"no space", "ab", `"ab"`},
		{"trailing space", "cache.txt ", `"cache.txt\x20"`},
		{"leading space", " cache.txt", `"\x20cache.txt"`},
		{"only space", " ", `"\x20"`},
		{"tab CR", "a\tb\rc", `"a\tb\rc"`},
		{"CRLF", "a\r\nb", `"a\r\nb"`},
		{"quote", `say "yes"`, `"say \"yes\""`},
		{"backslash", `C:\new`, `"C:\\new"`},
		{"escape lookalike text", `a\nb`, `"a\\nb"`},
		{"NUL", "a\x00b", `"a\x00b"`},
		{"ESC sequence", "\x1b[2Jok", `"\x1b[2Jok"`},
		{"DEL", "a\x7fb", `"a\x7fb"`},
		{"C1 NEL", "a\u0085b", `"a\u0085b"`},
		{"invalid byte", "a\x80b", `"a\x80b"`},
		{"invalid lead byte", "\xff\xfe", `"\xff\xfe"`},
		{"truncated sequence", "a\xe2\x80", `"a\xe2\x80"`},
		{"overlong", "\xc0\xaf", `"\xc0\xaf"`},
		{"encoded surrogate", "\xed\xa0\x80", `"\xed\xa0\x80"`},
		{"RLO", "invoice\u202efdp.exe", `"invoice\u202efdp.exe"`},
		{"bidi isolates", "\u2066a\u2069", `"\u2066a\u2069"`},
		{"LRM RLM", "a\u200e\u200fb", `"a\u200e\u200fb"`},
		{"ZWSP", "a\u200bb", `"a\u200bb"`},
		{"ZWJ", "a\u200db", `"a\u200db"`},
		{"ZWNJ", "a\u200cb", `"a\u200cb"`},
		{"word joiner", "a\u2060b", `"a\u2060b"`},
		{"BOM", "\ufeffa", `"\ufeffa"`},
		{"soft hyphen", "ad\u00admin", `"ad\u00admin"`},
		{"tag chars", "a\U000e0041\U000e007f", `"a\U000e0041\U000e007f"`},
		{"NBSP", "a\u00a0b", `"a\u00a0b"`},
		{"ideographic space", "a\u3000b", `"a\u3000b"`},
		{"line separator", "a\u2028b", `"a\u2028b"`},
		{"private use", "a\ue000b", `"a\ue000b"`},
		{"unassigned", "a\U0001fffeb", `"a\U0001fffeb"`},
		{"noncharacter", "a\ufffeb", `"a\ufffeb"`},
		{"hangul filler", "a\u3164b", `"a\u3164b"`},
		{"braille blank", "a\u2800b", `"a\u2800b"`},
		{"variation selector", "a\ufe0fb", `"a\ufe0fb"`},
		{"CGJ", "a\u034fb", `"a\u034fb"`},
		{"precomposed", "caf\u00e9", `"café"`},
		{"decomposed", "cafe\u0301", `"cafe\u0301"`},
		{"mark at start", "\u0301x", `"\u0301x"`},
		{"devanagari marks kept", "नमस्ते", `"नमस्ते"`},
		{"thai marks kept", "ที่", `"ที่"`},
		{"devanagari mark after space", "a \u093f", `"a \u093f"`},
		{"stacked script marks", "\u0e01\u0e34\u0e48\u0e34\u0e48", `"กิ่\u0e34\u0e48"`},
		{"curly quotes", "\u201cok\u201d", `"\u201cok\u201d"`},
		{"fullwidth quote", "a\uff02 b", `"a\uff02 b"`},
		{"fullwidth backslash", "a\uff3cnb", `"a\uff3cnb"`},
		{"ellipsis", "a\u2026b", `"a\u2026b"`},
		{"replacement char", "a\ufffdb", `"a\ufffdb"`},
		{"emoji", "😀.txt", `"😀.txt"`},
		{"japanese", "日本語のファイル.txt", `"日本語のファイル.txt"`},
		{"apostrophe", "O'Brien", `"O'Brien"`},
		{"cyrillic a", "c\u0430che.txt", `"cаche.txt" [mixed scripts: Cyrillic+Latin]`},
		{"all cyrillic", "\u0441\u0430\u0441\u04bb\u0435", `"сасһе"`},
		{"greek omicron", "micr\u03bfsoft", `"micrοsoft" [mixed scripts: Greek+Latin]`},
		{"5000 chars", long, `"` + strings.Repeat("a", 60) + "…" + strings.Repeat("z", 59) +
			`" (5000 chars, sha256:` + hex.EncodeToString(longSum[:8]) + `)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Quote(c.in); got != c.want {
				t.Fatalf("Quote(%q)\n got  %s\n want %s", c.in, got, c.want)
			}
		})
	}
}

// The issue's list: all of these must render differently from each other.
func TestIssueExamplesDistinct(t *testing.T) {
	in := []string{"a\nb", "a b", "a  b", "ab", "cache.txt ", "cache.txt", "c\u0430che.txt",
		"a\\nb", "a\u00a0b", "a\u200bb", "a\x20\x20b", "cafe\u0301", "caf\u00e9"}
	seen := map[string]string{}
	for _, s := range in {
		q := Quote(s)
		if prev, ok := seen[q]; ok && prev != s {
			t.Errorf("%q and %q both render as %s", prev, s, q)
		}
		seen[q] = s
	}
}

func TestTruncation(t *testing.T) {
	mid := func(c byte) string { return strings.Repeat("x", 300) + string(c) + strings.Repeat("y", 300) }
	a, b := Quote(mid('A')), Quote(mid('B'))
	if a == b {
		t.Fatalf("values differing only in the middle look the same: %s", a)
	}
	if !strings.Contains(a, "…") || !strings.Contains(a, "(601 chars, sha256:") {
		t.Fatalf("no ellipsis or hash: %s", a)
	}
	if utf8.RuneCountInString(a[:strings.Index(a, `" (`)+1]) != DefaultMax+2 {
		t.Fatalf("quoted part is not %d runes: %s", DefaultMax, a)
	}
	// Escapes are never cut in half, and both ends stay.
	s := strings.Repeat("\u202e", 100)
	q := QuoteN(s, 20)
	if !strings.HasPrefix(q, `"\u202e…\u202e\u202e" (100 chars`) {
		t.Fatalf("escape cut: %s", q)
	}
	// Exactly at the limit: no cut; one more: cut.
	if q := QuoteN(strings.Repeat("a", 20), 20); strings.Contains(q, "…") {
		t.Fatalf("cut at the limit: %s", q)
	}
	if q := QuoteN(strings.Repeat("a", 21), 20); !strings.Contains(q, "…") || !strings.HasPrefix(q, `"aaaaaaaaaa…aaaaaaaaa" (21 chars`) {
		t.Fatalf("not cut one past the limit: %s", q)
	}
	// A tiny limit is raised so both ends remain recognizable.
	if q := QuoteN(strings.Repeat("a", 100), 0); !strings.HasPrefix(q, `"aaaaaaaa…aaaaaaa"`) {
		t.Fatalf("tiny limit: %s", q)
	}
	// The mixed-script flag looks at the whole value, also the cut part.
	hiddenMiddle := strings.Repeat("a", 200) + "\u0430" + strings.Repeat("a", 200)
	if q := Quote(hiddenMiddle); !strings.HasSuffix(q, "[mixed scripts: Cyrillic+Latin]") {
		t.Fatalf("cut-away Cyrillic not flagged: %s", q)
	}
}

func TestMixedScript(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"cache.txt", nil},
		{"", nil},
		{"12345 ()", nil},
		{"c\u0430che.txt", []string{"Cyrillic", "Latin"}},
		{"\u0441ache", []string{"Cyrillic", "Latin"}},
		{"pаypаl", []string{"Cyrillic", "Latin"}},
		{"Ελληνικά", nil},
		{"Ελλnνικά", []string{"Greek", "Latin"}},
		{"\u0441\u0430\u0441\u04bb\u0435", nil}, // all Cyrillic: one script, not flagged
		{"日本語のファイル_report", nil},
		{"한국어 漢字 abc", nil},
		{"注音ㄅㄆ abc", nil},
		{"日本語 한국어", nil}, // Han with Hangul is Korean usage
		{"日本語のファイル 한국", []string{"Han", "Hangul", "Hiragana", "Katakana"}},
		{"ひらがな한국", []string{"Hangul", "Hiragana"}},
		{"עברית abc", []string{"Hebrew", "Latin"}},
		{"abc\u0301", nil}, // Inherited marks belong to no script
		{"a1\u0661", nil},  // digits are not letters
		{"Привет мир ok", []string{"Cyrillic", "Latin"}},
	}
	for _, c := range cases {
		got := MixedScript(c.in)
		if len(c.want) == 0 {
			c.want = nil
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("MixedScript(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// unquote decodes the quoted part of a rendering back to bytes and reports
// whether the value was cut. It exists to prove that uncut renderings are
// decodable, and thus injective.
func unquote(out string) (value string, cut bool, rest string, err error) {
	if !strings.HasPrefix(out, `"`) {
		return "", false, "", errors.New("no opening quote")
	}
	var b strings.Builder
	for i := 1; i < len(out); {
		c := out[i]
		switch {
		case c == '"':
			return b.String(), cut, out[i+1:], nil
		case c == '\\':
			if i+1 >= len(out) {
				return "", false, "", errors.New("dangling backslash")
			}
			n := map[byte]int{'\\': 0, '"': 0, 'n': 0, 'r': 0, 't': 0, 'x': 2, 'u': 4, 'U': 8}
			k, ok := n[out[i+1]]
			if !ok || i+2+k > len(out) {
				return "", false, "", fmt.Errorf("bad escape at %d", i)
			}
			hexs := out[i+2 : i+2+k]
			switch out[i+1] {
			case '\\', '"':
				b.WriteByte(out[i+1])
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'x':
				v, err := strconv.ParseUint(hexs, 16, 8)
				if err != nil || strings.ToLower(hexs) != hexs {
					return "", false, "", fmt.Errorf("bad \\x%s", hexs)
				}
				b.WriteByte(byte(v))
			default:
				v, err := strconv.ParseUint(hexs, 16, 32)
				if err != nil || strings.ToLower(hexs) != hexs || !utf8.ValidRune(rune(v)) {
					return "", false, "", fmt.Errorf("bad \\u%s", hexs)
				}
				b.WriteRune(rune(v))
			}
			i += 2 + k
		default:
			r, size := utf8.DecodeRuneInString(out[i:])
			if r == '…' {
				cut = true
			}
			b.WriteString(out[i : i+size])
			i += size
		}
	}
	return "", false, "", errors.New("no closing quote")
}

// checkRendering asserts the invariants every rendering must meet.
func checkRendering(t interface {
	Helper()
	Fatalf(string, ...any)
}, s string, max int, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 output for %q: %q", s, out)
	}
	for _, r := range out {
		if r == '\n' || r == '\r' || !unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) ||
			unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
			unicode.Is(unicode.Variation_Selector, r) || r == '\u2800' {
			t.Fatalf("raw %U in output for %q: %q", r, s, out)
		}
	}
	value, cut, rest, err := unquote(out)
	if err != nil {
		t.Fatalf("undecodable output for %q: %q: %v", s, out, err)
	}
	quoted := out[:len(out)-len(rest)]
	if !cut && value != s {
		t.Fatalf("decodes to %q, not %q: %s", value, s, out)
	}
	if cut {
		sum := sha256.Sum256([]byte(s))
		want := fmt.Sprintf(" (%d chars, sha256:%s)", utf8.RuneCountInString(s), hex.EncodeToString(sum[:8]))
		if !strings.HasPrefix(rest, want) {
			t.Fatalf("cut value without length and hash: %q", out)
		}
		rest = rest[len(want):]
	}
	if ms := MixedScript(s); ms != nil {
		if rest != " [mixed scripts: "+strings.Join(ms, "+")+"]" {
			t.Fatalf("bad flag %q for %q", rest, s)
		}
	} else if rest != "" {
		t.Fatalf("trailing text %q for %q", rest, s)
	}
	// Spaces that a reader cannot count are escaped.
	if strings.Contains(quoted, "  ") || strings.HasPrefix(quoted, `" `) || strings.HasSuffix(quoted, ` "`) {
		t.Fatalf("uncountable spaces in %q", quoted)
	}
	if !cut {
		return
	}
	if max < minMax {
		max = minMax
	}
	if n := utf8.RuneCountInString(quoted) - 2; n > max {
		t.Fatalf("shows %d runes, limit %d: %q", n, max, quoted)
	}
}

func BenchmarkQuoteShort(b *testing.B) {
	for b.Loop() {
		Quote("/home/user/thesis/chapter-3.tex")
	}
}

func BenchmarkQuote1MiB(b *testing.B) {
	s := strings.Repeat("a\u202e b ", 1<<17)
	for b.Loop() {
		Quote(s)
	}
}

// QuoteWhole never cuts: a long value full of escapes comes back whole,
// where Quote would cut it in the middle.
func TestQuoteWhole(t *testing.T) {
	v := strings.Repeat("a\u202e\U0001F600\x01 ", 3000) + "END"
	got := QuoteWhole(v)
	if strings.Contains(got, "…") || strings.Contains(got, "sha256:") || !strings.HasSuffix(got, `END"`) {
		t.Fatalf("QuoteWhole cut the value: %.80s ... %s", got, got[len(got)-40:])
	}
	if cut := Quote(v); !strings.Contains(cut, "sha256:") {
		t.Fatalf("control: Quote did not cut a long value: %.80s", cut)
	}
}
