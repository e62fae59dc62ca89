package journal

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// ReadFile reads a journal its writer holds open, takes a half-written
// last line for what it is, and never hands over a record whose edit only
// the next line reveals.
func TestReadFileWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, WithClock(stepClock()))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, r := range sampleRecords() {
		if err := j.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	read := func() ([]string, error) {
		var got []string
		_, err := ReadFile(path, func(r *Record) { got = append(got, r.Call+":"+r.Decision) })
		return got, err
	}
	// Control: the writer holds the journal; the reader still reads it all.
	got, err := read()
	wantErr(t, err, "ok", 0)
	if len(got) != 6 || got[5] != "c3:executed" {
		t.Fatalf("while the writer holds the file: %v", got)
	}
	// The writer caught mid-line: the records so far, and a torn error.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":7,"prev":"`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err = read()
	wantErr(t, err, "torn", 7)
	if len(got) != 6 {
		t.Fatalf("with a half-written line: %v", got)
	}
}

func TestReadFileWithholdsEditedRecords(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(lines [][]byte)
		kind  string
		line  int
		calls int // records handed over
	}{
		{"intact", func([][]byte) {}, "ok", 0, 6},
		// Line 3 still chains to line 2; only line 4's prev shows the edit.
		{"middle line edited", func(l [][]byte) { l[2] = bytes.Replace(l[2], []byte("c2.txt"), []byte("c9.txt"), 1) }, "tamper", 3, 2},
		{"last line edited", func(l [][]byte) { l[5] = bytes.Replace(l[5], []byte("c3.txt"), []byte("c9.txt"), 1) }, "tamper", 6, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, lines := sampleJournal(t)
			tc.edit(lines)
			if err := os.WriteFile(path, joinLines(lines), 0o600); err != nil {
				t.Fatal(err)
			}
			var got []*Record
			_, err := ReadFile(path, func(r *Record) { got = append(got, r) })
			wantErr(t, err, tc.kind, tc.line)
			if len(got) != tc.calls {
				t.Fatalf("%d records handed over, want %d", len(got), tc.calls)
			}
			for _, r := range got {
				if bytes.Contains(r.Args, []byte("c9")) {
					t.Fatalf("an edited record was handed over: %s", r.Args)
				}
			}
		})
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "none.jsonl"), func(*Record) {}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing journal: %v", err)
	}
}

// TestReadFileAcrossRotation: a viewer reads a rotated journal as one set
// (it read only the active file, and took every rotation for tampering);
// a pruned set is read from what remains; an edited segment stops the read
// before the edited record.
func TestReadFileAcrossRotation(t *testing.T) {
	path, files := rotatedJournal(t, 9, 3, "")
	count := func() (int, error) {
		n := 0
		_, err := ReadFile(path, func(*Record) { n++ })
		return n, err
	}
	if n, err := count(); err != nil || n != 9 {
		t.Fatalf("read %d records of 9 across %d files: %v", n, len(files), err)
	}
	// Attack: record 5 (in the second segment) edited.
	seg := files[1]
	raw, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(raw, []byte(`"call":"c5"`), []byte(`"call":"c0"`), 1)
	if bytes.Equal(edited, raw) {
		t.Fatal("the segment holds no record c5")
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(seg, edited, 0o600))
	var calls []string
	_, err = ReadFile(path, func(r *Record) { calls = append(calls, r.Call) })
	var te *TamperError
	if !errors.As(err, &te) {
		t.Fatalf("an edited segment read as %v", err)
	}
	for _, c := range calls {
		if c == "c0" || c == "c5" {
			t.Fatalf("the edited record was delivered: %v", calls)
		}
	}
	must(os.WriteFile(seg, raw, 0o600))
	// Pruned: the oldest segment deleted; what remains is read.
	must(os.Remove(files[0]))
	if n, err := count(); err != nil || n != 6 {
		t.Fatalf("a pruned set read %d records of the 6 left: %v", n, err)
	}
}
