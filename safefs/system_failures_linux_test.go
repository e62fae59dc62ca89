//go:build linux

package safefs

// System failures: each test drives a real failure through real system
// calls (kernel pseudo file systems whose files lie about their size or
// refuse reads, read-only and bind mounts, a cgroup file system without
// RENAME_NOREPLACE, names over NAME_MAX, a root deleted or renamed after
// New, the existing hooks at the rename and unlink windows) and checks
// both the refusal and, where one exists, its legitimate twin.

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func mustMount(t *testing.T, src, dst string, flags uintptr) {
	t.Helper()
	needEnv(t, unix.Mount(src, dst, "", unix.MS_BIND|flags, ""), "bind mount (needs CAP_SYS_ADMIN)")
	t.Cleanup(func() { unix.Unmount(dst, unix.MNT_DETACH) })
	if flags&unix.MS_RDONLY != 0 {
		// A bind mount ignores MS_RDONLY until remounted.
		needEnv(t, unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""), "read-only remount")
	}
}

func TestNewRootRefusesUnusableRoots(t *testing.T) {
	base := t.TempDir()
	mustWrite(t, filepath.Join(base, "file"), "x")
	for _, r := range []string{"", "a\x00b"} {
		if f, err := newFS(r); !errors.Is(err, ErrInvalidPath) {
			if f != nil {
				f.Close()
			}
			t.Errorf("New(%q) = %v, want ErrInvalidPath", r, err)
		}
	}
	// A root below a regular file: the error is the OS's ENOTDIR, not a
	// "does not exist" that would send the operator looking elsewhere.
	_, err := newFS(filepath.Join(base, "file", "sub"))
	if !errors.Is(err, unix.ENOTDIR) || strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("root below a file: %v", err)
	}
	f, err := newFS(base)
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	f.Close()
}

