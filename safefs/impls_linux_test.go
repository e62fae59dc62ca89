package safefs

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

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

// lastLookKernel is lastLookAt for the openat2 FS.
func lastLookKernel(t *testing.T, fsys fsAPI, path string, want Info) func() error {
	t.Helper()
	f, ok := fsys.(*FS)
	if !ok {
		t.Fatalf("unknown implementation %T", fsys)
	}
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
}
