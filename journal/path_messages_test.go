package journal

import (
	"path/filepath"
	"strings"
	"testing"
)

// Accessors and error messages say what they are about.
func TestPathAndMessages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if j.Path() != path {
		t.Fatalf("Path() = %q, want %q", j.Path(), path)
	}
	if s := (Summary{}).String(); s != "intact: empty journal" {
		t.Fatalf("empty summary: %q", s)
	}
	msg := (&TornError{Line: 7, Bytes: 12, Reason: "no newline"}).Error()
	for _, want := range []string{"line 7", "12 bytes", "no newline", "torn"} {
		if !strings.Contains(msg, want) {
			t.Errorf("TornError message %q lacks %q", msg, want)
		}
	}
}

func TestDefaultPathRefusesRelativeHome(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "relative/state") // ignored: not absolute
	t.Setenv("HOME", "relative-home")
	if p, err := DefaultPath(); err == nil {
		t.Fatalf("DefaultPath with a relative home = %q", p)
	}
	t.Setenv("HOME", "")
	if p, err := DefaultPath(); err == nil {
		t.Fatalf("DefaultPath without a home = %q", p)
	}
	t.Setenv("HOME", "/home/someone") // control
	if p, err := DefaultPath(); err != nil || p != "/home/someone/.local/state/mcpsafe/journal.jsonl" {
		t.Fatalf("DefaultPath = %q, %v", p, err)
	}
}
