//go:build linux

package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// resolveFlags confine every openat2 lookup: no component may be a
// symlink or a /proc magic link, and the lookup may not leave the
// directory it starts from (the kernel refuses, it does not clamp).
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

type root struct {
	path string // cleaned absolute path as configured
	fd   int    // O_RDONLY|O_DIRECTORY, opened once at New
	dev  uint64
	ino  uint64
}

// FS is a set of root directories opened once. All lookups start from the
// roots' descriptors, never from a path string. It is safe for concurrent
// use; Close waits for operations in flight.
type FS struct {
	mu     sync.RWMutex
	closed bool
	roots  []root
	// forms are the strings an absolute path is matched against: each
	// root as configured, then, when different, with the symlinks of its
	// ancestors resolved, so both spellings of a root are accepted.
	forms   []string
	formIdx []int
}

// New opens the roots. Each must exist, be a directory, and not itself be a
// symbolic link (its ancestors may be: that is the operator's choice, made
// once at startup). Relative roots are made absolute against the working
// directory. Duplicate roots are refused.
func New(roots ...string) (*FS, error) {
	if len(roots) == 0 {
		return nil, errors.New("safefs: at least one root directory is required")
	}
	f := &FS{}
	fail := func(err error) (*FS, error) {
		f.closeFDs()
		return nil, err
	}
	var real []string
	for _, r := range roots {
		if err := checkPath(r); err != nil {
			return fail(fmt.Errorf("safefs: root %q: %w", r, err))
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			return fail(fmt.Errorf("safefs: root %q: %w", r, err))
		}
		lst, err := os.Lstat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fail(fmt.Errorf("safefs: root %q does not exist", abs))
		case err != nil:
			return fail(fmt.Errorf("safefs: root %q: %w", abs, err))
		case lst.Mode()&fs.ModeSymlink != 0:
			return fail(fmt.Errorf("safefs: root %q is a symbolic link; give the directory it points to", abs))
		case !lst.IsDir():
			return fail(fmt.Errorf("safefs: root %q is not a directory", abs))
		}
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fail(fmt.Errorf("safefs: open root %q: %w", abs, err))
		}
		var st unix.Stat_t
		if err := fstatFD(fd, &st); err != nil {
			unix.Close(fd)
			return fail(fmt.Errorf("safefs: stat root %q: %w", abs, err))
		}
		lsys, ok := lst.Sys().(*syscall.Stat_t)
		if !ok || uint64(st.Dev) != uint64(lsys.Dev) || st.Ino != lsys.Ino {
			unix.Close(fd)
			return fail(fmt.Errorf("safefs: root %q was replaced while it was opened", abs))
		}
		for _, o := range f.roots {
			if o.dev == uint64(st.Dev) && o.ino == st.Ino {
				unix.Close(fd)
				return fail(fmt.Errorf("safefs: root %q is the same directory as root %q", abs, o.path))
			}
		}
		f.roots = append(f.roots, root{path: abs, fd: fd, dev: uint64(st.Dev), ino: st.Ino})
		rp, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return fail(fmt.Errorf("safefs: root %q: %w", abs, err))
		}
		real = append(real, rp)
	}
	// Probe openat2 once so an old kernel or a sandbox without it is a
	// startup error rather than a refusal of every call.
	fd, err := openBeneath(f.roots[0].fd, ".", unix.O_PATH|unix.O_DIRECTORY)
	switch {
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		return fail(fmt.Errorf("%w: openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS): %v", ErrUnsupported, err))
	case err != nil:
		// Anything else (out of descriptors, say) is not the kernel's age.
		return fail(fmt.Errorf("safefs: probing openat2 on root %q: %w", f.roots[0].path, err))
	}
	unix.Close(fd)
	for i, r := range f.roots {
		f.forms = append(f.forms, r.path)
		f.formIdx = append(f.formIdx, i)
	}
	for i, rp := range real {
		if rp != f.roots[i].path {
			f.forms = append(f.forms, rp)
			f.formIdx = append(f.formIdx, i)
		}
	}
	return f, nil
}

func (f *FS) closeFDs() error {
	var errs []error
	for _, r := range f.roots {
		if err := unix.Close(r.fd); err != nil {
			errs = append(errs, fmt.Errorf("safefs: close root %q: %w", r.path, err))
		}
	}
	f.roots = nil
	return errors.Join(errs...)
}

// Close releases the root descriptors after operations in flight finish.
// Later calls fail with ErrClosed.
func (f *FS) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	return f.closeFDs()
}

