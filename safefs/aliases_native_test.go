//go:build darwin || windows

package safefs

import (
	"path/filepath"
	"strings"
	"testing"
)

// On the usual macOS (APFS, HFS+) and Windows (NTFS) volumes, names that
// differ only by case are one file. Decisions are made by the file
// system and by identity, never by comparing strings: a move onto another
// spelling of an existing file is ErrExists, another spelling of a root is
// refused as outside, and Covers sees through it by identity.
// Compile-only here (see docs/TESTING.md).
func TestCaseAliases(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("report.txt"), "mine\n")
	mustWrite(t, tr.p("src.txt"), "src\n")
	info, err := tr.fs.Inspect("src.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, dst := range []string{"REPORT.txt", "Report.TXT"} {
		if _, err := tr.fs.CheckDestination(dst); err == nil {
			t.Fatalf("CheckDestination(%q) accepted another spelling of an existing file", dst)
		}
		mustIs(t, tr.fs.Move("src.txt", dst, info), ErrExists)
	}
	mustContent(t, tr.p("report.txt"), "mine\n")
	upper := filepath.Join(filepath.Dir(tr.root), strings.ToUpper(filepath.Base(tr.root)))
	_, err = tr.fs.Inspect(filepath.Join(upper, "src.txt"))
	mustIs(t, err, ErrOutsideRoots)
	if !tr.fs.Covers(filepath.Join(upper, "journal.jsonl")) {
		t.Fatal("Covers missed a case alias of the root")
	}
	// Control: the exact spelling.
	if err := tr.fs.Move("src.txt", "moved.txt", info); err != nil {
		t.Fatal(err)
	}
}
