package journal

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ExportFile writes a new file and nothing else: a file already there is
// left alone (it may be another export, or a link planted to make the
// export overwrite something), and a journal that does not verify leaves
// no file behind, not even an empty one. The control is exported with
// mode 0600 and verifies as the journal it copies.
func TestExportFileNeverOverwritesAndLeavesNothingOnFailure(t *testing.T) {
	path, lines := sampleJournal(t)
	dir := t.TempDir()

	existing := filepath.Join(dir, "existing.jsonl")
	if err := os.WriteFile(existing, []byte("keep me\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target")
	planted := filepath.Join(dir, "planted.jsonl")
	if err := os.Symlink(target, planted); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{existing, planted} {
		if _, err := ExportFile(out, path, FormatJSONL); err == nil {
			t.Fatalf("exported over %s", out)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me\n" {
		t.Fatalf("the existing file now holds %q", b)
	}
	if _, err := os.Lstat(target); !os.IsNotExist(err) {
		t.Fatalf("the export followed the planted link: %v", err)
	}
	if _, err := ExportFile(filepath.Join(dir, "missing-dir", "out.jsonl"), path, FormatJSONL); err == nil {
		t.Fatal("exported into a directory that does not exist")
	}

	tampered := filepath.Join(t.TempDir(), "j.jsonl")
	bad := append([][]byte(nil), lines...)
	bad[3] = bytes.Replace(bad[3], []byte(`"decision":"failed"`), []byte(`"decision":"executed"`), 1)
	if err := os.WriteFile(tampered, joinLines(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, path, format, want string }{
		{"a tampered journal", tampered, FormatOCSF, "line 4"},
		{"an unknown format", path, "csv", "unknown export format"},
	} {
		out := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if _, err := ExportFile(out, tc.path, tc.format); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if _, err := os.Lstat(out); !os.IsNotExist(err) {
			t.Fatalf("%s: a file was left behind: %v", tc.name, err)
		}
	}

	out := filepath.Join(dir, "export.jsonl")
	sum, err := ExportFile(out, path, FormatJSONL)
	if err != nil || sum.Records != 6 {
		t.Fatalf("control: %+v %v", sum, err)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the export's mode: %v %v", fi.Mode(), err)
	}
	if s, err := VerifyFile(out); err != nil || s.LastHash != sum.LastHash {
		t.Fatalf("the export does not verify as the journal: %+v %v", s, err)
	}
}
