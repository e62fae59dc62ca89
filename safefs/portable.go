package safefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// The portable implementation: the same rules as the openat2 one
// (fs_linux.go), written once over a small per-OS system-call layer
// (sysOps): unixSys on Linux and macOS (sys_unix.go), winSys on Windows
// (sys_windows.go). It walks a path one component at a time from the
// root's open handle, never following a symlink or reparse point, checks
// identity (device and inode, or volume serial and file ID) on the open
// handle, and acts relative to the opened parent directory. On Linux it
// runs in every test run beside the openat2 implementation (TestMain), so
// its logic is tested where it cannot be run (macOS, Windows).

// handle is an open file descriptor (Unix) or HANDLE (Windows).
type handle uintptr

// fileStat is what the checks compare, from fstat(at) on Unix and
// GetFileInformationByHandle(Ex) on Windows.
type fileStat struct {
	dev, ino     uint64
	mode         fs.FileMode
	size         int64
	mtime, ctime time.Time
	nlink        uint64
}

func (a fileStat) sameFile(b fileStat) bool { return a.dev == b.dev && a.ino == b.ino }

// sameState: no write, truncate, chmod, link or utimes between two stats
// of one open file.
func (a fileStat) sameState(b fileStat) bool {
	return a.sameFile(b) && a.mode == b.mode && a.size == b.size && a.nlink == b.nlink &&
		a.mtime.Equal(b.mtime) && a.ctime.Equal(b.ctime)
}

// errKind is the portable meaning of a system error.
type errKind int

const (
	kindNone errKind = iota
	kindOther
	kindSymlink              // a symlink or reparse point was met and not followed
	kindNotExist             // no such entry
	kindNotDir               // a component is not a directory
	kindNotRegular           // a directory, FIFO or device where a file was wanted
	kindExists               // the destination exists
	kindCrossDevice          // different file systems
	kindNoReplaceUnsupported // the file system cannot rename without replacing
	kindDenied               // permission, read-only file system
)

// sysOps is the thin per-OS layer. Every name is ONE path component
// (never containing a separator, never "." or ".."), looked up relative to
// an open directory handle, and no call follows a symlink or reparse
// point, in any component.
type sysOps interface {
	openRoot(abs string) (handle, error)               // a directory, last component not a link
	openDir(dir handle, name string) (handle, error)   // a directory, not a link
	openFile(dir handle, name string) (handle, error)  // read (and, on Windows, delete/rename) access, not a link, non-blocking
	statAt(dir handle, name string) (fileStat, error)  // the entry itself, not what it points to
	fstat(h handle) (fileStat, error)                  // the open file
	readAt(h handle, p []byte, off int64) (int, error) // pread
	readNames(dir handle) ([]string, error)            // entry names, without . and ..
	renameNoReplace(sdir handle, sname string, ddir handle, dname string) error
	unlink(dir handle, name string) error // a non-directory entry of dir
	close(h handle) error
	kind(err error) errKind
}

// handleOps is what Windows adds: delete and rename the open file itself
// (the handle that was verified), not a name. Where the layer has it,
// Remove and Move have no window at all between check and act.
type handleOps interface {
	deleteHandle(f handle) error
	renameHandle(f handle, ddir handle, dname string) error
}

type proot struct {
	path string
	h    handle
	id   fileStat
	info os.FileInfo // os.Stat of the root at New, for Covers (os.SameFile)
}

// portable is the implementation over sysOps.
type portable struct {
	sys     sysOps
	mu      sync.RWMutex
	closed  bool
	roots   []proot
	forms   []string
	formIdx []int
}

