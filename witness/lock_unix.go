//go:build unix

package witness

import (
	"os"
	"syscall"
)

// lockDir takes an exclusive, non-blocking flock on f: two witnesses
// appending to one directory could each accept a different history.
func lockDir(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