// Roots returns the configured roots, cleaned and absolute, in order.
func (f *FS) Roots() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]string, len(f.roots))
	for i, r := range f.roots {
		out[i] = r.path
	}
	return out
}

func (f *FS) begin() error {
	f.mu.RLock()
	if f.closed {
		f.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (f *FS) end() { f.mu.RUnlock() }

// openBeneath is openat2 with resolveFlags, retried on EINTR only.
func openBeneath(dirfd int, rel string, flags int) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveFlags}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

func fstatat(dirfd int, name string, st *unix.Stat_t) error {
	for {
		err := unix.Fstatat(dirfd, name, st, unix.AT_SYMLINK_NOFOLLOW)
		if err != unix.EINTR {
			return err
		}
	}
}

// mapErrno turns a lookup errno into the package's sentinels.
func mapErrno(shown string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%w: %q", ErrSymlink, shown)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%w: %q (refused by the kernel)", ErrOutsideRoots, shown)
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("%w: %q", ErrNotFound, shown)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%w: %q (a parent is not a directory)", ErrNotFound, shown)
	case errors.Is(err, unix.ENXIO), errors.Is(err, unix.EISDIR):
		return fmt.Errorf("%w: %q", ErrNotRegular, shown)
	}
	return fmt.Errorf("safefs: %q: %w", shown, err)
}

// target is a path resolved to an open parent directory and a final name.
// The parent was reached by openat2 from the root descriptor with no
// symlink on the way, so every *at call on (parent, name) acts inside it.
type target struct {
	r      *root
	rel    string
	shown  string // absolute path for messages and Info.Path
	parent int    // O_PATH|O_DIRECTORY descriptor, or -1 for a root itself
	name   string
}

func (t *target) close() {
	if t.parent >= 0 {
		unix.Close(t.parent)
		t.parent = -1
	}
}

// resolve checks p lexically and, unless p names a root itself, opens its
// parent directory beneath the root.
func (f *FS) resolve(p string) (target, error) {
	i, rel, err := lexicalResolve(f.forms, p)
	if err != nil {
		return target{parent: -1}, err
	}
	r := &f.roots[f.formIdx[i]]
	t := target{r: r, rel: rel, shown: joinRoot(r.path, rel), parent: -1}
	if rel == "." {
		return t, nil
	}
	dir, name := filepath.Split(rel)
	if dir == "" {
		dir = "."
	}
	t.name = name
	t.parent, err = openBeneath(r.fd, dir, unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		t.parent = -1
		return t, mapErrno(t.shown, err)
	}
	return t, nil
}

func fileMode(st *unix.Stat_t) fs.FileMode { return unixMode(uint32(st.Mode)) }

func statTimes(st *unix.Stat_t) (mtime, ctime time.Time) {
	return time.Unix(st.Mtim.Unix()), time.Unix(st.Ctim.Unix())
}

// statInfo fills the metadata part of an Info.
func statInfo(t *target, st *unix.Stat_t) Info {
	mt, ct := statTimes(st)
	return Info{
		Root: t.r.path, Path: t.shown, Rel: filepath.ToSlash(t.rel),
		Dev: uint64(st.Dev), Ino: st.Ino, Mode: fileMode(st), Size: st.Size,
		ModTime: mt, ChangeTime: ct, Nlink: uint64(st.Nlink),
	}
}

// sameState reports whether two stats of one open file show no write,
// truncate, chmod, link or utimes between them.
func sameState(a, b *unix.Stat_t) bool {
	return a.Dev == b.Dev && a.Ino == b.Ino && a.Mode == b.Mode && a.Size == b.Size &&
		a.Nlink == b.Nlink && a.Mtim == b.Mtim && a.Ctim == b.Ctim
}

