package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestJournalCommand(t *testing.T) {
	td := filepath.Join("..", "..", "journal", "testdata")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"verify intact", []string{"verify", filepath.Join(td, "good.jsonl")}, 0, "intact: 6 records, seq 1..6", ""},
		{"verify edited", []string{"verify", filepath.Join(td, "edited-summary-line3.jsonl")}, 1, "", "line 3: tampered"},
		{"verify swapped", []string{"verify", filepath.Join(td, "swapped-lines3-4.jsonl")}, 1, "", "line 3: tampered"},
		{"verify torn", []string{"verify", filepath.Join(td, "torn-last-line.jsonl")}, 1, "", "line 6: torn"},
		{"verify missing file", []string{"verify", filepath.Join(td, "nope.jsonl")}, 1, "", "no such file"},
		{"show with flags after path", []string{"show", filepath.Join(td, "good.jsonl"), "--tool", "delete_file", "--since", "2026-01-02T03:04:09Z"}, 0, "2 of 6 records shown.", ""},
		{"show flags before path", []string{"show", "--tool", "other", filepath.Join(td, "good.jsonl")}, 0, "0 of 6 records shown.", ""},
		{"show tampered", []string{"show", filepath.Join(td, "edited-summary-line3.jsonl")}, 1, "JOURNAL NOT INTACT", "tampered"},
		{"show since a date", []string{"show", filepath.Join(td, "good.jsonl"), "--since", "2020-01-01"}, 0, "6 of 6 records shown.", ""},
		{"show since a later date", []string{"show", filepath.Join(td, "good.jsonl"), "--since", "2099-01-01"}, 0, "0 of 6 records shown.", ""},
		{"show bad since", []string{"show", filepath.Join(td, "good.jsonl"), "--since", "someday"}, 2, "", "not RFC 3339"},
		{"two paths", []string{"verify", "a", "b"}, 2, "", "usage"},
		{"no subcommand", nil, 2, "", "usage"},
		{"unknown subcommand", []string{"erase", "x"}, 2, "", "unknown subcommand"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"journal"}, tc.args...), &out, &errb)
			if code != tc.code || !strings.Contains(out.String(), tc.stdout) || !strings.Contains(errb.String(), tc.stderr) {
				t.Fatalf("exit %d (want %d)\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errb.String())
			}
		})
	}
}
