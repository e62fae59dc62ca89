package journal

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive, non-blocking LockFileEx lock, so that a
// second process (or a second Open in this one) refuses a journal in use,
// as flock does on Unix. Windows byte-range locks are mandatory: a lock on
// the journal's bytes would stop readers (mcpsafe journal verify, show)
// from reading them. So the lock covers one byte far beyond any real end
// of file (offset 2^63-2), which only lockers contend for. The lock goes
// with the handle: closing the file releases it, as with flock.
func lockFile(f *os.File) (func() error, error) {
	h := windows.Handle(f.Fd())
	ol := func() *windows.Overlapped {
		return &windows.Overlapped{Offset: 0xFFFFFFFE, OffsetHigh: 0x7FFFFFFF}
	}
	if err := windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol()); err != nil {
		return nil, err
	}
	return func() error { return windows.UnlockFileEx(h, 0, 1, 0, ol()) }, nil
}