// openRegular looks at (parent, name) without following anything, refuses
// what is not a regular file before opening it, opens it, and checks that
// the descriptor is the inode the lookup saw. It returns the open
// descriptor and its fstat.
//
// Between the fstatat and the open the name could be swapped: the open
// still cannot follow a symlink (RESOLVE_NO_SYMLINKS, O_NOFOLLOW), cannot
// block on a swapped-in FIFO (O_NONBLOCK), does not take a terminal
// (O_NOCTTY), and the inode check then refuses. Opening a swapped-in device
// node is the one side effect left, and needs mknod rights inside a root.
func openRegular(t *target) (int, unix.Stat_t, error) {
	var st, fst unix.Stat_t
	if err := fstatat(t.parent, t.name, &st); err != nil {
		return -1, st, mapErrno(t.shown, err)
	}
	m := fileMode(&st)
	if m&fs.ModeSymlink != 0 {
		return -1, st, fmt.Errorf("%w: %q is itself a symbolic link", ErrSymlink, t.shown)
	}
	if !m.IsRegular() {
		return -1, st, fmt.Errorf("%w: %q is %s", ErrNotRegular, t.shown, kindOf(m))
	}
	fd, err := openBeneath(t.parent, t.name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY)
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENXIO), errors.Is(err, unix.ENOTDIR):
		// The entry fstatat just saw is gone or became something else.
		return -1, st, fmt.Errorf("%w: %w", ErrChanged, mapErrno(t.shown, err))
	case err != nil:
		// EACCES, EMFILE and the like: a failure, not a changed target.
		return -1, st, mapErrno(t.shown, err)
	}
	if err := fstatFD(fd, &fst); err != nil {
		unix.Close(fd)
		return -1, st, fmt.Errorf("safefs: stat %q: %w", t.shown, err)
	}
	if fst.Dev != st.Dev || fst.Ino != st.Ino || !fileMode(&fst).IsRegular() {
		unix.Close(fd)
		return -1, st, fmt.Errorf("%w: %q was replaced while it was opened", ErrChanged, t.shown)
	}
	return fd, fst, nil
}

// inspectOpen hashes the open file and returns its Info. The descriptor
// is fstat'ed again after hashing so that a write during the read is
// caught instead of producing a digest of a mix of versions.
func inspectOpen(t *target, fd int, st *unix.Stat_t) (Info, error) {
	sum, scheme, n, err := hashContent(fdReaderAt(fd), st.Size)
	if err != nil {
		return Info{}, fmt.Errorf("safefs: read %q: %w", t.shown, err)
	}
	var after unix.Stat_t
	if err := fstatFD(fd, &after); err != nil {
		return Info{}, fmt.Errorf("safefs: stat %q: %w", t.shown, err)
	}
	if !sameState(st, &after) {
		return Info{}, fmt.Errorf("%w: %q was modified while it was read", ErrChanged, t.shown)
	}
	info := statInfo(t, st)
	info.SHA256, info.HashScheme, info.HashedBytes = sum, scheme, n
	return info, nil
}

type fdReaderAt int

func (fd fdReaderAt) ReadAt(p []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(int(fd), p, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 && len(p) > 0 {
			return 0, errShort
		}
		return n, nil
	}
}

// Inspect resolves path to an existing regular file inside a root, opens it
// without following any symlink, and returns its identity, state and
// content digest, all taken from the one open descriptor.
func (f *FS) Inspect(path string) (Info, error) {
	if err := f.begin(); err != nil {
		return Info{}, err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return Info{}, err
	}
	if t.parent < 0 {
		return Info{}, fmt.Errorf("%w: %q is a root directory", ErrNotRegular, t.shown)
	}
	fd, st, err := openRegular(&t)
	if err != nil {
		return Info{}, err
	}
	defer unix.Close(fd)
	return inspectOpen(&t, fd, &st)
}

