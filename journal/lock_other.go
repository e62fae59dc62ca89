//go:build !unix && !windows

package journal

import (
	"fmt"
	"os"
	"runtime"
)

// lockFile fails where neither flock nor LockFileEx exists: without a
// lock two processes could interleave one journal's chain, so no journal
// is opened at all (fail closed).
func lockFile(f *os.File) (func() error, error) {
	return nil, fmt.Errorf("no file lock on %s, so one writer per journal cannot be ensured", runtime.GOOS)
}
