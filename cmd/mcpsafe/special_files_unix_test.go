//go:build unix

package main

import (
	"syscall"
	"testing"
)

// mustFIFOAndNullDevice makes a FIFO and a character device (/dev/null's
// numbers) for the refusal tests.
func mustFIFOAndNullDevice(t *testing.T, fifo, dev string) {
	t.Helper()
	must(t, syscall.Mkfifo(fifo, 0o644))
	must(t, syscall.Mknod(dev, syscall.S_IFCHR|0o666, int(1<<8|3)))
}
