package safefs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRemoveAfterChange: every way the approved file can stop being the
// approved file between Inspect and Remove is refused, nothing is deleted,
// and the files involved keep their contents.
func TestRemoveAfterChange(t *testing.T) {
	const orig = "the approved thesis\n"
	cases := []struct {
		name   string
		change func(t *testing.T, tr *tree)
		want   []error
		check  func(t *testing.T, tr *tree)
		path   string // the path inspected and removed, when not d/thesis.txt
	}{
		{
			name:   "content changed",
			change: func(t *testing.T, tr *tree) { mustWrite(t, tr.p("d/thesis.txt"), orig+"appended\n") },
			want:   []error{ErrChanged},
			check:  func(t *testing.T, tr *tree) { mustContent(t, tr.p("d/thesis.txt"), orig+"appended\n") },
		},
		{
			name: "same content rewritten",
			change: func(t *testing.T, tr *tree) {
				fi, _ := os.Stat(tr.p("d/thesis.txt"))
				mustWrite(t, tr.p("d/thesis.txt"), orig)
				// Rewritten a second later: set, not waited for, since the
				// file system's clock may not tick between two writes.
				later := fi.ModTime().Add(time.Second)
				if err := os.Chtimes(tr.p("d/thesis.txt"), later, later); err != nil {
					t.Fatal(err)
				}
			},
			want:  []error{ErrChanged},
			check: func(t *testing.T, tr *tree) { mustContent(t, tr.p("d/thesis.txt"), orig) },
		},
		{
			name: "same size content with mtime restored",
			change: func(t *testing.T, tr *tree) {
				fi, _ := os.Stat(tr.p("d/thesis.txt"))
				mustWrite(t, tr.p("d/thesis.txt"), strings.ToUpper(orig))
				if err := os.Chtimes(tr.p("d/thesis.txt"), fi.ModTime(), fi.ModTime()); err != nil {
					t.Fatal(err)
				}
			},
			want:  []error{ErrChanged},
			check: func(t *testing.T, tr *tree) { mustContent(t, tr.p("d/thesis.txt"), strings.ToUpper(orig)) },
		},
		{
			name: "replaced by another regular file (mv cache.txt thesis.txt)",
			change: func(t *testing.T, tr *tree) {
				if err := os.Rename(tr.p("d/cache.txt"), tr.p("d/thesis.txt")); err != nil {
					t.Fatal(err)
				}
			},
			want:  []error{ErrChanged},
			check: func(t *testing.T, tr *tree) { mustContent(t, tr.p("d/thesis.txt"), "cache\n") },
		},
		{
			name: "replaced by an identical copy",
			change: func(t *testing.T, tr *tree) {
				mustWrite(t, tr.p("d/copy"), orig)
				if err := os.Rename(tr.p("d/copy"), tr.p("d/thesis.txt")); err != nil {
					t.Fatal(err)
				}
			},
			want:  []error{ErrChanged},
			check: func(t *testing.T, tr *tree) { mustContent(t, tr.p("d/thesis.txt"), orig) },
		},
		{
			name: "became a symlink to outside",
			change: func(t *testing.T, tr *tree) {
				os.Remove(tr.p("d/thesis.txt"))
				mustSymlink(t, tr.secret, tr.p("d/thesis.txt"))
			},
			want: []error{ErrChanged, ErrSymlink},
			check: func(t *testing.T, tr *tree) {
				if l, err := os.Readlink(tr.p("d/thesis.txt")); err != nil || l != tr.secret {
					t.Fatalf("symlink should remain: %q %v", l, err)
				}
			},
		},
		{
			name: "became a symlink to the same file",
			change: func(t *testing.T, tr *tree) {
				if err := os.Rename(tr.p("d/thesis.txt"), tr.p("d/real.txt")); err != nil {
					t.Fatal(err)
				}
				mustSymlink(t, "real.txt", tr.p("d/thesis.txt"))
			},
			want:  []error{ErrChanged, ErrSymlink},
			check: func(t *testing.T, tr *tree) { mustContent(t, tr.p("d/real.txt"), orig) },
		},
		{
			name: "became a directory",
			change: func(t *testing.T, tr *tree) {
				os.Remove(tr.p("d/thesis.txt"))
				mustMkdir(t, tr.p("d/thesis.txt"))
				mustWrite(t, tr.p("d/thesis.txt/inside"), "dir content\n")
			},
			want:  []error{ErrChanged, ErrNotRegular},
			check: func(t *testing.T, tr *tree) { mustContent(t, tr.p("d/thesis.txt/inside"), "dir content\n") },
		},
		{
			name: "became a FIFO",
			change: func(t *testing.T, tr *tree) {
				os.Remove(tr.p("d/thesis.txt"))
				mustFIFO(t, tr.p("d/thesis.txt"))
			},
			want: []error{ErrChanged, ErrNotRegular},
		},
		{
			name: "parent swapped for a symlink inside the root",
			change: func(t *testing.T, tr *tree) {
				if err := os.Rename(tr.p("d"), tr.p("d_old")); err != nil {
					t.Fatal(err)
				}
				mustSymlink(t, tr.p("other"), tr.p("d"))
			},
			want: []error{ErrChanged, ErrSymlink},
			check: func(t *testing.T, tr *tree) {
				mustContent(t, tr.p("d_old/thesis.txt"), orig)
				mustContent(t, tr.p("other/thesis.txt"), "other thesis\n")
			},
		},
		{
			name: "parent swapped for a symlink to outside",
			change: func(t *testing.T, tr *tree) {
				if err := os.Rename(tr.p("d"), tr.p("d_old")); err != nil {
					t.Fatal(err)
				}
				mustSymlink(t, tr.outside, tr.p("d"))
				mustWrite(t, filepath.Join(tr.outside, "thesis.txt"), "outside thesis\n")
			},
			want: []error{ErrChanged, ErrSymlink},
			check: func(t *testing.T, tr *tree) {
				mustContent(t, tr.p("d_old/thesis.txt"), orig)
				mustContent(t, filepath.Join(tr.outside, "thesis.txt"), "outside thesis\n")
			},
		},
		{
			name: "grandparent swapped for a symlink",
			change: func(t *testing.T, tr *tree) {
				if err := os.Rename(tr.p("d"), tr.p("d_old")); err != nil {
					t.Fatal(err)
				}
				mustMkdir(t, tr.p("d"))
				mustSymlink(t, tr.p("d_old"), tr.p("d/deep"))
			},
			want:  []error{ErrChanged, ErrSymlink},
			path:  "d/deep/thesis.txt",
			check: func(t *testing.T, tr *tree) { mustContent(t, tr.p("d_old/deep/thesis.txt"), orig) },
		},
		{
			name: "gained a hard link",
			change: func(t *testing.T, tr *tree) {
				if err := os.Link(tr.p("d/thesis.txt"), tr.p("d/alias.txt")); err != nil {
					t.Fatal(err)
				}
			},
			want:  []error{ErrChanged},
			check: func(t *testing.T, tr *tree) { mustContent(t, tr.p("d/alias.txt"), orig) },
		},
		{
			name:   "chmod",
			change: func(t *testing.T, tr *tree) { os.Chmod(tr.p("d/thesis.txt"), 0o600) },
			want:   []error{ErrChanged},
		},
		{
			name:   "deleted",
			change: func(t *testing.T, tr *tree) { os.Remove(tr.p("d/thesis.txt")) },
			want:   []error{ErrChanged, ErrNotFound},
		},
		{
			name:   "parent deleted",
			change: func(t *testing.T, tr *tree) { os.RemoveAll(tr.p("d")) },
			want:   []error{ErrChanged, ErrNotFound},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTree(t)
			mustMkdir(t, tr.p("d"))
			mustMkdir(t, tr.p("other"))
			mustWrite(t, tr.p("d/thesis.txt"), orig)
			mustWrite(t, tr.p("d/cache.txt"), "cache\n")
			mustWrite(t, tr.p("other/thesis.txt"), "other thesis\n")
			target := "d/thesis.txt"
			if c.path != "" {
				// Inspect through the path that the change will break.
				if err := os.Rename(tr.p("d"), tr.p("real_d")); err != nil {
					t.Fatal(err)
				}
				mustMkdir(t, tr.p("d/deep"))
				if err := os.Rename(tr.p("real_d/thesis.txt"), tr.p("d/deep/thesis.txt")); err != nil {
					t.Fatal(err)
				}
				target = c.path
			}
			info, err := tr.fs.Inspect(target)
			if err != nil {
				t.Fatal(err)
			}
			c.change(t, tr)
			err = tr.fs.Remove(target, info)
			mustIs(t, err, c.want...)
			err = tr.fs.Move(target, "moved.txt", info)
			mustIs(t, err, c.want...)
			mustGone(t, tr.p("moved.txt"))
			if c.check != nil {
				c.check(t, tr)
			}
			mustContent(t, tr.p("other/thesis.txt"), "other thesis\n")
			tr.checkOutside(t)
		})
	}
}

