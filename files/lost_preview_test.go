package files

import (
	"strings"
	"testing"
)

// What the page shows of a file to be lost, for each kind of head.
func TestDescribeLost(t *testing.T) {
	long := strings.Repeat("é", 300)
	many := strings.Repeat("line\n", 30)
	for _, c := range []struct {
		name string
		head string
		size int64
		want []string
	}{
		{"empty", "", 0, []string{"(an empty file)"}},
		{"text, whole", "a\nb\n", 4, []string{"a", "b"}},
		{"text without a final newline", "a\nb", 3, []string{"a", "b"}},
		{"NUL is binary", "a\x00b", 3, []string{"binary, 3 bytes"}},
		{"invalid UTF-8 is binary", "a\xffb", 3, []string{"binary, 3 bytes"}},
		{"a rune cut by the read is still text", "ab\n\xc3", 5000, []string{"ab", "… and 4.9 KB more (4.9 KB in all)"}},
		{"a long line is cut, and says so", long + "\n", int64(len(long) + 1), []string{strings.Repeat("é", 200) + " …"}},
		{"at most 12 lines, and how much more", many, int64(len(many)), append(strings.Split(strings.Repeat("line\n", 12), "\n")[:12], "… and 90 bytes more (150 bytes in all)")},
	} {
		got := describeLost(`"f"`, []byte(c.head), c.size)
		if strings.Join(got.Lines, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: %q, want %q", c.name, got.Lines, c.want)
		}
	}
}
