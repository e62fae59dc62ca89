//go:build linux || darwin

package safefs

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fstatFD is unix.Fstat. It is a variable so that tests can make it fail
// on a valid descriptor, which the kernel never does on its own, to check
// that every such failure refuses instead of acting. Both implementations
// on Linux go through it.
var fstatFD = unix.Fstat

// unixMode converts st_mode to an fs.FileMode.
func unixMode(mode uint32) fs.FileMode {
	m := fs.FileMode(mode & 0o777)
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFREG:
	default:
		m |= fs.ModeIrregular
	}
	if mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// unixSys is the system-call layer of the portable implementation on Linux
// and macOS: one path component per openat, always O_NOFOLLOW (plus
// O_NOFOLLOW_ANY on macOS), fstatat(AT_SYMLINK_NOFOLLOW), unlinkat, and a
// rename that never replaces (renameat2 RENAME_NOREPLACE on Linux,
// renameatx_np RENAME_EXCL on macOS; see sys_linux.go, sys_darwin.go).
type unixSys struct{}

func retry(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

func (unixSys) openRoot(abs string) (handle, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	return handle(fd), err
}

func (unixSys) openDir(dir handle, name string) (handle, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(int(dir), name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|noFollowAny|unix.O_CLOEXEC, 0)
		return err
	})
	return handle(fd), err
}

func (unixSys) openFile(dir handle, name string) (handle, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = unix.Openat(int(dir), name, unix.O_RDONLY|unix.O_NOFOLLOW|noFollowAny|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	return handle(fd), err
}

func statOf(st *unix.Stat_t) fileStat {
	return fileStat{
		dev: uint64(st.Dev), ino: uint64(st.Ino), mode: unixMode(uint32(st.Mode)),
		size: st.Size, nlink: uint64(st.Nlink),
		mtime: time.Unix(st.Mtim.Unix()), ctime: time.Unix(st.Ctim.Unix()),
	}
}

func (unixSys) statAt(dir handle, name string) (fileStat, error) {
	var st unix.Stat_t
	err := retry(func() error { return unix.Fstatat(int(dir), name, &st, unix.AT_SYMLINK_NOFOLLOW) })
	return statOf(&st), err
}

func (unixSys) fstat(h handle) (fileStat, error) {
	var st unix.Stat_t
	err := retry(func() error { return fstatFD(int(h), &st) })
	return statOf(&st), err
}

func (unixSys) readAt(h handle, p []byte, off int64) (int, error) {
	var n int
	err := retry(func() (err error) {
		n, err = unix.Pread(int(h), p, off)
		return err
	})
	return n, err
}

// readNames reads the entry names of an open directory through a
// duplicate of its descriptor (os.File closes what it owns).
func (unixSys) readNames(dir handle) ([]string, error) {
	var dup int
	if err := retry(func() (err error) { dup, err = unix.Dup(int(dir)); return err }); err != nil {
		return nil, err
	}
	unix.CloseOnExec(dup)
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	names, err := f.Readdirnames(-1)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return names, err
}

func (unixSys) unlink(dir handle, name string) error {
	return retry(func() error { return unix.Unlinkat(int(dir), name, 0) })
}

func (unixSys) close(h handle) error { return unix.Close(int(h)) }

func (unixSys) kind(err error) errKind {
	switch {
	case err == nil:
		return kindNone
	case errors.Is(err, unix.ELOOP):
		return kindSymlink
	case errors.Is(err, unix.ENOENT):
		return kindNotExist
	case errors.Is(err, unix.ENOTDIR):
		return kindNotDir
	case errors.Is(err, unix.ENXIO), errors.Is(err, unix.EISDIR):
		return kindNotRegular
	case errors.Is(err, unix.EEXIST), errors.Is(err, unix.ENOTEMPTY):
		return kindExists
	case errors.Is(err, unix.EXDEV):
		return kindCrossDevice
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.ENOTSUP):
		return kindNoReplaceUnsupported
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM), errors.Is(err, unix.EROFS):
		return kindDenied
	}
	return kindOther
}