func newPortable(sys sysOps, roots ...string) (*portable, error) {
	if len(roots) == 0 {
		return nil, errors.New("safefs: at least one root directory is required")
	}
	f := &portable{sys: sys}
	fail := func(err error) (*portable, error) {
		f.closeHandles()
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
		if err := rootTrap(abs); err != nil {
			return fail(fmt.Errorf("safefs: root %q: %w", r, err))
		}
		lst, err := os.Lstat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fail(fmt.Errorf("safefs: root %q does not exist", abs))
		case err != nil:
			return fail(fmt.Errorf("safefs: root %q: %w", abs, err))
		case lst.Mode()&fs.ModeSymlink != 0 || lst.Mode()&fs.ModeIrregular != 0 && !lst.IsDir():
			return fail(fmt.Errorf("safefs: root %q is a symbolic link or junction; give the directory it points to", abs))
		case !lst.IsDir():
			return fail(fmt.Errorf("safefs: root %q is not a directory", abs))
		}
		h, err := sys.openRoot(abs)
		if err != nil {
			return fail(fmt.Errorf("safefs: open root %q: %w", abs, err))
		}
		st, err := sys.fstat(h)
		if err != nil {
			sys.close(h)
			return fail(fmt.Errorf("safefs: stat root %q: %w", abs, err))
		}
		if !st.mode.IsDir() {
			sys.close(h)
			return fail(fmt.Errorf("safefs: root %q was replaced while it was opened", abs))
		}
		for _, o := range f.roots {
			if o.id.sameFile(st) {
				sys.close(h)
				return fail(fmt.Errorf("safefs: root %q is the same directory as root %q", abs, o.path))
			}
		}
		f.roots = append(f.roots, proot{path: abs, h: h, id: st, info: lst})
		rp, err := filepath.EvalSymlinks(abs)
		if err != nil {
			return fail(fmt.Errorf("safefs: root %q: %w", abs, err))
		}
		real = append(real, rp)
	}
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

func (f *portable) closeHandles() error {
	var errs []error
	for _, r := range f.roots {
		if err := f.sys.close(r.h); err != nil {
			errs = append(errs, fmt.Errorf("safefs: close root %q: %w", r.path, err))
		}
	}
	f.roots = nil
	return errors.Join(errs...)
}

// Close releases the root handles after operations in flight finish.
func (f *portable) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	return f.closeHandles()
}

// Roots returns the configured roots, cleaned and absolute, in order.
func (f *portable) Roots() []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]string, len(f.roots))
	for i, r := range f.roots {
		out[i] = r.path
	}
	return out
}

