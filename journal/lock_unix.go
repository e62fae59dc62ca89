//go:build unix

package journal

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive, non-blocking flock: two processes appending
// to one journal would fork its chain.
func lockFile(f *os.File) (func() error, error) {
	fd := int(f.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil, err
	}
	return func() error { return syscall.Flock(fd, syscall.LOCK_UN) }, nil
}
