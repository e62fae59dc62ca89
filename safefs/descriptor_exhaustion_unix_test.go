//go:build linux || darwin

package safefs

// Descriptor exhaustion is a real failure a busy server meets. The soft
// RLIMIT_NOFILE is lowered so that exactly the next k descriptors can be
// opened; every operation must then fail with the OS cause and leave no
// descriptor behind. Not parallel: the limit is process-wide.

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// lowestFreeFD is the number the next open returns.
func lowestFreeFD(t *testing.T) uint64 {
	t.Helper()
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	return uint64(fd)
}

// withFDs runs fn with room for exactly k more descriptors.
func withFDs(t *testing.T, k uint64, fn func()) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lim := unix.Rlimit{Cur: lowestFreeFD(t) + k, Max: old.Max}
	needEnv(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim), "lowering RLIMIT_NOFILE")
	defer func() {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &old); err != nil {
			t.Fatalf("restoring RLIMIT_NOFILE: %v", err)
		}
	}()
	fn()
}

func TestDescriptorExhaustion(t *testing.T) {
	tr := newTree(t)
	mustMkdir(t, tr.p("d"))
	before := lowestFreeFD(t)

	// New: no descriptor for the root at all.
	var err error
	withFDs(t, 0, func() { _, err = newFS(tr.root) })
	if !errors.Is(err, unix.EMFILE) || !strings.Contains(err.Error(), "open root") {
		t.Errorf("New with no descriptor left: %v", err)
	}
	// New: the root opens, the openat2 probe does not. The root's
	// descriptor must be closed again. (The portable implementation has
	// no probe; it needs one descriptor per root.)
	if implName == "openat2" {
		withFDs(t, 1, func() { _, err = newFS(tr.root) })
		if err == nil || !strings.Contains(err.Error(), "too many open files") {
			t.Errorf("New with one descriptor left: %v", err)
		}
	}
	// New with two roots: the first opens, the second does not; the
	// first must be closed again.
	withFDs(t, 1, func() { _, err = newFS(tr.root, tr.outside) })
	if err == nil || !strings.Contains(err.Error(), "too many open files") {
		t.Errorf("New of two roots with one descriptor left: %v", err)
	}
	// A walk that runs out half way (the parent opens, nothing else):
	// every descriptor it opened is closed.
	mustMkdir(t, tr.p("d/e"))
	mustWrite(t, tr.p("d/e/f.txt"), "x")
	for k := uint64(0); k < 2; k++ {
		withFDs(t, k, func() { _, err = tr.fs.Inspect(tr.p("d/e/f.txt")) })
		if !errors.Is(err, unix.EMFILE) {
			t.Errorf("Inspect with %d descriptors left: %v", k, err)
		}
	}
	// List of the root and of a subdirectory.
	for _, dir := range []string{tr.root, tr.p("d")} {
		withFDs(t, 0, func() { _, err = tr.fs.List(dir) })
		if !errors.Is(err, unix.EMFILE) {
			t.Errorf("List(%s) with no descriptor left: %v", dir, err)
		}
	}
	if got := lowestFreeFD(t); got != before {
		t.Fatalf("descriptor leak: lowest free fd %d, was %d", got, before)
	}
	// Control: with the limit restored everything works.
	f, err := newFS(tr.root)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := tr.fs.List(tr.root); err != nil {
		t.Fatal(err)
	}
}