func (f *portable) begin() error {
	f.mu.RLock()
	if f.closed {
		f.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

func (f *portable) end() { f.mu.RUnlock() }

// mapErr turns a system error into the package's sentinels, keeping the
// system error matchable.
func (f *portable) mapErr(shown string, err error) error {
	switch f.sys.kind(err) {
	case kindSymlink:
		return fmt.Errorf("%w: %q: %w", ErrSymlink, shown, err)
	case kindNotExist:
		return fmt.Errorf("%w: %q", ErrNotFound, shown)
	case kindNotDir:
		return fmt.Errorf("%w: %q (a parent is not a directory)", ErrNotFound, shown)
	case kindNotRegular:
		return fmt.Errorf("%w: %q", ErrNotRegular, shown)
	case kindCrossDevice:
		return fmt.Errorf("%w: %q", ErrCrossDevice, shown)
	}
	return fmt.Errorf("safefs: %q: %w", shown, err)
}

// ptarget is a path resolved to an open parent directory and a final name.
type ptarget struct {
	f      *portable
	r      *proot
	rel    string
	shown  string
	parent handle // open directory, or noParent for a root itself
	has    bool
	name   string
}

func (t *ptarget) close() {
	if t.has {
		t.f.sys.close(t.parent)
		t.has = false
	}
}

// resolve checks p lexically and, unless p names a root itself, walks to
// its parent one component at a time from the root handle: each step
// opens exactly one name relative to the previous directory handle with
// no following, so a symlink, junction or other reparse point in ANY
// component is refused (ErrSymlink), even one that points back inside.
func (f *portable) resolve(p string) (ptarget, error) {
	i, rel, err := lexicalResolve(f.forms, p)
	if err != nil {
		return ptarget{}, err
	}
	r := &f.roots[f.formIdx[i]]
	t := ptarget{f: f, r: r, rel: rel, shown: joinRoot(r.path, rel)}
	if rel == "." {
		return t, nil
	}
	parts := strings.Split(rel, string(filepath.Separator))
	t.name = parts[len(parts)-1]
	cur, owned := r.h, false
	for _, c := range parts[:len(parts)-1] {
		next, err := f.sys.openDir(cur, c)
		if err != nil {
			// ENOTDIR may hide a symlink on systems that check O_DIRECTORY
			// first: look at the entry to name the cause.
			if k := f.sys.kind(err); k == kindNotDir || k == kindOther {
				if st, serr := f.sys.statAt(cur, c); serr == nil && st.mode&fs.ModeSymlink != 0 {
					err = fmt.Errorf("%w: %q is a symbolic link or reparse point", ErrSymlink, c)
				}
			}
			if owned {
				f.sys.close(cur)
			}
			if errors.Is(err, ErrSymlink) {
				return t, fmt.Errorf("%w (in %q)", err, t.shown)
			}
			return t, f.mapErr(t.shown, err)
		}
		if owned {
			f.sys.close(cur)
		}
		cur, owned = next, true
	}
	if !owned {
		// The parent is the root itself: open it again so that the target
		// owns its handle like any other.
		next, err := f.sys.openDir(r.h, ".")
		if err != nil {
			return t, f.mapErr(t.shown, err)
		}
		cur = next
	}
	t.parent, t.has = cur, true
	return t, nil
}

// handleReader reads an open handle at offsets.
type handleReader struct {
	sys sysOps
	h   handle
}

func (r handleReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.sys.readAt(r.h, p, off)
	if err != nil {
		return 0, err
	}
	if n == 0 && len(p) > 0 {
		return 0, errShort
	}
	return n, nil
}

func (t *ptarget) info(st fileStat) Info {
	return Info{
		Root: t.r.path, Path: t.shown, Rel: filepath.ToSlash(t.rel),
		Dev: st.dev, Ino: st.ino, Mode: st.mode, Size: st.size,
		ModTime: st.mtime, ChangeTime: st.ctime, Nlink: st.nlink,
	}
}

// openRegular: look without following, refuse what is not a regular
// file, open it without following, and check that the handle is the
// entry the lookup saw.
func (t *ptarget) openRegular() (handle, fileStat, error) {
	s := t.f.sys
	st, err := s.statAt(t.parent, t.name)
	if err != nil {
		return 0, st, t.f.mapErr(t.shown, err)
	}
	if st.mode&fs.ModeSymlink != 0 {
		return 0, st, fmt.Errorf("%w: %q is itself a symbolic link or reparse point", ErrSymlink, t.shown)
	}
	if !st.mode.IsRegular() {
		return 0, st, fmt.Errorf("%w: %q is %s", ErrNotRegular, t.shown, kindOf(st.mode))
	}
	h, err := s.openFile(t.parent, t.name)
	if err != nil {
		switch s.kind(err) {
		case kindSymlink, kindNotExist, kindNotRegular, kindNotDir:
			return 0, st, fmt.Errorf("%w: %w", ErrChanged, t.f.mapErr(t.shown, err))
		}
		return 0, st, t.f.mapErr(t.shown, err)
	}
	fst, err := s.fstat(h)
	if err != nil {
		s.close(h)
		return 0, st, fmt.Errorf("safefs: stat %q: %w", t.shown, err)
	}
	if !fst.sameFile(st) || !fst.mode.IsRegular() {
		s.close(h)
		return 0, st, fmt.Errorf("%w: %q was replaced while it was opened", ErrChanged, t.shown)
	}
	return h, fst, nil
}

// inspectOpen hashes the open file, then stats it again so that a write
// during the read is caught.
func (t *ptarget) inspectOpen(h handle, st fileStat) (Info, error) {
	sum, scheme, n, err := hashContent(handleReader{t.f.sys, h}, st.size)
	if err != nil {
		return Info{}, fmt.Errorf("safefs: read %q: %w", t.shown, err)
	}
	after, err := t.f.sys.fstat(h)
	if err != nil {
		return Info{}, fmt.Errorf("safefs: stat %q: %w", t.shown, err)
	}
	if !st.sameState(after) {
		return Info{}, fmt.Errorf("%w: %q was modified while it was read", ErrChanged, t.shown)
	}
	info := t.info(st)
	info.SHA256, info.HashScheme, info.HashedBytes = sum, scheme, n
	return info, nil
}

// Inspect resolves path to an existing regular file inside a root and
// returns its identity, state and digest, all from one open handle.
func (f *portable) Inspect(path string) (Info, error) {
	if err := f.begin(); err != nil {
		return Info{}, err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return Info{}, err
	}
	if !t.has {
		return Info{}, fmt.Errorf("%w: %q is a root directory", ErrNotRegular, t.shown)
	}
	h, st, err := t.openRegular()
	if err != nil {
		return Info{}, err
	}
	defer f.sys.close(h)
	return t.inspectOpen(h, st)
}

// verify redoes Inspect and compares with want; on success the handle is
// open on the verified file.
func (t *ptarget) verify(want Info) (handle, fileStat, error) {
	if !t.has {
		return 0, fileStat{}, fmt.Errorf("%w: %q is a root directory", ErrNotRegular, t.shown)
	}
	h, st, err := t.openRegular()
	if err != nil {
		return 0, st, changed(err)
	}
	got, err := t.inspectOpen(h, st)
	if err == nil {
		if d := got.Diff(want); d != nil {
			err = fmt.Errorf("%w: %q differs in %v", ErrChanged, t.shown, d)
		}
	}
	if err != nil {
		t.f.sys.close(h)
		return 0, st, changed(err)
	}
	return h, st, nil
}

// lastLook: the open handle shows no change since it was hashed, and the
// name in the verified parent still refers to that file.
func (t *ptarget) lastLook(h handle, st fileStat) error {
	now, err := t.f.sys.fstat(h)
	if err != nil {
		return fmt.Errorf("safefs: stat %q: %w", t.shown, err)
	}
	if !st.sameState(now) {
		return fmt.Errorf("%w: %q was modified during the check", ErrChanged, t.shown)
	}
	ent, err := t.f.sys.statAt(t.parent, t.name)
	if err != nil {
		return changed(t.f.mapErr(t.shown, err))
	}
	if !ent.sameFile(st) {
		return fmt.Errorf("%w: %q now names another file", ErrChanged, t.shown)
	}
	return nil
}

// Remove deletes the file at path if, and only if, it is still exactly
// the file described by want; see FS.Remove.
func (f *portable) Remove(path string, want Info) error {
	if err := f.begin(); err != nil {
		return err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return changed(err)
	}
	h, st, err := t.verify(want)
	if err != nil {
		return err
	}
	defer f.sys.close(h)
	if err := t.lastLook(h, st); err != nil {
		return err
	}
	if testHookBeforeRename != nil {
		testHookBeforeRename(t.shown)
	}
	if ho, ok := f.sys.(handleOps); ok {
		// The verified handle itself is deleted: no name is looked up
		// again, so nothing swapped in under the name can be hit.
		if err := ho.deleteHandle(h); err != nil {
			if f.sys.kind(err) == kindDenied {
				return fmt.Errorf("safefs: remove %q: %w", t.shown, err)
			}
			return changed(fmt.Errorf("safefs: remove %q: %w", t.shown, f.mapErr(t.shown, err)))
		}
		return nil
	}
	tmp, err := tempName("remove")
	if err != nil {
		return err
	}
	if err := f.sys.renameNoReplace(t.parent, t.name, t.parent, tmp); err != nil {
		switch f.sys.kind(err) {
		case kindNoReplaceUnsupported:
			return fmt.Errorf("%w: the file system of %q cannot rename without replacing: %v", ErrUnsupported, t.shown, err)
		case kindDenied:
			return fmt.Errorf("safefs: remove %q: %w", t.shown, err)
		}
		return changed(fmt.Errorf("safefs: rename %q aside: %w", t.shown, f.mapErr(t.shown, err)))
	}
	tmpShown := filepath.Join(filepath.Dir(t.shown), tmp)
	if ent, err := f.sys.statAt(t.parent, tmp); err != nil || !ent.sameFile(st) {
		if rerr := f.sys.renameNoReplace(t.parent, tmp, t.parent, t.name); rerr != nil {
			return fmt.Errorf("%w: a different entry was swapped in at %q during the removal and could not be put back (%v); it is now %q; nothing was deleted", ErrRaceLost, t.shown, rerr, tmpShown)
		}
		return fmt.Errorf("%w: a different entry was swapped in at %q during the removal and was put back; nothing was deleted", ErrChanged, t.shown)
	}
	if testHookBeforeUnlink != nil {
		testHookBeforeUnlink(tmpShown)
	}
	if err := f.sys.unlink(t.parent, tmp); err != nil {
		if rerr := f.sys.renameNoReplace(t.parent, tmp, t.parent, t.name); rerr != nil {
			return fmt.Errorf("safefs: unlink %q: %v; and the file could not be renamed back (%v): it is now %q", tmpShown, err, rerr, tmpShown)
		}
		return changed(fmt.Errorf("safefs: unlink %q: %w", t.shown, f.mapErr(t.shown, err)))
	}
	after, err := f.sys.fstat(h)
	if err != nil {
		return fmt.Errorf("safefs: stat %q after unlink: %w", t.shown, err)
	}
	if after.nlink != st.nlink-1 {
		return fmt.Errorf("%w: %q was unlinked, but the approved file still has %d links", ErrRaceLost, tmpShown, after.nlink)
	}
	return nil
}

// CheckDestination: see FS.CheckDestination.
func (f *portable) CheckDestination(path string) (string, error) {
	if err := f.begin(); err != nil {
		return "", err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return "", err
	}
	if !t.has {
		return "", fmt.Errorf("%w: %q is a root directory", ErrExists, t.shown)
	}
	st, err := f.sys.statAt(t.parent, t.name)
	switch {
	case err == nil:
		return "", fmt.Errorf("%w: %q is %s", ErrExists, t.shown, kindOf(st.mode))
	case f.sys.kind(err) == kindNotExist:
		return t.shown, nil
	}
	return "", f.mapErr(t.shown, err)
}

// Move renames src to dst if src is still exactly want and dst does not
// exist; see FS.Move.
func (f *portable) Move(src, dst string, want Info) error {
	if err := f.begin(); err != nil {
		return err
	}
	defer f.end()
	ts, err := f.resolve(src)
	defer ts.close()
	if err != nil {
		return changed(err)
	}
	if !ts.has {
		return fmt.Errorf("%w: %q is a root directory", ErrNotRegular, ts.shown)
	}
	td, err := f.resolve(dst)
	defer td.close()
	if err != nil {
		return err
	}
	if !td.has {
		return fmt.Errorf("%w: %q is a root directory", ErrExists, td.shown)
	}
	switch st, err := f.sys.statAt(td.parent, td.name); {
	case err == nil:
		return fmt.Errorf("%w: %q is %s", ErrExists, td.shown, kindOf(st.mode))
	case f.sys.kind(err) != kindNotExist:
		return f.mapErr(td.shown, err)
	}
	sp, err := f.sys.fstat(ts.parent)
	if err != nil {
		return fmt.Errorf("safefs: stat parent of %q: %w", ts.shown, err)
	}
	dp, err := f.sys.fstat(td.parent)
	if err != nil {
		return fmt.Errorf("safefs: stat parent of %q: %w", td.shown, err)
	}
	if sp.dev != dp.dev {
		return fmt.Errorf("%w: %q and %q", ErrCrossDevice, ts.shown, td.shown)
	}
	h, st, err := ts.verify(want)
	if err != nil {
		return err
	}
	defer f.sys.close(h)
	if err := ts.lastLook(h, st); err != nil {
		return err
	}
	if testHookBeforeRename != nil {
		testHookBeforeRename(ts.shown)
	}
	var rerr error
	ho, byHandle := f.sys.(handleOps)
	if byHandle {
		rerr = ho.renameHandle(h, td.parent, td.name)
	} else {
		rerr = f.sys.renameNoReplace(ts.parent, ts.name, td.parent, td.name)
	}
	switch f.sys.kind(rerr) {
	case kindNone:
		got, err := f.sys.statAt(td.parent, td.name)
		if err != nil {
			return fmt.Errorf("safefs: stat %q after rename: %w", td.shown, err)
		}
		if !got.sameFile(st) {
			if byHandle {
				return fmt.Errorf("%w: the approved file was renamed by its handle, yet %q names another file", ErrRaceLost, td.shown)
			}
			if err := f.sys.renameNoReplace(td.parent, td.name, ts.parent, ts.name); err != nil {
				return fmt.Errorf("%w: a different entry was swapped in at %q during the move and is now at %q (moving it back failed: %v)", ErrRaceLost, ts.shown, td.shown, err)
			}
			return fmt.Errorf("%w: a different entry was swapped in at %q during the move; it was moved back", ErrChanged, ts.shown)
		}
		return nil
	case kindExists:
		return fmt.Errorf("%w: %q", ErrExists, td.shown)
	case kindCrossDevice:
		return fmt.Errorf("%w: %q and %q", ErrCrossDevice, ts.shown, td.shown)
	case kindNoReplaceUnsupported:
		return fmt.Errorf("%w: the file system of %q cannot rename without replacing: %v", ErrUnsupported, td.shown, rerr)
	case kindNotExist:
		return changed(fmt.Errorf("%w: %q vanished before the rename", ErrNotFound, ts.shown))
	}
	return fmt.Errorf("safefs: rename %q to %q: %w", ts.shown, td.shown, rerr)
}

func pentry(name string, st fileStat) Entry {
	return Entry{Name: name, Type: entryType(st.mode), Mode: st.mode, Size: st.size, ModTime: st.mtime}
}

// Stat: see FS.Stat.
func (f *portable) Stat(path string) (Entry, Info, error) {
	if err := f.begin(); err != nil {
		return Entry{}, Info{}, err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return Entry{}, Info{}, err
	}
	var st fileStat
	name := t.name
	if !t.has {
		name = filepath.Base(t.r.path)
		st, err = f.sys.fstat(t.r.h)
	} else {
		st, err = f.sys.statAt(t.parent, t.name)
	}
	if err != nil {
		return Entry{}, Info{}, f.mapErr(t.shown, err)
	}
	return pentry(name, st), t.info(st), nil
}

// List: see FS.List.
func (f *portable) List(path string) ([]Entry, error) {
	if err := f.begin(); err != nil {
		return nil, err
	}
	defer f.end()
	t, err := f.resolve(path)
	defer t.close()
	if err != nil {
		return nil, err
	}
	var dh handle
	if !t.has {
		dh, err = f.sys.openDir(t.r.h, ".")
	} else {
		st, serr := f.sys.statAt(t.parent, t.name)
		if serr != nil {
			return nil, f.mapErr(t.shown, serr)
		}
		if st.mode&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%w: %q is itself a symbolic link or reparse point", ErrSymlink, t.shown)
		} else if !st.mode.IsDir() {
			return nil, fmt.Errorf("%w: %q is %s", ErrNotDir, t.shown, kindOf(st.mode))
		}
		dh, err = f.sys.openDir(t.parent, t.name)
	}
	if err != nil {
		if f.sys.kind(err) == kindNotDir {
			return nil, fmt.Errorf("%w: %q", ErrNotDir, t.shown)
		}
		return nil, f.mapErr(t.shown, err)
	}
	defer f.sys.close(dh)
	names, err := f.sys.readNames(dh)
	if err != nil {
		return nil, fmt.Errorf("safefs: read directory %q: %w", t.shown, err)
	}
	sort.Strings(names)
	out := make([]Entry, 0, len(names))
	for _, name := range names {
		st, err := f.sys.statAt(dh, name)
		if err != nil {
			if f.sys.kind(err) == kindNotExist {
				continue
			}
			return nil, fmt.Errorf("safefs: stat %q in %q: %w", name, t.shown, err)
		}
		out = append(out, pentry(name, st))
	}
	return out, nil
}

// Covers: see FS.Covers. Identity is compared with os.SameFile, so an
// alias of a root by case, Unicode form, 8.3 name, bind mount or link is
// caught on every platform.
func (f *portable) Covers(p string) bool {
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
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(cur) == cur {
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
		fi, err := os.Stat(d)
		if err != nil {
			return true
		}
		for _, r := range f.roots {
			if os.SameFile(fi, r.info) {
				return true
			}
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}
