//go:build linux || darwin

package safefs

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func mustFIFO(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
}

func mustSocket(t *testing.T, p string) {
	t.Helper()
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatalf("unix socket: %v", err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { l.Close() })
}

// rootPathAlias is another spelling of p that reaches the same file on
// this system and must be refused: through /proc/self/root (Linux; on
// macOS the path simply does not exist, and is outside the roots either
// way).
func rootPathAlias(p string) (string, error) { return "/proc/self/root" + p, ErrOutsideRoots }

var errNoExchange = errors.New("no atomic exchange on this file system")

// exchange swaps two names atomically.
func exchange(a, b string) error {
	err := exchangeNames(a, b)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return errNoExchange
	}
	return err
}
