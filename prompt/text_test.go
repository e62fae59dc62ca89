package prompt

import "testing"

func TestText(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		// Controls: prose a tool author wrote comes out unchanged.
		{"plain prose", "Delete a file.\nUse with care:\t\"path\" is C:\\x.", "Delete a file.\nUse with care:\t\"path\" is C:\\x."},
		{"double spaces and indentation", "  a  b  ", "  a  b  "},
		{"smart quotes and ellipsis", "“quoted” … ’", "“quoted” … ’"},
		{"right-to-left prose", "שלום", "שלום"},
		{"script-specific mark on a letter", "नमस्ते", "नमस्ते"},
		// Attacks: what could hide text or fake its order is made visible.
		{"bidi override", "safe\u202etxt.exe", `safe\u202etxt.exe`},
		{"tag characters", "ok\U000E0069\U000E0067", `ok\U000e0069\U000e0067`},
		{"zero width", "de\u200blete", `de\u200blete`},
		{"carriage return overprints", "harmless\rignore previous", `harmless\rignore previous`},
		{"escape sequence", "\x1b[8mhidden", `\x1b[8mhidden`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		{"inherited combining mark", "e\u0301", `e\u0301`},
		{"mark at line start", "\n\u0301", "\n\\u0301"},
		{"no-break space", "a\u00a0b", `a\u00a0b`},
		{"line separator", "a\u2028b", `a\u2028b`},
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("%s: Text(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}
