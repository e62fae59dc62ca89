package journal

// Small paths the other suites leave out: accessors and messages, the
// default path's refusals, and Show's warning about ambiguous calls that a
// filter hides (an operator filtering by tool must still learn that a call
// may have run without an outcome record).

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

func TestShowWarnsAboutFilteredAmbiguousCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := j.Append(ctx, Record{Tool: "delete_file", Call: "c1", Decision: ClientAccepted}); err != nil {
		t.Fatal(err)
	}
	if err := j.Append(ctx, Record{Tool: "move_file", Decision: Refused, Reason: "declined"}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening marks the approval without an outcome ambiguous.
	j, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Show(&out, bytes.NewReader(b), Filter{Tool: "move_file"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "AMBIGUOUS call(s) outside the filter") {
		t.Fatalf("filtered show hides the ambiguous call silently:\n%s", out.String())
	}
	out.Reset()
	if err := Show(&out, bytes.NewReader(b), Filter{Tool: "delete_file"}); err != nil { // control
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "outside the filter") {
		t.Fatalf("warned although the ambiguous call is shown:\n%s", out.String())
	}
}
