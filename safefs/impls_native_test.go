//go:build darwin || windows

package safefs

import "testing"

// On macOS and Windows, New is the portable implementation.
var implName = "portable"

func newFS(roots ...string) (fsAPI, error) {
	f, err := New(roots...)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func onlyOpenat2(t *testing.T) {
	t.Helper()
	t.Skip("drives internals of the Linux openat2 implementation")
}

func lastLookKernel(t *testing.T, fsys fsAPI, path string, want Info) func() error {
	t.Helper()
	f, ok := fsys.(*FS)
	if !ok {
		t.Fatalf("unknown implementation %T", fsys)
	}
	return lastLookAt(t, f.portable, path, want)
}
