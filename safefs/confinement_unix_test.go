//go:build linux || darwin

package safefs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// populate builds the standard attack fixtures inside the root.
func (tr *tree) populate(t *testing.T) {
	t.Helper()
	mustWrite(t, tr.p("file.txt"), "hello\n")
	mustMkdir(t, tr.p("sub"))
	mustWrite(t, tr.p("sub/inner.txt"), "inner\n")
	mustSymlink(t, tr.secret, tr.p("link_out"))
	mustSymlink(t, tr.p("file.txt"), tr.p("link_in"))
	mustSymlink(t, "file.txt", tr.p("link_rel"))
	mustSymlink(t, tr.p("sub"), tr.p("dirlink"))
	mustSymlink(t, tr.outside, tr.p("dirlink_out"))
	mustFIFO(t, tr.p("fifo"))
	mustSocket(t, tr.p("sock"))
	mustWrite(t, tr.p("hard.txt"), "two names\n")
	if err := os.Link(tr.p("hard.txt"), tr.p("hard2.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestInspectRefusals(t *testing.T) {
	tr := newTree(t)
	tr.populate(t)
	cases := []struct {
		name string
		path string
		want error
	}{
		{"dotdot relative", "../outside/secret.txt", ErrOutsideRoots},
		{"dotdot absolute", tr.root + "/../outside/secret.txt", ErrOutsideRoots},
		{"dotdot deep", "sub/../../outside/secret.txt", ErrOutsideRoots},
		{"absolute elsewhere", tr.secret, ErrOutsideRoots},
		{"etc passwd", "/etc/passwd", ErrOutsideRoots},
		{"sibling prefix", filepath.Join(tr.evil, "file.txt"), ErrOutsideRoots},
		{"proc self root", "/proc/self/root" + tr.p("file.txt"), ErrOutsideRoots},
		{"proc self cwd", "/proc/self/cwd/file.txt", ErrOutsideRoots},
		{"symlink to outside", "link_out", ErrSymlink},
		{"symlink inside to inside", "link_in", ErrSymlink},
		{"relative symlink inside", tr.p("link_rel"), ErrSymlink},
		{"symlink in parent", "dirlink/inner.txt", ErrSymlink},
		{"symlink parent to outside", "dirlink_out/secret.txt", ErrSymlink},
		{"directory", "sub", ErrNotRegular},
		{"root itself", tr.root, ErrNotRegular},
		{"root itself trailing slash", tr.root + "/", ErrNotRegular},
		{"root itself dot", ".", ErrNotRegular},
		{"fifo", "fifo", ErrNotRegular},
		{"socket", "sock", ErrNotRegular},
		{"missing", "missing.txt", ErrNotFound},
		{"missing parent", "nodir/file.txt", ErrNotFound},
		{"file as directory", "file.txt/x", ErrNotFound},
		{"empty", "", ErrInvalidPath},
		{"NUL byte", "file.txt\x00.jpg", ErrInvalidPath},
		{"invalid UTF-8", "file\xff.txt", ErrInvalidPath},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, err := tr.fs.Inspect(c.path)
			mustIs(t, err, c.want)
			if info != (Info{}) {
				t.Fatalf("refused Inspect returned data: %+v", info)
			}
			// The same refusal holds for Remove and Move, and nothing moves.
			mustIs(t, tr.fs.Remove(c.path, Info{Path: c.path}), c.want)
			mustIs(t, tr.fs.Move(c.path, "moved.txt", Info{Path: c.path}), c.want)
			mustGone(t, tr.p("moved.txt"))
		})
	}
	tr.checkOutside(t)
	mustContent(t, tr.p("file.txt"), "hello\n")
	mustContent(t, tr.p("sub/inner.txt"), "inner\n")
	for _, l := range []string{"link_out", "link_in", "dirlink"} {
		if fi, err := os.Lstat(tr.p(l)); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("%s: %v %v", l, fi, err)
		}
	}
}

func TestDeviceRefused(t *testing.T) {
	f, err := newFS("/dev")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Inspect("/dev/null")
	mustIs(t, err, ErrNotRegular)
	if !strings.Contains(err.Error(), "device") {
		t.Fatalf("message should name the type: %v", err)
	}
	e, _, err := f.Stat("/dev/null")
	if err != nil || e.Type != TypeOther || e.Mode&fs.ModeCharDevice == 0 {
		t.Fatalf("Stat /dev/null = %+v, %v", e, err)
	}
}

