//go:build !unix

package witness

import "os"

// lockDir is a no-op where flock is unavailable: one witness per
// directory is then the operator's duty.
func lockDir(*os.File) error { return nil }
