package journal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Show warns about ambiguous calls that a filter hides: an operator
// filtering by tool must still learn that a call may have run without an
// outcome record.
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

// Show's table goes out at the end; a full device there is an error, not
// a silently empty report.
func TestShowReportsWriteFailure(t *testing.T) {
	path, _ := sampleJournal(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("/dev/full: %v", err)
	}
	defer full.Close()
	err = Show(full, bytes.NewReader(data), Filter{})
	if !errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), "journal: write /dev/full: ") {
		t.Fatalf("Show to /dev/full = %v; want ENOSPC", err)
	}
	var out bytes.Buffer
	if err := Show(&out, bytes.NewReader(data), Filter{}); err != nil || !strings.Contains(out.String(), "6 of 6 records shown.") {
		t.Fatalf("Show = %v:\n%s", err, out.String())
	}
}

// A byte that is not UTF-8 reaches the terminal as a visible escape.
func TestOneLineEscapesInvalidUTF8(t *testing.T) {
	if got, want := oneLine("rm \xff\xfe x", 0), `rm \xff\xfe x`; got != want {
		t.Fatalf("oneLine = %q; want %q", got, want)
	}
	if got := oneLine("rm é x", 0); got != "rm é x" {
		t.Fatalf("valid UTF-8 changed: %q", got)
	}
}