// TestInspectControls: the legitimate twins of the refusals, with the
// digest checked against the bytes written.
func TestInspectControls(t *testing.T) {
	tr := newTree(t)
	tr.populate(t)
	cases := []struct {
		path, rel, content string
		nlink              uint64
	}{
		{"file.txt", "file.txt", "hello\n", 1},
		{"./file.txt", "file.txt", "hello\n", 1},
		{tr.p("file.txt"), "file.txt", "hello\n", 1},
		{tr.root + "/sub/../file.txt", "file.txt", "hello\n", 1},
		{tr.root + "//sub/./inner.txt", "sub/inner.txt", "inner\n", 1},
		{"sub/inner.txt", "sub/inner.txt", "inner\n", 1},
		{"hard.txt", "hard.txt", "two names\n", 2},
	}
	for _, c := range cases {
		info, err := tr.fs.Inspect(c.path)
		if err != nil {
			t.Fatalf("%q: %v", c.path, err)
		}
		if info.Root != tr.root || info.Rel != c.rel || info.Path != tr.p(c.rel) {
			t.Errorf("%q: root %q rel %q path %q", c.path, info.Root, info.Rel, info.Path)
		}
		if info.SHA256 != sha(c.content) || info.Size != int64(len(c.content)) || info.HashedBytes != info.Size || info.HashScheme != HashFull {
			t.Errorf("%q: digest %s size %d hashed %d", c.path, info.SHA256, info.Size, info.HashedBytes)
		}
		if info.Nlink != c.nlink || !info.Mode.IsRegular() || info.Ino == 0 || info.ModTime.IsZero() || info.ChangeTime.IsZero() {
			t.Errorf("%q: %+v", c.path, info)
		}
	}
	// The remove controls: the same files go away; their neighbours stay.
	info, err := tr.fs.Inspect("hard.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.fs.Remove("hard.txt", info); err != nil {
		t.Fatal(err)
	}
	mustGone(t, tr.p("hard.txt"))
	mustContent(t, tr.p("hard2.txt"), "two names\n")
	info, err = tr.fs.Inspect(tr.root + "/sub/../file.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.fs.Remove(tr.p("file.txt"), info); err != nil {
		t.Fatal(err)
	}
	mustGone(t, tr.p("file.txt"))
	if fi, err := os.Lstat(tr.p("link_in")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("dangling link_in should remain a symlink: %v %v", fi, err)
	}
	mustContent(t, tr.p("sub/inner.txt"), "inner\n")
	tr.checkOutside(t)
}

func TestNew(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "dir")
	mustMkdir(t, dir)
	file := filepath.Join(base, "file")
	mustWrite(t, file, "x")
	link := filepath.Join(base, "link")
	mustSymlink(t, dir, link)
	cases := []struct {
		name  string
		roots []string
		msg   string
	}{
		{"no roots", nil, "at least one root"},
		{"missing", []string{filepath.Join(base, "nope")}, "does not exist"},
		{"file", []string{file}, "not a directory"},
		{"symlink", []string{link}, "is a symbolic link"},
		{"symlink with slash", []string{link + "/"}, "is a symbolic link"},
		{"duplicate", []string{dir, dir + "/./"}, "same directory"},
		{"NUL", []string{"/tmp\x00"}, "NUL"},
		{"empty", []string{""}, "empty"},
	}
	for _, c := range cases {
		f, err := newFS(c.roots...)
		if err == nil || f != nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: New = %v, %v; want error containing %q", c.name, f, err, c.msg)
		}
	}
	// Control: a real directory, given with a trailing slash and a dot.
	f, err := newFS(dir+"/.", base)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Roots(); len(got) != 2 || got[0] != dir || got[1] != base {
		t.Fatalf("Roots = %v", got)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = f.Inspect(filepath.Join(dir, "x"))
	mustIs(t, err, ErrClosed)
}

