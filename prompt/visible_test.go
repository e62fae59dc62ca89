package prompt

import "testing"

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"delete cache.txt":          "delete cache.txt",
		"a\nb":                      `a\nb`,
		"tab\there":                 `tab\there`,
		"evil\u202etxt.exe":         `evil\u202etxt.exe`,
		"zero\u200bwidth":           `zero\u200bwidth`,
		"isolate\u2066x\u2069":      `isolate\u2066x\u2069`,
		"nbsp\u00a0x":               `nbsp\u00a0x`,
		`back\slash`:                `back\\slash`,
		"<script>alert(1)</script>": "<script>alert(1)</script>", // HTML escaping is the template's job
		"caché ✓":                   "caché ✓",
		"tag\U000e0041":             `tag\U000e0041`,
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
	}
}