// The setuid, setgid and sticky bits are part of the approved state: a
// chmod u+s after approval refuses the removal.
func TestSpecialModeBits(t *testing.T) {
	tr := newTree(t)
	for name, mode := range map[string]os.FileMode{"suid": os.ModeSetuid | 0o755, "sgid": os.ModeSetgid | 0o755} {
		mustWrite(t, tr.p(name), name)
		if err := os.Chmod(tr.p(name), mode); err != nil {
			t.Fatal(err)
		}
		info, err := tr.fs.Inspect(name)
		if err != nil || info.Mode != mode {
			t.Fatalf("Inspect %s: mode %v, %v; want %v", name, info.Mode, err, mode)
		}
	}
	mustMkdir(t, tr.p("tmp"))
	if err := os.Chmod(tr.p("tmp"), os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	if e, _, err := tr.fs.Stat("tmp"); err != nil || e.Mode != os.ModeDir|os.ModeSticky|0o777 {
		t.Fatalf("Stat sticky dir: %v %v", e.Mode, err)
	}

	mustWrite(t, tr.p("plain"), "plain")
	if err := os.Chmod(tr.p("plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	approved, err := tr.fs.Inspect("plain")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tr.p("plain"), os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	err = tr.fs.Remove("plain", approved)
	mustIs(t, err, ErrChanged)
	if !strings.Contains(err.Error(), "mode") {
		t.Fatalf("the diff should name the mode: %v", err)
	}
	mustContent(t, tr.p("plain"), "plain")
	now, err := tr.fs.Inspect("plain")
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.fs.Remove("plain", now); err != nil {
		t.Fatalf("control: removing the setuid file as approved now: %v", err)
	}
	mustGone(t, tr.p("plain"))
}

func TestBlockDeviceRefused(t *testing.T) {
	tr := newTree(t)
	// Creating the node opens nothing; the test only looks at it.
	needEnv(t, unix.Mknod(tr.p("blk"), unix.S_IFBLK|0o600, int(unix.Mkdev(7, 250))), "mknod (needs CAP_MKNOD)")
	_, err := tr.fs.Inspect("blk")
	mustIs(t, err, ErrNotRegular)
	if !strings.Contains(err.Error(), "a device") {
		t.Fatalf("message should name the type: %v", err)
	}
	e, _, err := tr.fs.Stat("blk")
	if err != nil || e.Mode&fs.ModeDevice == 0 || e.Mode&fs.ModeCharDevice != 0 || e.Type != TypeOther {
		t.Fatalf("Stat block device: %+v %v", e, err)
	}
	_, err = tr.fs.CheckDestination("blk")
	mustIs(t, err, ErrExists)
}

func TestClosedFSRefusesEverything(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("f"), "f")
	info, err := tr.fs.Inspect("f")
	if err != nil {
		t.Fatal(err)
	}
	if tr.fs.Covers(tr.outside) {
		t.Fatal("control: the outside directory is not covered")
	}
	if err := tr.fs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.fs.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = tr.fs.Inspect("f")
	mustIs(t, err, ErrClosed)
	mustIs(t, tr.fs.Remove("f", info), ErrClosed)
	mustIs(t, tr.fs.Move("f", "g", info), ErrClosed)
	_, err = tr.fs.CheckDestination("g")
	mustIs(t, err, ErrClosed)
	_, _, err = tr.fs.Stat("f")
	mustIs(t, err, ErrClosed)
	_, err = tr.fs.List(".")
	mustIs(t, err, ErrClosed)
	if !tr.fs.Covers(tr.outside) {
		t.Fatal("a closed FS cannot decide, so Covers must answer true")
	}
	mustContent(t, tr.p("f"), "f")
	mustGone(t, tr.p("g"))
}

// sysfs reports 4096 bytes for every attribute and returns far fewer: the
// digest of a file that is shorter than its size must be refused, never
// taken over the bytes that happened to be there.
func TestContentShorterThanSize(t *testing.T) {
	dir := "/sys/kernel"
	_, err := os.Stat(filepath.Join(dir, "uevent_seqnum"))
	needEnv(t, err, "sysfs at /sys")
	f, err := newFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e, _, err := f.Stat("uevent_seqnum")
	if err != nil || e.Type != TypeFile || e.Size != 4096 {
		t.Fatalf("control: Stat of a sysfs attribute: %+v %v", e, err)
	}
	old, oldS := fullHashLimit, sampleSize
	t.Cleanup(func() { fullHashLimit, sampleSize = old, oldS })
	for _, tc := range []struct {
		name          string
		limit, sample int64
	}{
		{"full hash", old, oldS},
		{"sampled, head short", 2048, 1024},
		{"sampled, tail missing", 4, 2},
	} {
		fullHashLimit, sampleSize = tc.limit, tc.sample
		info, err := f.Inspect("uevent_seqnum")
		if err == nil || !errors.Is(err, errShort) || info.SHA256 != "" {
			t.Errorf("%s: Inspect = %+v, %v; want the short-read refusal", tc.name, info, err)
		}
	}
}

// A read that fails (the loopback device has no link speed: EINVAL) is an
// error, not a digest of nothing.
func TestReadErrorRefused(t *testing.T) {
	dir, err := filepath.EvalSymlinks("/sys/class/net/lo")
	needEnv(t, err, "sysfs network class")
	f, err := newFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Inspect("speed")
	if !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Inspect lo/speed: %v; want EINVAL", err)
	}
	if _, err := f.Inspect("ifindex"); !errors.Is(err, errShort) {
		t.Fatalf("control: a readable attribute still fails only as short: %v", err)
	}
}

// A write-only attribute passes the type check and then cannot be opened
// for reading: refused with the OS cause.
func TestOpenRefusedAfterTypeCheck(t *testing.T) {
	paths, _ := filepath.Glob("/sys/bus/*/drivers_probe")
	var dir string
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm() == 0o200 {
			dir = filepath.Dir(p)
			break
		}
	}
	if dir == "" {
		needEnv(t, errors.New("no write-only /sys/bus/*/drivers_probe"), "sysfs bus attributes")
	}
	f, err := newFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = f.Inspect("drivers_probe")
	if !errors.Is(err, unix.EACCES) {
		t.Fatalf("Inspect of a write-only attribute: %v; want EACCES", err)
	}
	if e, _, err := f.Stat("drivers_probe"); err != nil || e.Type != TypeFile {
		t.Fatalf("control: Stat %+v %v", e, err)
	}
}

