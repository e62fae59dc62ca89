package safefs

import "golang.org/x/sys/unix"

// noFollowAny: open(2) on macOS 11+ refuses a symlink in ANY component
// with O_NOFOLLOW_ANY (ELOOP). Each openat names one component already;
// the flag is a second lock on the same door.
const noFollowAny = unix.O_NOFOLLOW_ANY

// renameNoReplace is renameatx_np(RENAME_EXCL): atomic, fails with EEXIST
// when the destination exists (rename(2) manual page, macOS 10.12+).
// ENOTSUP from a file system without it becomes ErrUnsupported.
func (unixSys) renameNoReplace(sdir handle, sname string, ddir handle, dname string) error {
	return retry(func() error {
		return unix.RenameatxNp(int(sdir), sname, int(ddir), dname, unix.RENAME_EXCL)
	})
}

func nativeSys() sysOps { return unixSys{} }