// TestRootAncestorSymlink: a root reached through a symlinked ancestor is
// accepted, and paths spelled either way resolve to it.
func TestRootAncestorSymlink(t *testing.T) {
	base := t.TempDir()
	realParent := filepath.Join(base, "real")
	mustMkdir(t, filepath.Join(realParent, "ws"))
	mustWrite(t, filepath.Join(realParent, "ws", "f.txt"), "via alias\n")
	alias := filepath.Join(base, "alias")
	mustSymlink(t, realParent, alias)
	f, err := newFS(filepath.Join(alias, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range []string{filepath.Join(alias, "ws", "f.txt"), filepath.Join(realParent, "ws", "f.txt"), "f.txt"} {
		info, err := f.Inspect(p)
		if err != nil || info.SHA256 != sha("via alias\n") || info.Path != filepath.Join(alias, "ws", "f.txt") {
			t.Errorf("%s: %+v %v", p, info, err)
		}
	}
}

func TestMultipleRoots(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	mustMkdir(t, a)
	mustMkdir(t, b)
	mustWrite(t, filepath.Join(a, "f"), "in a\n")
	mustWrite(t, filepath.Join(b, "f"), "in b\n")
	f, err := newFS(a, b)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for p, want := range map[string]string{"f": "in a\n", filepath.Join(a, "f"): "in a\n", filepath.Join(b, "f"): "in b\n"} {
		info, err := f.Inspect(p)
		if err != nil || info.SHA256 != sha(want) {
			t.Errorf("%s: %+v %v", p, info, err)
		}
	}
	// A move across the two roots works on one file system...
	info, err := f.Inspect(filepath.Join(a, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Move(filepath.Join(a, "f"), filepath.Join(b, "g"), info); err != nil {
		t.Fatal(err)
	}
	mustGone(t, filepath.Join(a, "f"))
	mustContent(t, filepath.Join(b, "g"), "in a\n")
	mustContent(t, filepath.Join(b, "f"), "in b\n")
}

// TestMoveCrossDevice needs two file systems; /dev/shm is tmpfs on Linux.
func TestMoveCrossDevice(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "safefs")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("need /dev/shm for a second file system: %v", err)
		}
		t.Skipf("LOUD SKIP: no /dev/shm for a second file system: %v", err)
	}
	defer os.RemoveAll(shm)
	a := t.TempDir()
	var sa, sb syscall.Stat_t
	if syscall.Stat(a, &sa) != nil || syscall.Stat(shm, &sb) != nil || sa.Dev == sb.Dev {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s and %s are on one file system", a, shm)
		}
		t.Skipf("LOUD SKIP: %s and %s are on one file system", a, shm)
	}
	mustWrite(t, filepath.Join(a, "f"), "stay\n")
	f, err := newFS(a, shm)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Inspect(filepath.Join(a, "f"))
	if err != nil {
		t.Fatal(err)
	}
	mustIs(t, f.Move(filepath.Join(a, "f"), filepath.Join(shm, "f"), info), ErrCrossDevice)
	mustContent(t, filepath.Join(a, "f"), "stay\n")
	mustGone(t, filepath.Join(shm, "f"))
}

func TestListAndStat(t *testing.T) {
	tr := newTree(t)
	tr.populate(t)
	entries, err := tr.fs.List(tr.root)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var names []string
	for _, e := range entries {
		got[e.Name] = e.Type
		names = append(names, e.Name)
	}
	want := map[string]string{
		"file.txt": TypeFile, "sub": TypeDir, "link_out": TypeSymlink, "link_in": TypeSymlink,
		"link_rel": TypeSymlink, "dirlink": TypeSymlink, "dirlink_out": TypeSymlink,
		"fifo": TypeOther, "sock": TypeOther, "hard.txt": TypeFile, "hard2.txt": TypeFile,
	}
	if len(got) != len(want) {
		t.Fatalf("List = %v", entries)
	}
	for n, ty := range want {
		if got[n] != ty {
			t.Errorf("%s: type %q, want %q", n, got[n], ty)
		}
	}
	if strings.Join(names, ",") != "dirlink,dirlink_out,fifo,file.txt,hard.txt,hard2.txt,link_in,link_out,link_rel,sock,sub" {
		t.Errorf("not sorted: %v", names)
	}
	for _, e := range entries {
		if e.Name == "link_out" && e.Size != int64(len(tr.secret)) {
			t.Errorf("link_out size %d: the link was followed", e.Size)
		}
	}
	sub, err := tr.fs.List("sub")
	if err != nil || len(sub) != 1 || sub[0].Name != "inner.txt" || sub[0].Size != 6 {
		t.Fatalf("List sub = %v, %v", sub, err)
	}
	for p, wantErr := range map[string]error{
		"dirlink":                   ErrSymlink,
		"dirlink_out":               ErrSymlink,
		"dirlink/.":                 ErrSymlink,
		tr.outside:                  ErrOutsideRoots,
		tr.evil:                     ErrOutsideRoots,
		"..":                        ErrOutsideRoots,
		"/proc/self/root" + tr.root: ErrOutsideRoots,
		"file.txt":                  ErrNotDir,
		"fifo":                      ErrNotDir,
		"missing":                   ErrNotFound,
		"bad\xff":                   ErrInvalidPath,
	} {
		_, err := tr.fs.List(p)
		mustIs(t, err, wantErr)
	}

	e, info, err := tr.fs.Stat("link_out")
	if err != nil || e.Type != TypeSymlink || info.Mode&fs.ModeSymlink == 0 || info.SHA256 != "" {
		t.Fatalf("Stat link_out = %+v %+v %v", e, info, err)
	}
	e, info, err = tr.fs.Stat("hard.txt")
	if err != nil || e.Type != TypeFile || info.Nlink != 2 || e.Size != 10 {
		t.Fatalf("Stat hard.txt = %+v %+v %v", e, info, err)
	}
	e, _, err = tr.fs.Stat(tr.root)
	if err != nil || e.Type != TypeDir || e.Name != "root" {
		t.Fatalf("Stat root = %+v %v", e, err)
	}
	e, _, err = tr.fs.Stat("fifo")
	if err != nil || e.Type != TypeOther {
		t.Fatalf("Stat fifo = %+v %v", e, err)
	}
	_, _, err = tr.fs.Stat("dirlink/inner.txt")
	mustIs(t, err, ErrSymlink)
	_, _, err = tr.fs.Stat(tr.secret)
	mustIs(t, err, ErrOutsideRoots)
	tr.checkOutside(t)
}

