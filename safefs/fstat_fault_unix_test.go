//go:build linux || darwin

package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// failFstatAt makes the n-th fstat from now fail with EIO, and counts calls.
func failFstatAt(t *testing.T, n int) *int {
	t.Helper()
	calls := 0
	orig := fstatFD
	fstatFD = func(fd int, st *unix.Stat_t) error {
		calls++
		if calls == n {
			return unix.EIO
		}
		return orig(fd, st)
	}
	t.Cleanup(func() { fstatFD = orig })
	return &calls
}

// Every fstat the operations make can fail; each failure must refuse with
// the cause, and must not remove or move anything it has not already
// reported. The control (no failure) succeeds.
func TestFstatFailureRefuses(t *testing.T) {
	type op struct {
		name string
		run  func(t *testing.T, root string) error
		// intact reports whether the files are as they were before.
		intact func(root string) bool
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	setup := func(t *testing.T) string {
		root := t.TempDir()
		for _, n := range []string{"a.txt", "b/.keep"} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(root, n)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, n), []byte("data "+n), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	ops := []op{
		{"New", func(t *testing.T, root string) error {
			f, err := newFS(root)
			if err == nil {
				f.Close()
			}
			return err
		}, func(root string) bool { return exists(filepath.Join(root, "a.txt")) }},
		{"Inspect", func(t *testing.T, root string) error {
			f := mustNew(t, root)
			_, err := f.Inspect("a.txt")
			return err
		}, func(root string) bool { return exists(filepath.Join(root, "a.txt")) }},
		{"Stat", func(t *testing.T, root string) error {
			f := mustNew(t, root)
			_, _, err := f.Stat(".")
			return err
		}, func(root string) bool { return exists(filepath.Join(root, "a.txt")) }},
		{"Remove", func(t *testing.T, root string) error {
			f := mustNew(t, root)
			orig := fstatFD
			fstatFD = unix.Fstat // Inspect itself succeeds
			info, err := f.Inspect("a.txt")
			fstatFD = orig
			if err != nil {
				t.Fatal(err)
			}
			return f.Remove("a.txt", info)
		}, func(root string) bool { return exists(filepath.Join(root, "a.txt")) }},
		{"Move", func(t *testing.T, root string) error {
			f := mustNew(t, root)
			orig := fstatFD
			fstatFD = unix.Fstat
			info, err := f.Inspect("a.txt")
			fstatFD = orig
			if err != nil {
				t.Fatal(err)
			}
			return f.Move("a.txt", "b/a.txt", info)
		}, func(root string) bool {
			return exists(filepath.Join(root, "a.txt")) && !exists(filepath.Join(root, "b/a.txt"))
		}},
	}
	for _, o := range ops {
		t.Run(o.name, func(t *testing.T) {
			failed := 0
			for n := 1; ; n++ {
				root := setup(t)
				calls := failFstatAt(t, n)
				err := o.run(t, root)
				if *calls < n {
					// The failure was never reached: this is the control.
					if err != nil {
						t.Fatalf("control (%d fstat calls, none failed): %v", *calls, err)
					}
					break
				}
				failed++
				if !errors.Is(err, unix.EIO) {
					t.Fatalf("fstat #%d failed, but the operation returned %v", n, err)
				}
				// Only the check after the unlink runs once the name is
				// already gone: it reports the failure instead of success.
				if !o.intact(root) && !(o.name == "Remove" && strings.Contains(err.Error(), "after unlink")) {
					t.Fatalf("fstat #%d failed (%v), but the files changed", n, err)
				}
				fstatFD = unix.Fstat
			}
			if failed == 0 {
				t.Fatalf("%s makes no fstat call to fail", o.name)
			}
		})
	}
}

func mustNew(t *testing.T, root string) fsAPI {
	t.Helper()
	orig := fstatFD
	fstatFD = unix.Fstat
	f, err := newFS(root)
	fstatFD = orig
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