// verify re-inspects the source of a Remove or Move and compares it with
// want. On success the returned descriptor is open on the verified inode.
func verify(t *target, want Info) (int, unix.Stat_t, error) {
	if t.parent < 0 {
		return -1, unix.Stat_t{}, fmt.Errorf("%w: %q is a root directory", ErrNotRegular, t.shown)
	}
	fd, st, err := openRegular(t)
	if err != nil {
		return -1, st, changed(err)
	}
	got, err := inspectOpen(t, fd, &st)
	if err == nil {
		if d := got.Diff(want); d != nil {
			err = fmt.Errorf("%w: %q differs in %v", ErrChanged, t.shown, d)
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, st, changed(err)
	}
	return fd, st, nil
}

// lastLook is the final check right before the unlink or rename: the open
// descriptor shows no change since it was hashed, and the name in the
// verified parent still refers to that inode.
func lastLook(t *target, fd int, st *unix.Stat_t) error {
	var now, ent unix.Stat_t
	if err := fstatFD(fd, &now); err != nil {
		return fmt.Errorf("safefs: stat %q: %w", t.shown, err)
	}
	if !sameState(st, &now) {
		return fmt.Errorf("%w: %q was modified during the check", ErrChanged, t.shown)
	}
	if err := fstatat(t.parent, t.name, &ent); err != nil {
		return changed(mapErrno(t.shown, err))
	}
	if ent.Dev != st.Dev || ent.Ino != st.Ino {
		return fmt.Errorf("%w: %q now names another inode", ErrChanged, t.shown)
	}
	return nil
}

// Remove deletes the file at path if, and only if, it is still exactly the
// file described by want (from Inspect): same path, device, inode, type,
// mode, size, mtime, ctime, link count and content digest. Any difference,
// including a symlink or a missing directory anywhere on the path, returns
// an error matching ErrChanged (and the specific cause) and deletes nothing.
//
// Linux has no "unlink this name only if it is inode X", so the unlink is
// done in two steps on the verified parent descriptor: rename the name to a
// fresh random name in the same directory (RENAME_NOREPLACE), check that the
// renamed entry is the approved inode, and only then unlink the random name.
// If another process swapped a different entry in under the name just
// before the rename, that entry is renamed back and ErrChanged is returned:
// nothing is deleted. The race that remains is between the check of the
// random name and its unlink (two adjacent system calls): a process that
// learns the random name in that window (inotify, readdir) and renames a
// different entry over it gets that entry unlinked instead. Even then
// unlinkat acts only on a directory entry of the verified parent, reached
// without any symlink; it never follows a symlink and refuses directories,
// so nothing outside the root is touched; and the open descriptor shows
// afterwards that the approved file kept its link, so Remove returns
// ErrRaceLost, not nil. If the parent directory is renamed elsewhere after
// it was opened, the operation follows the directory (same inode checks).
// If the process dies between the rename and the unlink, the approved file
// is left under the name .mcpsafe-remove-<hex> in its directory.
func (f *FS) Remove(path string, want Info) error {
	if err := f.begin(); err != nil {
		return err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return changed(err)
	}
	fd, st, err := verify(&t, want)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := lastLook(&t, fd, &st); err != nil {
		return err
	}
	tmp, err := tempName("remove")
	if err != nil {
		return err
	}
	if testHookBeforeRename != nil {
		testHookBeforeRename(t.shown)
	}
	if err := unix.Renameat2(t.parent, t.name, t.parent, tmp, unix.RENAME_NOREPLACE); err != nil {
		switch {
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
			return fmt.Errorf("%w: the file system of %q cannot rename without replacing: %v", ErrUnsupported, t.shown, err)
		case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS):
			// Not a change of the target: the server may not remove it.
			return fmt.Errorf("safefs: remove %q: %w", t.shown, err)
		}
		return changed(fmt.Errorf("safefs: rename %q aside: %w", t.shown, mapErrno(t.shown, err)))
	}
	tmpShown := filepath.Join(filepath.Dir(t.shown), tmp)
	var ent unix.Stat_t
	if err := fstatat(t.parent, tmp, &ent); err != nil || ent.Dev != st.Dev || ent.Ino != st.Ino {
		if rerr := unix.Renameat2(t.parent, tmp, t.parent, t.name, unix.RENAME_NOREPLACE); rerr != nil {
			return fmt.Errorf("%w: a different entry was swapped in at %q during the removal and could not be put back (%v); it is now %q; nothing was deleted", ErrRaceLost, t.shown, rerr, tmpShown)
		}
		return fmt.Errorf("%w: a different entry was swapped in at %q during the removal and was put back; nothing was deleted", ErrChanged, t.shown)
	}
	if testHookBeforeUnlink != nil {
		testHookBeforeUnlink(tmpShown)
	}
	if err := unix.Unlinkat(t.parent, tmp, 0); err != nil {
		if rerr := unix.Renameat2(t.parent, tmp, t.parent, t.name, unix.RENAME_NOREPLACE); rerr != nil {
			return fmt.Errorf("safefs: unlink %q: %v; and the file could not be renamed back (%v): it is now %q", tmpShown, err, rerr, tmpShown)
		}
		return changed(fmt.Errorf("safefs: unlink %q: %w", t.shown, mapErrno(t.shown, err)))
	}
	// The open descriptor tells whether the entry that went was ours: its
	// link count drops by one if so.
	var after unix.Stat_t
	if err := fstatFD(fd, &after); err != nil {
		return fmt.Errorf("safefs: stat %q after unlink: %w", t.shown, err)
	}
	if uint64(after.Nlink) != uint64(st.Nlink)-1 {
		return fmt.Errorf("%w: %q was unlinked, but the approved file still has %d links", ErrRaceLost, tmpShown, after.Nlink)
	}
	return nil
}

