//go:build !unix

package journal

import "os"

// lockFile is a no-op where flock is unavailable: one process per journal
// is then the operator's duty.
func lockFile(f *os.File) (func() error, error) {
	return func() error { return nil }, nil
}
