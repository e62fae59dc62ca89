package prompt

import (
	"strings"
	"testing"
	"unicode"

	"pgregory.net/rapid"
)

func TestCodeLine(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		// Controls: code stays readable, indentation and quotes included.
		{"go source", "\tif s == \"x\\n\" {", `    if s == "x\n" {`},
		{"indentation", "        return nil", "        return nil"},
		{"json line", `  "newText": "line 2",`, `  "newText": "line 2",`},
		// Attacks.
		{"spaces push text to a line of its own", strings.Repeat(" ", 200) + "+rm -rf /", "⟨200 spaces⟩+rm -rf /"},
		{"a run inside the line", "a" + strings.Repeat(" ", 17) + "b", "a⟨17 spaces⟩b"},
		{"trailing spaces", "same  ", "same⟨2 spaces⟩"},
		{"carriage return overprints", "harmless\r+rm -rf ~", `harmless\r+rm -rf ~`},
		{"newline", "a\n+b", `a\n+b`},
		{"bidi override", "safe\u202etxt.exe", `safe\u202etxt.exe`},
		{"zero width", "de\u200blete", `de\u200blete`},
		{"a faked count", "⟨200 spaces⟩", `\u27e8200 spaces⟩`},
	} {
		if got := CodeLine(c.in); got != c.want {
			t.Errorf("%s: CodeLine(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// Whatever the input, CodeLine's output is one line with no character
// that hides, reorders or overprints text, and no run of spaces longer
// than MaxSpaceRun.
func TestCodeLineProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		out := CodeLine(genValue(t, "s") + genValue(t, "s2"))
		if strings.Contains(out, strings.Repeat(" ", MaxSpaceRun+1)) {
			t.Fatalf("a long run of spaces: %q", out)
		}
		for _, r := range out {
			if r == '\n' || r == '\r' || r == '\t' || (r != ' ' && !unicode.IsPrint(r)) || unicode.Is(unicode.Cf, r) {
				t.Fatalf("%U in %q", r, out)
			}
		}
	})
}
