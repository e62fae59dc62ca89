package serverconf

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A ledger URL that only looks like the in-memory one is an error, not a
// silent in-memory ledger; the real one works without a key file.
func TestLedgerURLMemoryLookalike(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ url, wantErr string }{
		{"memory:", ""},
		{"memory:shared-between-replicas", "ledger"},
		{"file:" + filepath.Join(dir, "l.db"), "key-file"},
	} {
		g, err := Build(context.Background(), Config{Audience: "a", LedgerURL: tc.url, NoJournal: true})
		if tc.wantErr == "" {
			if err != nil {
				t.Fatalf("%s: %v", tc.url, err)
			}
			g.Close()
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Fatalf("%s: err %v, want one mentioning %q", tc.url, err, tc.wantErr)
		}
	}
}

// A token opt-in is an exact tool name, whether it comes from a flag or a
// policy file: patterns are refused before any gate is built.
func TestParseOptInExactNames(t *testing.T) {
	for _, bad := range []string{"", "delete_*", "*", "delete_?", "[d]elete", "delete file", " delete_file", "delete_file\n", "@2027-01-01", "delete_file@tomorrow"} {
		if _, err := ParseOptIn(bad); err == nil {
			t.Errorf("ParseOptIn(%q) accepted", bad)
		}
	}
	o, err := ParseOptIn("delete_file@2027-01-01")
	if err != nil || o.Tool != "delete_file" || o.Until.Year() != 2027 {
		t.Fatalf("control: %+v %v", o, err)
	}
}