// CheckDestination reports the resolved absolute path a Move to path
// would create, or why it cannot: ErrExists when anything (even a dangling
// symlink) is already there, ErrNotFound when its directory is missing,
// ErrSymlink or ErrOutsideRoots as for any path. For previews; Move checks
// again atomically.
func (f *FS) CheckDestination(path string) (string, error) {
	if err := f.begin(); err != nil {
		return "", err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return "", err
	}
	if t.parent < 0 {
		return "", fmt.Errorf("%w: %q is a root directory", ErrExists, t.shown)
	}
	var st unix.Stat_t
	switch err := fstatat(t.parent, t.name, &st); {
	case err == nil:
		return "", fmt.Errorf("%w: %q is %s", ErrExists, t.shown, kindOf(fileMode(&st)))
	case errors.Is(err, unix.ENOENT):
		return t.shown, nil
	default:
		return "", mapErrno(t.shown, err)
	}
}

// Move renames the file at src to dst if src is still exactly the file
// described by want (checked as in Remove; failures match ErrChanged).
// dst must not exist: renameat2(RENAME_NOREPLACE) makes that atomic, so an
// existing destination is never overwritten (ErrExists). src and dst may lie
// under different roots only on the same file system (else ErrCrossDevice).
// Errors about dst (ErrNotFound for a missing directory, ErrSymlink,
// ErrOutsideRoots) are not wrapped in ErrChanged. The remaining race is the
// one described at Remove: in the window between the last check and the
// rename, a different entry renamed over src's name would be moved instead,
// within the roots, and a symlink would be moved as a symlink, unfollowed.
// Move then checks the inode now at dst: if it is not the approved file it
// moves that entry back (ErrChanged), or reports ErrRaceLost if it cannot.
func (f *FS) Move(src, dst string, want Info) error {
	if err := f.begin(); err != nil {
		return err
	}
	defer f.end()
	ts, err := f.resolve(src)
	defer ts.close()
	if err != nil {
		return changed(err)
	}
	if ts.parent < 0 {
		return fmt.Errorf("%w: %q is a root directory", ErrNotRegular, ts.shown)
	}
	td, err := f.resolve(dst)
	defer td.close()
	if err != nil {
		return err
	}
	if td.parent < 0 {
		return fmt.Errorf("%w: %q is a root directory", ErrExists, td.shown)
	}
	var dst0 unix.Stat_t
	switch err := fstatat(td.parent, td.name, &dst0); {
	case err == nil:
		return fmt.Errorf("%w: %q is %s", ErrExists, td.shown, kindOf(fileMode(&dst0)))
	case !errors.Is(err, unix.ENOENT):
		return mapErrno(td.shown, err)
	}
	var sp, dp unix.Stat_t
	if err := fstatFD(ts.parent, &sp); err != nil {
		return fmt.Errorf("safefs: stat parent of %q: %w", ts.shown, err)
	}
	if err := fstatFD(td.parent, &dp); err != nil {
		return fmt.Errorf("safefs: stat parent of %q: %w", td.shown, err)
	}
	if sp.Dev != dp.Dev {
		return fmt.Errorf("%w: %q and %q", ErrCrossDevice, ts.shown, td.shown)
	}
	fd, st, err := verify(&ts, want)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := lastLook(&ts, fd, &st); err != nil {
		return err
	}
	if testHookBeforeRename != nil {
		testHookBeforeRename(ts.shown)
	}
	err = unix.Renameat2(ts.parent, ts.name, td.parent, td.name, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		// Check what arrived: if a different entry was renamed over src's
		// name in the window, it is now at dst and ours is not.
		var got unix.Stat_t
		if err := fstatat(td.parent, td.name, &got); err != nil {
			return fmt.Errorf("safefs: stat %q after rename: %w", td.shown, err)
		}
		if got.Dev != st.Dev || got.Ino != st.Ino {
			if rerr := unix.Renameat2(td.parent, td.name, ts.parent, ts.name, unix.RENAME_NOREPLACE); rerr != nil {
				return fmt.Errorf("%w: a different entry was swapped in at %q during the move and is now at %q (moving it back failed: %v)", ErrRaceLost, ts.shown, td.shown, rerr)
			}
			return fmt.Errorf("%w: a different entry was swapped in at %q during the move; it was moved back", ErrChanged, ts.shown)
		}
		return nil
	case errors.Is(err, unix.EEXIST):
		return fmt.Errorf("%w: %q", ErrExists, td.shown)
	case errors.Is(err, unix.EXDEV):
		return fmt.Errorf("%w: %q and %q", ErrCrossDevice, ts.shown, td.shown)
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%w: the file system of %q cannot rename without replacing: %v", ErrUnsupported, td.shown, err)
	case errors.Is(err, unix.ENOENT):
		return changed(fmt.Errorf("%w: %q vanished before the rename", ErrNotFound, ts.shown))
	}
	return fmt.Errorf("safefs: rename %q to %q: %w", ts.shown, td.shown, err)
}

