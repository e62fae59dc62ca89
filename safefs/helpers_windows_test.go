package safefs

import (
	"errors"
	"net"
	"testing"
)

// Windows has no FIFOs in the file system (named pipes live in their own
// namespace, \\.\pipe\, which the name traps refuse).
func mustFIFO(t *testing.T, p string) {
	t.Helper()
	t.Skip("no FIFOs in a Windows file system")
}

// An AF_UNIX socket on Windows is a file with a reparse point
// (IO_REPARSE_TAG_AF_UNIX): safefs refuses it as a reparse point.
func mustSocket(t *testing.T, p string) {
	t.Helper()
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatalf("unix socket: %v", err)
	}
	t.Cleanup(func() { l.Close() })
}

// rootPathAlias: the \\?\ spelling of a path under the root reaches the
// same file with Win32 parsing switched off; it is refused as a name trap.
func rootPathAlias(p string) (string, error) { return `\\?\` + p, ErrInvalidPath }

var errNoExchange = errors.New("no atomic exchange of two names on Windows")

// exchange: Windows has no atomic swap of two names; the swapper falls
// back to its rename dance.
func exchange(a, b string) error { return errNoExchange }