func TestNameTooLong(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("src"), "src")
	info, err := tr.fs.Inspect("src")
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 300)
	_, err = tr.fs.CheckDestination(long)
	if !errors.Is(err, unix.ENAMETOOLONG) || errors.Is(err, ErrExists) {
		t.Fatalf("CheckDestination: %v", err)
	}
	_, _, err = tr.fs.Stat(long)
	if !errors.Is(err, unix.ENAMETOOLONG) {
		t.Fatalf("Stat: %v", err)
	}
	err = tr.fs.Move("src", long, info)
	if !errors.Is(err, unix.ENAMETOOLONG) || errors.Is(err, ErrChanged) {
		t.Fatalf("Move: %v", err)
	}
	mustContent(t, tr.p("src"), "src")
	ok := strings.Repeat("n", 255)
	if _, err := tr.fs.CheckDestination(ok); err != nil {
		t.Fatalf("control: 255-byte name: %v", err)
	}
	if err := tr.fs.Move("src", ok, info); err != nil {
		t.Fatalf("control: Move to a 255-byte name: %v", err)
	}
	mustContent(t, tr.p(ok), "src")
}

// The name vanishes right before the rename aside: nothing to delete, and
// the caller learns the approved file is gone (ErrChanged, ErrNotFound).
func TestRemoveNameGoneBeforeRename(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("victim.txt"), "approved\n")
	info, err := tr.fs.Inspect("victim.txt")
	if err != nil {
		t.Fatal(err)
	}
	withHook(t, &testHookBeforeRename, func(p string) {
		if err := os.Rename(p, p+".elsewhere"); err != nil {
			t.Error(err)
		}
	})
	err = tr.fs.Remove("victim.txt", info)
	mustIs(t, err, ErrChanged, ErrNotFound)
	mustContent(t, tr.p("victim.txt.elsewhere"), "approved\n")
	assertNoTemp(t, tr.root)
	tr.checkOutside(t)
}

// An adversary puts a directory under the random name before the unlink:
// unlinkat refuses it, and the entry is put back under the original name,
// or, if that name was taken meanwhile, left where it is and reported.
func TestRemoveUnlinkRefused(t *testing.T) {
	for _, occupy := range []bool{false, true} {
		t.Run(fmt.Sprintf("name retaken=%v", occupy), func(t *testing.T) {
			tr := newTree(t)
			mustWrite(t, tr.p("victim.txt"), "approved\n")
			info, err := tr.fs.Inspect("victim.txt")
			if err != nil {
				t.Fatal(err)
			}
			var tmp string
			withHook(t, &testHookBeforeUnlink, func(p string) {
				tmp = p
				if err := os.Rename(p, tr.p("kept.txt")); err != nil {
					t.Error(err)
				}
				mustMkdir(t, filepath.Join(p, "inner"))
				if occupy {
					mustWrite(t, tr.p("victim.txt"), "attacker\n")
				}
			})
			err = tr.fs.Remove("victim.txt", info)
			if err == nil {
				t.Fatal("Remove succeeded although a directory was under the random name")
			}
			mustContent(t, tr.p("kept.txt"), "approved\n")
			if !occupy {
				mustIs(t, err, ErrChanged, ErrNotRegular)
				if st, err := os.Stat(tr.p("victim.txt/inner")); err != nil || !st.IsDir() {
					t.Fatalf("the directory was not put back: %v", err)
				}
				assertNoTemp(t, tr.root)
			} else {
				if !strings.Contains(err.Error(), "could not be renamed back") || !strings.Contains(err.Error(), tmp) {
					t.Fatalf("error should say where the entry was left: %v", err)
				}
				mustContent(t, tr.p("victim.txt"), "attacker\n")
				if st, err := os.Stat(filepath.Join(tmp, "inner")); err != nil || !st.IsDir() {
					t.Fatalf("the directory should be left at %s: %v", tmp, err)
				}
			}
			tr.checkOutside(t)
		})
	}
}

// Move's rename meets a destination created, or a source removed, in the
// last window.
func TestMoveWindowRenameErrors(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("src"), "approved\n")
	info, err := tr.fs.Inspect("src")
	if err != nil {
		t.Fatal(err)
	}
	withHook(t, &testHookBeforeRename, func(string) { mustWrite(t, tr.p("dst"), "theirs\n") })
	mustIs(t, tr.fs.Move("src", "dst", info), ErrExists)
	mustContent(t, tr.p("dst"), "theirs\n")
	mustContent(t, tr.p("src"), "approved\n")

	withHook(t, &testHookBeforeRename, func(p string) {
		if err := os.Rename(p, tr.p("moved-away")); err != nil {
			t.Error(err)
		}
	})
	mustIs(t, tr.fs.Move("src", "dst2", info), ErrChanged, ErrNotFound)
	mustGone(t, tr.p("dst2"))
	mustContent(t, tr.p("moved-away"), "approved\n")
	tr.checkOutside(t)
}

