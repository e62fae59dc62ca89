package safefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// These tests win the remaining races on purpose, through the test hooks,
// at the exact instants between the last check and the action.

func withHook(t *testing.T, hook *func(string), fn func(string)) {
	t.Helper()
	*hook = fn
	t.Cleanup(func() { *hook = nil })
}

// swapForSymlink replaces p with a symlink to target, keeping the file at
// p+".kept".
func swapForSymlink(t *testing.T, p, target string) {
	if err := os.Rename(p, p+".kept"); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, target, p)
}

func TestRemoveSwapBeforeRename(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("victim.txt"), "approved\n")
	info, err := tr.fs.Inspect("victim.txt")
	if err != nil {
		t.Fatal(err)
	}
	withHook(t, &testHookBeforeRename, func(p string) { swapForSymlink(t, p, tr.secret) })
	err = tr.fs.Remove("victim.txt", info)
	mustIs(t, err, ErrChanged)
	if !strings.Contains(err.Error(), "put back") {
		t.Fatalf("error should say the entry was put back: %v", err)
	}
	// The swapped-in symlink is back under its name, untouched; so is its
	// target and the approved file.
	if l, err := os.Readlink(tr.p("victim.txt")); err != nil || l != tr.secret {
		t.Fatalf("symlink not restored: %q %v", l, err)
	}
	mustContent(t, tr.p("victim.txt.kept"), "approved\n")
	tr.checkOutside(t)
	assertNoTemp(t, tr.root)
}

func TestRemoveSwapBeforeUnlink(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("victim.txt"), "approved\n")
	info, err := tr.fs.Inspect("victim.txt")
	if err != nil {
		t.Fatal(err)
	}
	// An adversary that learned the random name swaps it for a symlink.
	withHook(t, &testHookBeforeUnlink, func(p string) { swapForSymlink(t, p, tr.secret) })
	err = tr.fs.Remove("victim.txt", info)
	mustIs(t, err, ErrRaceLost)
	tr.checkOutside(t)
	// The approved file was not deleted and this is reported, not hidden.
	matches, _ := filepath.Glob(tr.p(".mcpsafe-remove-*.kept"))
	if len(matches) != 1 {
		t.Fatalf("kept file: %v", matches)
	}
	mustContent(t, matches[0], "approved\n")
}

func TestMoveSwapBeforeRename(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("src.txt"), "approved\n")
	info, err := tr.fs.Inspect("src.txt")
	if err != nil {
		t.Fatal(err)
	}
	withHook(t, &testHookBeforeRename, func(p string) { swapForSymlink(t, p, tr.secret) })
	err = tr.fs.Move("src.txt", "dst.txt", info)
	mustIs(t, err, ErrChanged)
	if l, err := os.Readlink(tr.p("src.txt")); err != nil || l != tr.secret {
		t.Fatalf("swapped-in symlink not moved back: %q %v", l, err)
	}
	mustGone(t, tr.p("dst.txt"))
	mustContent(t, tr.p("src.txt.kept"), "approved\n")
	tr.checkOutside(t)
}

// TestRemoveNoTempLeft: the control; a normal Remove leaves no temporary.
func TestRemoveNoTempLeft(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("victim.txt"), "approved\n")
	mustWrite(t, tr.p("neighbour.txt"), "stays\n")
	info, err := tr.fs.Inspect("victim.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.fs.Remove("victim.txt", info); err != nil {
		t.Fatal(err)
	}
	mustGone(t, tr.p("victim.txt"))
	mustContent(t, tr.p("neighbour.txt"), "stays\n")
	assertNoTemp(t, tr.root)
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(dir, ".mcpsafe-*")); len(m) != 0 {
		t.Fatalf("temporary names left behind: %v", m)
	}
}