// TestRemoveWrongInfo: an Info for one file cannot remove another, even
// one with identical content.
func TestRemoveWrongInfo(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("a.txt"), "same\n")
	mustWrite(t, tr.p("b.txt"), "same\n")
	ia, err := tr.fs.Inspect("a.txt")
	if err != nil {
		t.Fatal(err)
	}
	mustIs(t, tr.fs.Remove("b.txt", ia), ErrChanged)
	mustIs(t, tr.fs.Remove("b.txt", Info{}), ErrChanged)
	mustContent(t, tr.p("b.txt"), "same\n")
	if err := tr.fs.Remove("a.txt", ia); err != nil {
		t.Fatal(err)
	}
	mustGone(t, tr.p("a.txt"))
	// Spent: the same Info cannot remove it twice.
	mustIs(t, tr.fs.Remove("a.txt", ia), ErrChanged, ErrNotFound)
}

func TestMove(t *testing.T) {
	tr := newTree(t)
	mustMkdir(t, tr.p("d"))
	mustWrite(t, tr.p("src.txt"), "source\n")
	mustWrite(t, tr.p("dst.txt"), "destination\n")
	mustSymlink(t, tr.p("nowhere"), tr.p("dangling"))
	mustSymlink(t, tr.outside, tr.p("outlink"))
	mustSymlink(t, tr.p("d"), tr.p("dlink"))
	info, err := tr.fs.Inspect("src.txt")
	if err != nil {
		t.Fatal(err)
	}
	for dst, want := range map[string]error{
		"dst.txt":                      ErrExists,
		"src.txt":                      ErrExists,
		"dangling":                     ErrExists,
		"d":                            ErrExists,
		tr.root:                        ErrExists,
		"outlink/stolen.txt":           ErrSymlink,
		"dlink/x.txt":                  ErrSymlink,
		filepath.Join(tr.outside, "x"): ErrOutsideRoots,
		filepath.Join(tr.evil, "x"):    ErrOutsideRoots,
		"../outside/x":                 ErrOutsideRoots,
		"nodir/x.txt":                  ErrNotFound,
		"src.txt/x":                    ErrNotFound,
		"x\x00y":                       ErrInvalidPath,
	} {
		mustIs(t, tr.fs.Move("src.txt", dst, info), want)
		_, err := tr.fs.CheckDestination(dst)
		mustIs(t, err, want)
	}
	// Another spelling of a path under the root (/proc/self/root on Unix,
	// a \\?\ prefix on Windows) is refused before anything is looked up.
	alias, want := rootPathAlias(tr.p("x"))
	mustIs(t, tr.fs.Move("src.txt", alias, info), want)
	_, err = tr.fs.CheckDestination(alias)
	mustIs(t, err, want)
	mustContent(t, tr.p("src.txt"), "source\n")
	mustContent(t, tr.p("dst.txt"), "destination\n")
	mustGone(t, filepath.Join(tr.outside, "stolen.txt"))
	mustGone(t, filepath.Join(tr.outside, "x"))
	if l, err := os.Readlink(tr.p("dangling")); err != nil || l != tr.p("nowhere") {
		t.Fatalf("dangling: %q %v", l, err)
	}
	tr.checkOutside(t)

	// Controls: to a new name in a subdirectory, then back by absolute path.
	if p, err := tr.fs.CheckDestination("d/moved.txt"); err != nil || p != tr.p("d/moved.txt") {
		t.Fatalf("CheckDestination = %q, %v", p, err)
	}
	if err := tr.fs.Move("src.txt", "d/moved.txt", info); err != nil {
		t.Fatal(err)
	}
	mustGone(t, tr.p("src.txt"))
	mustContent(t, tr.p("d/moved.txt"), "source\n")
	// The old Info no longer matches: a rename moves ctime.
	mustIs(t, tr.fs.Move(tr.p("d/moved.txt"), tr.p("back.txt"), info), ErrChanged)
	info2, err := tr.fs.Inspect(tr.p("d/moved.txt"))
	if err != nil || info2.Ino != info.Ino || info2.SHA256 != info.SHA256 {
		t.Fatalf("moved file: %+v %v", info2, err)
	}
	if err := tr.fs.Move(tr.p("d/moved.txt"), tr.p("back.txt"), info2); err != nil {
		t.Fatal(err)
	}
	mustContent(t, tr.p("back.txt"), "source\n")
	mustContent(t, tr.p("dst.txt"), "destination\n")
}