func TestCovers(t *testing.T) {
	tr := newTree(t)
	tr.populate(t)
	mustSymlink(t, tr.root, filepath.Join(tr.base, "alias"))
	mustSymlink(t, tr.base, filepath.Join(tr.outside, "up"))
	cases := map[string]bool{
		tr.p("journal.log"):                       true,
		tr.p("new/deeper/journal.log"):            true,
		tr.root:                                   true,
		tr.p("sub"):                               true,
		tr.p("dirlink/j"):                         true, // lexically inside already
		filepath.Join(tr.base, "alias", "j.log"):  true, // symlink into the root
		filepath.Join(tr.base, "alias", "x", "j"): true, // ... with missing parts
		filepath.Join(tr.outside, "up/root/j"):    true,
		filepath.Join(tr.outside, "journal.log"):  false,
		filepath.Join(tr.evil, "journal.log"):     false,
		filepath.Join(tr.base, "root-evil2", "j"): false,
		filepath.Join(tr.base, "journal.log"):     false,
		"/proc/self/root" + tr.p("j"):             true,
		"bad\x00":                                 true,
	}
	for p, want := range cases {
		if got := tr.fs.Covers(p); got != want {
			t.Errorf("Covers(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestLargeFileSampled: above the full-hash limit, the digest covers the
// first and last samples, and ctime catches a change in the middle that
// restores the mtime.
func TestLargeFileSampled(t *testing.T) {
	oldLimit, oldSample := fullHashLimit, sampleSize
	fullHashLimit, sampleSize = 1000, 100
	t.Cleanup(func() { fullHashLimit, sampleSize = oldLimit, oldSample })
	tr := newTree(t)
	content := strings.Repeat("0123456789", 500)
	mustWrite(t, tr.p("big"), content)
	info, err := tr.fs.Inspect("big")
	if err != nil {
		t.Fatal(err)
	}
	if info.HashScheme != HashSampled || info.HashedBytes != 200 || info.Size != 5000 || info.SHA256 == sha(content) {
		t.Fatalf("sampled Inspect: %+v", info)
	}
	// Exactly at the limit the file is still hashed whole.
	mustWrite(t, tr.p("edge"), content[:1000])
	if e, err := tr.fs.Inspect("edge"); err != nil || e.HashScheme != HashFull || e.SHA256 != sha(content[:1000]) {
		t.Fatalf("edge: %+v %v", e, err)
	}
	// Rewrite one byte in the middle, then put the mtime back.
	fi, _ := os.Stat(tr.p("big"))
	f, err := os.OpenFile(tr.p("big"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 2500); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chtimes(tr.p("big"), fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	now, err := tr.fs.Inspect("big")
	if err != nil {
		t.Fatal(err)
	}
	if d := now.Diff(info); strings.Join(d, ",") != "ctime" {
		t.Fatalf("middle rewrite with mtime restored: Diff = %v, want [ctime]", d)
	}
	err = tr.fs.Remove("big", info)
	mustIs(t, err, ErrChanged)
	if _, err := os.Stat(tr.p("big")); err != nil {
		t.Fatal(err)
	}
	// Control: the fresh Info removes it.
	if err := tr.fs.Remove("big", now); err != nil {
		t.Fatal(err)
	}
	mustGone(t, tr.p("big"))
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrOutsideRoots, ErrNotRegular, ErrNotDir, ErrSymlink, ErrNotFound, ErrChanged, ErrExists, ErrCrossDevice, ErrInvalidPath, ErrClosed, ErrUnsupported}
	for i, a := range all {
		for j, b := range all {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v matches %v", a, b)
			}
		}
	}
}
