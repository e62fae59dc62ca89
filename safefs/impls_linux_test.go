package safefs

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// fsAPI is what the conformance and attack tests drive: the openat2 FS
// and the portable implementation (the code macOS and Windows run) both
// satisfy it.
type fsAPI interface {
	Close() error
	Roots() []string
	Inspect(string) (Info, error)
	Remove(string, Info) error
	Move(string, string, Info) error
	CheckDestination(string) (string, error)
	Stat(string) (Entry, Info, error)
	List(string) ([]Entry, error)
	Covers(string) bool
}

// implName is the implementation under test: "openat2" (New on Linux) or
// "portable" (newPortable over unixSys, the per-component walk that macOS
// runs over the same calls and Windows over its own).
var implName = "openat2"

// newFS opens roots with the implementation under test. On error it
// returns a nil interface, never a typed nil.
func newFS(roots ...string) (fsAPI, error) {
	if implName == "portable" {
		p, err := newPortable(unixSys{}, roots...)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	f, err := New(roots...)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// TestMain runs every test twice: against the openat2 implementation, then
// against the portable one, so that the logic macOS and Windows rely on
// meets the same attacks in every run.
func TestMain(m *testing.M) {
	code := m.Run()
	implName = "portable"
	fmt.Println("=== safefs: again, against the portable implementation (per-component openat, the macOS and Windows logic)")
	if c := m.Run(); c != 0 {
		code = c
	}
	os.Exit(code)
}

// onlyOpenat2 skips a test of the openat2 implementation's own internals.
func onlyOpenat2(t *testing.T) {
	t.Helper()
	if implName != "openat2" {
		t.Skip("drives internals of the openat2 implementation; its portable counterpart is a separate test")
	}
}

// lastLookAt resolves and verifies path against want as Remove does, and
// returns the final check each implementation makes right before acting,
// so a test can change the file system between the two.
func lastLookAt(t *testing.T, f fsAPI, path string, want Info) func() error {
	t.Helper()
	switch f := f.(type) {
	case *FS:
		tg, err := f.resolve(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.close)
		fd, st, err := verify(&tg, want)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return func() error { return lastLook(&tg, fd, &st) }
	case *portable:
		tg, err := f.resolve(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.close)
		h, st, err := tg.verify(want)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.sys.close(h) })
		return func() error { return tg.lastLook(h, st) }
	}
	t.Fatalf("unknown implementation %T", f)
	return nil
}
