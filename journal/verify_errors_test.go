package journal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// VerifyFile reports why it could not read, never an empty summary as if
// the journal were fine.
func TestVerifyFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	if _, err := VerifyFile(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "journal: open ") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := VerifyFile(dir); !errors.Is(err, syscall.EISDIR) || !strings.HasPrefix(err.Error(), "journal: reading line 1: ") {
		t.Fatalf("directory: %v", err)
	}
	// Control.
	path, _ := sampleJournal(t)
	sum, err := VerifyFile(path)
	if err != nil || sum.Records != len(sampleRecords()) {
		t.Fatalf("VerifyFile = %+v, %v", sum, err)
	}
}

// A call approved twice (say, by the client, then by a token) and never
// finished is one ambiguous call, reported with its latest approval.
func TestReapprovedCallWithoutOutcome(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeJournal(t, path, []Record{
		{Call: "c1", Tool: "delete_file", Decision: ClientAccepted, By: "client"},
		{Call: "c1", Tool: "delete_file", Decision: TokenRedeemed, By: "token"},
		{Call: "c2", Tool: "delete_file", Decision: ClientAccepted, By: "client"},
		{Call: "c2", Tool: "delete_file", Decision: Executed, By: "gate"},
	})
	if sum, err := VerifyFile(path); err != nil || sum.Unresolved != 1 {
		t.Fatalf("before reopening: %+v, %v; want 1 unresolved", sum, err)
	}
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 5 {
		t.Fatalf("%d lines; want 4 and one ambiguous record", len(lines))
	}
	rec, err := parseLine(lines[4])
	if err != nil {
		t.Fatal(err)
	}
	if rec.Call != "c1" || rec.Decision != Ambiguous || !strings.Contains(rec.Reason, "approved (token-redeemed, seq 2)") {
		t.Fatalf("recovery record %+v; want c1 ambiguous after its seq 2 approval", rec)
	}
	if sum, err := VerifyFile(path); err != nil || sum.Ambiguous != 1 || sum.Unresolved != 0 {
		t.Fatalf("after reopening: %+v, %v", sum, err)
	}
}

// An edited line followed by a line that is not a record: the unparseable
// line gives no evidence, so the earlier line is blamed.
func TestBlameBeforeUnparseableLine(t *testing.T) {
	_, lines := sampleJournal(t)
	edited := bytes.Replace(lines[2], []byte("delete /srv"), []byte("delete /tmp"), 1)
	if bytes.Equal(edited, lines[2]) {
		t.Fatal("test setup: line 3 unchanged")
	}
	for name, next := range map[string][]byte{
		"garbage":  []byte("not a record"),
		"too long": bytes.Repeat([]byte("x"), MaxLineBytes+10),
	} {
		t.Run(name, func(t *testing.T) {
			l := append([][]byte{}, lines...)
			l[2] = edited
			l[4] = next
			_, err := Verify(bytes.NewReader(joinLines(l)))
			var te *TamperError
			if !errors.As(err, &te) || te.Line != 3 || !strings.Contains(te.Reason, "line 4's prev does not match the SHA-256 of line 3") {
				t.Fatalf("Verify = %v; want line 3 blamed", err)
			}
		})
	}
	// Control: with line 5 intact, line 5 still chains to line 4, which
	// pins the edit on line 3 by the other rule.
	l := append([][]byte{}, lines...)
	l[2] = edited
	_, err := Verify(bytes.NewReader(joinLines(l)))
	var te *TamperError
	if !errors.As(err, &te) || te.Line != 3 || !strings.Contains(te.Reason, "line 3 was edited") {
		t.Fatalf("Verify = %v; want line 3 blamed", err)
	}
}