// A read-only mount: the file can be inspected but neither removed nor
// moved; that is a plain error, not a change of the approved file.
func TestReadOnlyMount(t *testing.T) {
	base := t.TempDir()
	data, ro := filepath.Join(base, "data"), filepath.Join(base, "ro")
	mustMkdir(t, data)
	mustMkdir(t, ro)
	mustWrite(t, filepath.Join(data, "f"), "keep\n")
	mustMount(t, data, ro, unix.MS_RDONLY)
	f, err := newFS(ro)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Inspect("f")
	if err != nil {
		t.Fatal(err)
	}
	err = f.Remove("f", info)
	if !errors.Is(err, unix.EROFS) || errors.Is(err, ErrChanged) {
		t.Fatalf("Remove on a read-only mount: %v", err)
	}
	err = f.Move("f", "g", info)
	if !errors.Is(err, unix.EROFS) || errors.Is(err, ErrChanged) {
		t.Fatalf("Move on a read-only mount: %v", err)
	}
	mustContent(t, filepath.Join(data, "f"), "keep\n")
	// Control: the same file through the writable path.
	w, err := newFS(data)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	info, err = w.Inspect("f")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Move("f", "g", info); err != nil {
		t.Fatalf("control: %v", err)
	}
	mustContent(t, filepath.Join(data, "g"), "keep\n")
}

// Two roots on one device but different mounts: the device check passes
// and the kernel refuses the rename with EXDEV, reported as cross-device.
func TestMoveAcrossBindMount(t *testing.T) {
	base := t.TempDir()
	a, b, bind := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "bind")
	for _, d := range []string{a, b, bind} {
		mustMkdir(t, d)
	}
	mustWrite(t, filepath.Join(a, "f"), "stay\n")
	mustMount(t, a, bind, 0)
	f, err := newFS(bind, b)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Inspect(filepath.Join(bind, "f"))
	if err != nil {
		t.Fatal(err)
	}
	mustIs(t, f.Move(filepath.Join(bind, "f"), filepath.Join(b, "f"), info), ErrCrossDevice)
	mustContent(t, filepath.Join(a, "f"), "stay\n")
	mustGone(t, filepath.Join(b, "f"))
	if err := f.Move(filepath.Join(bind, "f"), filepath.Join(bind, "g"), info); err != nil {
		t.Fatalf("control: a move within the mount: %v", err)
	}
	mustContent(t, filepath.Join(a, "g"), "stay\n")
}

// A file mounted over the approved name changes what the name refers to
// without touching the approved inode: lastLook catches it by inode.
func TestLastLookMountedOver(t *testing.T) {
	tr := newTree(t)
	path := tr.p("victim.txt")
	mustWrite(t, path, "approved")
	mustWrite(t, filepath.Join(tr.outside, "other"), "approved")
	want, err := tr.fs.Inspect(path)
	if err != nil {
		t.Fatal(err)
	}
	look := lastLookAt(t, tr.fs, path, want)
	if err := look(); err != nil {
		t.Fatalf("control: %v", err)
	}
	mustMount(t, filepath.Join(tr.outside, "other"), path, 0)
	err = look()
	mustIs(t, err, ErrChanged)
	if !strings.Contains(err.Error(), "now names another") {
		t.Fatalf("%v", err)
	}
}

// cgroupfs (kernfs) does not support RENAME_NOREPLACE: Remove and Move
// must refuse as unsupported instead of falling back to a plain rename
// that could replace a destination.
func TestNoReplaceUnsupported(t *testing.T) {
	mnt, err := cgroupMount()
	needEnv(t, err, "a writable cgroup file system")
	dir := filepath.Join(mnt, fmt.Sprintf("mcpsafe-bindmount-%d", os.Getpid()))
	needEnv(t, os.Mkdir(dir, 0o755), "creating a cgroup")
	defer os.Remove(dir)
	f, err := newFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Inspect("cgroup.procs")
	if err != nil {
		t.Fatalf("control: Inspect of a cgroup file: %v", err)
	}
	mustIs(t, f.Remove("cgroup.procs", info), ErrUnsupported)
	mustIs(t, f.Move("cgroup.procs", "moved", info), ErrUnsupported)
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		t.Fatal(err)
	}
}

