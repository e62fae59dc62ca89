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

// Each platform's default state directory, checked on every platform.
func TestDefaultDirPerPlatform(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	home := func(h string) func() (string, error) { return func() (string, error) { return h, nil } }
	for _, tc := range []struct {
		goos    string
		getenv  func(string) string
		home    string
		want    string
		wantErr bool
	}{
		{"linux", env(), "/home/me", "/home/me/.local/state/mcpsafe", false},
		{"linux", env("XDG_STATE_HOME", "/st"), "/home/me", "/st/mcpsafe", false},
		{"linux", env("XDG_STATE_HOME", "rel"), "/home/me", "/home/me/.local/state/mcpsafe", false},
		{"linux", env(), "relative", "", true},
		{"freebsd", env(), "/home/me", "/home/me/.local/state/mcpsafe", false},
		{"darwin", env(), "/Users/me", "/Users/me/Library/Application Support/mcpsafe", false},
		{"darwin", env("XDG_STATE_HOME", "/st"), "/Users/me", "/st/mcpsafe", false},
		{"windows", env("LOCALAPPDATA", `C:\Users\me\AppData\Local`), `C:\Users\me`, `C:\Users\me\AppData\Local\mcpsafe`, false},
		{"windows", env("LOCALAPPDATA", `C:\L`, "XDG_STATE_HOME", `D:\state`), `C:\Users\me`, `D:\state\mcpsafe`, false},
		{"windows", env("LOCALAPPDATA", `C:\L`, "XDG_STATE_HOME", `state`), `C:\Users\me`, `C:\L\mcpsafe`, false},
		// Without LOCALAPPDATA there is no default, never the roaming
		// folder or the working directory.
		{"windows", env("APPDATA", `C:\Users\me\AppData\Roaming`), `C:\Users\me`, "", true},
		{"windows", env("LOCALAPPDATA", `AppData\Local`), `C:\Users\me`, "", true},
	} {
		got, err := defaultDir(tc.goos, tc.getenv, home(tc.home))
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("%s: defaultDir = %q, %v; want %q (error %v)", tc.goos, got, err, tc.want, tc.wantErr)
		}
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		if !strings.Contains(defaultDirRule(goos), "mcpsafe") {
			t.Errorf("%s: rule %q", goos, defaultDirRule(goos))
		}
	}
}
