package journal

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultPathFor(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/state")
	long := strings.Repeat("a", 100)
	for _, tc := range []struct{ name, want string }{
		{"mcpsafe-files", "/var/state/mcpsafe/journal-mcpsafe-files.jsonl"},
		{"files.example.internal", "/var/state/mcpsafe/journal-files.example.internal.jsonl"},
		{"", "/var/state/mcpsafe/journal.jsonl"},
		// A separator or a dot-dot never leaves the directory; the hash
		// keeps "a/b" and "a_b" apart.
		{"../../etc/passwd", "/var/state/mcpsafe/journal-_._.._etc_passwd-"},
		{"a/b", "/var/state/mcpsafe/journal-a_b-"},
		{"a_b", "/var/state/mcpsafe/journal-a_b.jsonl"},
		{long, "/var/state/mcpsafe/journal-" + long[:maxNameBytes] + "-"},
	} {
		got, err := DefaultPathFor(tc.name)
		if err != nil || !strings.HasPrefix(got, tc.want) || filepath.Dir(got) != "/var/state/mcpsafe" || !strings.HasSuffix(got, ".jsonl") {
			t.Errorf("DefaultPathFor(%q) = %q, %v; want %q…", tc.name, got, err, tc.want)
		}
	}
	a, _ := DefaultPathFor("a/b")
	b, _ := DefaultPathFor("a:b")
	if a == b {
		t.Fatalf("two names share %s", a)
	}
}
