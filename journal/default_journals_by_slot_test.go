package journal

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Servers of the same name running at once take numbered slots beside
// the first; no name's slot is another name's, whatever characters the
// name holds, and `journal list` finds the journals and only them.
func TestDefaultSlotsNeverShareAFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_STATE_HOME", dir)
	home := filepath.Join(dir, "mcpsafe")

	first, err := DefaultSlotPath("files", 1)
	if err != nil || first != filepath.Join(home, "journal-files.jsonl") {
		t.Fatalf("slot 1: %q %v", first, err)
	}
	if p, _ := DefaultSlotPath("files", 0); p != first {
		t.Fatalf("slot 0 is %q, not the first slot", p)
	}
	second, _ := DefaultSlotPath("files", 2)
	if second != filepath.Join(home, "journal-files+2.jsonl") {
		t.Fatalf("slot 2: %q", second)
	}
	// A name that spells another name's later slot gets a file of its own.
	seen := map[string]string{}
	for _, name := range []string{"files", "files+2", "files+2.jsonl", "files_2", "files/../files"} {
		for n := 1; n <= DefaultSlots; n++ {
			p, err := DefaultSlotPath(name, n)
			if err != nil || filepath.Dir(p) != home {
				t.Fatalf("DefaultSlotPath(%q, %d) = %q %v", name, n, p, err)
			}
			if other, ok := seen[p]; ok {
				t.Fatalf("%q slot %d and %s share %s", name, n, other, p)
			}
			seen[p] = name
		}
	}

	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"journal.jsonl", "journal-files.jsonl", "journal-files+2.jsonl", "journal-files.jsonl.head",
		"journal-files.jsonl.checkpoints", "journal-files.jsonl" + ServerNoteSuffix, "notes.jsonl", "journal-files.jsonl.1"} {
		if err := os.WriteFile(filepath.Join(home, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	gotDir, paths, err := DefaultJournals()
	if err != nil || gotDir != home {
		t.Fatalf("DefaultJournals: %q %v", gotDir, err)
	}
	want := []string{filepath.Join(home, "journal.jsonl"), filepath.Join(home, "journal-files+2.jsonl"), filepath.Join(home, "journal-files.jsonl")}
	slices.Sort(paths)
	slices.Sort(want)
	if !slices.Equal(paths, want) {
		t.Fatalf("listed %q, want %q", paths, want)
	}

	// No home: no default, said plainly.
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "relative/home")
	if _, _, err := DefaultJournals(); err == nil {
		t.Fatal("a relative home gave a default directory")
	}
	if _, err := DefaultSlotPath("files", 2); err == nil {
		t.Fatal("a relative home gave a slot path")
	}
	if rule := DefaultDirRule(); !strings.Contains(rule, "$XDG_STATE_HOME/mcpsafe") {
		t.Fatalf("the rule for this platform: %q", rule)
	}
}

// The note beside a default journal says whose it is; it is only shown,
// so it is bounded (a note of any size reads back as at most 1 KiB), and
// replaced whole (a second server's note never mixes with the first's).
func TestServerNoteIsBoundedAndReplacedWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal-files.jsonl")
	if got := ServerNote(path); got != "" {
		t.Fatalf("no note yet: %q", got)
	}
	if err := WriteServerNote(path, "mcpsafe files --root /srv/a (audience files-a)"); err != nil {
		t.Fatal(err)
	}
	if got := ServerNote(path); got != "mcpsafe files --root /srv/a (audience files-a)" {
		t.Fatalf("read back %q", got)
	}
	if err := WriteServerNote(path, "b"); err != nil {
		t.Fatal(err)
	}
	if got := ServerNote(path); got != "b" {
		t.Fatalf("a replaced note reads %q", got)
	}
	if err := WriteServerNote(path, strings.Repeat("x", 10<<10)); err != nil {
		t.Fatal(err)
	}
	if got := ServerNote(path); got != strings.Repeat("x", maxServerNote) {
		t.Fatalf("a long note reads back as %d bytes", len(got))
	}
	// A note planted beside the journal is read, bounded, all the same.
	if err := os.WriteFile(path+ServerNoteSuffix, []byte(strings.Repeat("y", 5000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := ServerNote(path); len(got) != maxServerNote {
		t.Fatalf("a planted note reads back as %d bytes", len(got))
	}
	if err := WriteServerNote(filepath.Join(t.TempDir(), "no-dir", "j.jsonl"), "x"); err == nil {
		t.Fatal("a note written into a missing directory")
	}
	if matches, _ := filepath.Glob(path + "*.tmp"); len(matches) != 0 {
		t.Fatalf("temporary files left: %v", matches)
	}
}
