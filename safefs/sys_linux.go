package safefs

import "golang.org/x/sys/unix"

// noFollowAny is 0 on Linux: every openat names one component with
// O_NOFOLLOW, which is all O_NOFOLLOW_ANY would add.
const noFollowAny = 0

// renameNoReplace is renameat2(RENAME_NOREPLACE): atomic, never replaces.
func (unixSys) renameNoReplace(sdir handle, sname string, ddir handle, dname string) error {
	return retry(func() error {
		return unix.Renameat2(int(sdir), sname, int(ddir), dname, unix.RENAME_NOREPLACE)
	})
}
