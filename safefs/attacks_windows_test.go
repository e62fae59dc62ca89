package safefs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The Windows counterparts of the Unix symlink attacks: junctions and
// symbolic links (both reparse points) anywhere in the path are refused,
// never followed, and a trap name is refused before any lookup.
// Compile-only here (see docs/TESTING.md).

func mustJunction(t *testing.T, target, link string) {
	t.Helper()
	out, err := exec.Command("cmd", "/c", "mklink", "/J", link, target).CombinedOutput()
	if err != nil {
		t.Fatalf("mklink /J: %v: %s", err, out)
	}
}

func TestReparsePointsRefused(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("file.txt"), "hello\n")
	mustMkdir(t, tr.p("sub"))
	mustWrite(t, tr.p("sub/inner.txt"), "inner\n")
	mustJunction(t, tr.outside, tr.p("junction_out"))
	mustJunction(t, tr.p("sub"), tr.p("junction_in"))
	mustSymlink(t, tr.secret, tr.p("link_out"))
	for _, p := range []string{
		"junction_out/secret.txt", "junction_in/inner.txt", "link_out",
	} {
		_, err := tr.fs.Inspect(p)
		mustIs(t, err, ErrSymlink)
		_, err = tr.fs.List(p)
		if err == nil {
			t.Fatalf("List(%q) followed a reparse point", p)
		}
		_, err = tr.fs.CheckDestination(filepath.Join(p, "x"))
		if err == nil {
			t.Fatalf("CheckDestination under %q followed a reparse point", p)
		}
	}
	info, err := tr.fs.Inspect("file.txt")
	if err != nil {
		t.Fatal(err)
	}
	mustIs(t, tr.fs.Move("file.txt", "junction_out/stolen.txt", info), ErrSymlink)
	for _, p := range []string{"file.txt:hidden", "NUL.txt", "file.txt.", `\\?\` + tr.p("file.txt"), "FILE~1.TXT"} {
		_, err := tr.fs.Inspect(p)
		mustIs(t, err, ErrInvalidPath)
	}
	tr.checkOutside(t)
	// A file swapped in under the name after the preview: the handle's
	// file ID differs, nothing is deleted.
	if err := os.Rename(tr.p("file.txt"), tr.p("old.txt")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, tr.p("file.txt"), "hello\n")
	mustIs(t, tr.fs.Remove("file.txt", info), ErrChanged)
	mustContent(t, tr.p("file.txt"), "hello\n")
	// Control: the approved file itself, by its current name.
	info2, err := tr.fs.Inspect("old.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.fs.Remove("old.txt", info2); err != nil {
		t.Fatal(err)
	}
	mustGone(t, tr.p("old.txt"))
}