func cgroupMount() (string, error) {
	m, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	defer m.Close()
	s := bufio.NewScanner(m)
	for s.Scan() {
		fl := strings.Fields(s.Text())
		if len(fl) >= 4 && (fl[2] == "cgroup2" || fl[2] == "cgroup") && strings.HasPrefix(fl[3], "rw") {
			return fl[1], nil
		}
	}
	return "", errors.New("no read-write cgroup mount")
}

// The root directory deleted after New: reading it fails with the OS
// cause, and lookups below it find nothing.
func TestRootRemovedAfterNew(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("f"), "f")
	if _, err := tr.fs.List(tr.root); err != nil {
		t.Fatalf("control: %v", err)
	}
	if err := os.RemoveAll(tr.root); err != nil {
		t.Fatal(err)
	}
	_, err := tr.fs.List(tr.root)
	if !errors.Is(err, unix.ENOENT) || !strings.Contains(err.Error(), "read directory") {
		t.Fatalf("List of a deleted root: %v", err)
	}
	_, err = tr.fs.Inspect("f")
	mustIs(t, err, ErrNotFound)
}

// Covers answers true whenever it cannot place a path for sure.
func TestCoversUndecidable(t *testing.T) {
	tr := newTree(t)
	if tr.fs.Covers(filepath.Join(tr.outside, "new", "j.jsonl")) {
		t.Fatal("control: a missing path under the outside directory is not covered")
	}
	// Below a regular file: lstat says ENOTDIR, not "missing".
	if !tr.fs.Covers(filepath.Join(tr.secret, "j.jsonl")) {
		t.Error("path below a regular file: want true")
	}
	// A dangling symlink could be pointed into a root later.
	mustSymlink(t, "/nonexistent-mcpsafe", filepath.Join(tr.outside, "dangling"))
	if !tr.fs.Covers(filepath.Join(tr.outside, "dangling", "j.jsonl")) {
		t.Error("path through a dangling symlink: want true")
	}
	// The root renamed after New: no configured spelling matches, the
	// device and inode still do.
	moved := filepath.Join(tr.base, "moved")
	if err := os.Rename(tr.root, moved); err != nil {
		t.Fatal(err)
	}
	if !tr.fs.Covers(filepath.Join(moved, "sub", "j.jsonl")) {
		t.Error("path inside the renamed root: want true")
	}
	if tr.fs.Covers(filepath.Join(tr.outside, "j.jsonl")) {
		t.Error("control after the rename: outside is still not covered")
	}
}

// With the working directory deleted a relative path cannot be made
// absolute: Covers says true and New refuses.
func TestCoversDeletedWorkingDirectory(t *testing.T) {
	tr := newTree(t)
	gone := filepath.Join(tr.base, "cwd")
	mustMkdir(t, gone)
	t.Chdir(gone)
	if tr.fs.Covers("j.jsonl") {
		t.Fatal("control: a relative path in an outside working directory is not covered")
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if !tr.fs.Covers("j.jsonl") {
		t.Error("relative path with a deleted working directory: want true")
	}
	if f, err := newFS("rel"); err == nil {
		f.Close()
		t.Error("New of a relative root with a deleted working directory succeeded")
	}
}

// A root given through a descriptor's magic link (/proc/self/fd/N/...),
// as a supervisor passing an open directory might, whose directory has no
// path left in this mount namespace (its mount was detached): the real
// path that Covers and the journal check rely on cannot be found, so New
// refuses, and closes the descriptor it had opened.
func TestNewRootWithoutRealPath(t *testing.T) {
	base := t.TempDir()
	data, m := filepath.Join(base, "data"), filepath.Join(base, "m")
	mustMkdir(t, filepath.Join(data, "sub", "inner"))
	mustMkdir(t, m)
	mustMount(t, data, m, 0)
	dfd, err := unix.Open(filepath.Join(m, "sub"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	root := fmt.Sprintf("/proc/self/fd/%d/inner", dfd)
	f, err := newFS(root)
	if err != nil {
		t.Fatalf("control: the same root while its mount is attached: %v", err)
	}
	f.Close()
	if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	before := lowestFreeFD(t)
	f, err = newFS(root)
	if err == nil {
		f.Close()
		t.Fatal("New accepted a root with no real path")
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), root) {
		t.Fatalf("error should name the root and the missing real path: %v", err)
	}
	if got := lowestFreeFD(t); got != before {
		t.Fatalf("descriptor leak: lowest free fd %d, was %d", got, before)
	}
}