func entryOf(name string, st *unix.Stat_t) Entry {
	m := fileMode(st)
	mt, _ := statTimes(st)
	return Entry{Name: name, Type: entryType(m), Mode: m, Size: st.Size, ModTime: mt}
}

// Stat describes what path names, of any type, without following a
// symlink in the last component (a symlink is reported as "symlink").
// Symlinks in earlier components are refused with ErrSymlink. The Info
// carries identity and metadata but no digest (SHA256 empty).
func (f *FS) Stat(path string) (Entry, Info, error) {
	if err := f.begin(); err != nil {
		return Entry{}, Info{}, err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return Entry{}, Info{}, err
	}
	var st unix.Stat_t
	name := t.name
	if t.parent < 0 {
		name = filepath.Base(t.r.path)
		err = fstatFD(t.r.fd, &st)
	} else {
		err = fstatat(t.parent, t.name, &st)
	}
	if err != nil {
		return Entry{}, Info{}, mapErrno(t.shown, err)
	}
	return entryOf(name, &st), statInfo(&t, &st), nil
}

// List returns the entries of the directory at path, sorted by name. The
// directory is opened beneath its root with no symlink on the way; entries
// are read from that descriptor and described with fstatat relative to it,
// never following symlinks. Entries that vanish while listing are left out.
func (f *FS) List(path string) ([]Entry, error) {
	if err := f.begin(); err != nil {
		return nil, err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return nil, err
	}
	var dfd int
	if t.parent < 0 {
		dfd, err = openBeneath(t.r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY)
	} else {
		var st unix.Stat_t
		if err := fstatat(t.parent, t.name, &st); err != nil {
			return nil, mapErrno(t.shown, err)
		}
		if m := fileMode(&st); m&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %q is itself a symbolic link", ErrSymlink, t.shown)
		} else if !m.IsDir() {
			return nil, fmt.Errorf("%w: %q is %s", ErrNotDir, t.shown, kindOf(m))
		}
		dfd, err = openBeneath(t.parent, t.name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	}
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("%w: %q", ErrNotDir, t.shown)
		}
		return nil, mapErrno(t.shown, err)
	}
	defer unix.Close(dfd)
	var names []string
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(dfd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("safefs: read directory %q: %w", t.shown, err)
		}
		if n <= 0 {
			break
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
	sort.Strings(names)
	out := make([]Entry, 0, len(names))
	for _, name := range names {
		var st unix.Stat_t
		if err := fstatat(dfd, name, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return nil, fmt.Errorf("safefs: stat %q in %q: %w", name, t.shown, err)
		}
		out = append(out, entryOf(name, &st))
	}
	return out, nil
}

// Covers reports whether the host path p lies inside any root: lexically,
// after resolving the symlinks of its longest existing ancestor, or because
// one of those resolved ancestors is a root directory by device and inode
// (which also catches bind mounts). It answers true whenever it cannot
// decide, so a caller that refuses to start on true fails closed.
func (f *FS) Covers(p string) bool {
	if f.begin() != nil {
		return true
	}
	defer f.end()
	if checkPath(p) != nil {
		return true
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return true
	}
	if _, _, err := lexicalWithin(f.forms, abs); err == nil {
		return true
	}
	cur, rest := abs, []string{}
	for {
		_, err := os.Lstat(cur)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || cur == "/" {
			return true
		}
		rest = append([]string{filepath.Base(cur)}, rest...)
		cur = filepath.Dir(cur)
	}
	real, err := filepath.EvalSymlinks(cur)
	if err != nil {
		return true
	}
	if _, _, err := lexicalWithin(f.forms, filepath.Join(append([]string{real}, rest...)...)); err == nil {
		return true
	}
	for d := real; ; d = filepath.Dir(d) {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return true
		}
		for _, r := range f.roots {
			if r.dev == uint64(st.Dev) && r.ino == st.Ino {
				return true
			}
		}
		if d == "/" {
			return false
		}
	}
}
