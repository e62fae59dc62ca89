package safefs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// tree is a real directory layout used by the tests:
//
//	base/root/           the root
//	base/root-evil/      a sibling sharing the root's name prefix
//	base/outside/        files that must never be touched
type tree struct {
	base, root, evil, outside string
	secret                    string // base/outside/secret.txt
	fs                        fsAPI
}

const secretContent = "OUTSIDE SECRET: must never be read, moved or removed\n"

func newTree(t *testing.T) *tree {
	t.Helper()
	t.Logf("safefs implementation under test: %s", implName)
	base := t.TempDir()
	tr := &tree{base: base, root: filepath.Join(base, "root"), evil: filepath.Join(base, "root-evil"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{tr.root, tr.evil, tr.outside} {
		mustMkdir(t, d)
	}
	tr.secret = filepath.Join(tr.outside, "secret.txt")
	mustWrite(t, tr.secret, secretContent)
	mustWrite(t, filepath.Join(tr.evil, "file.txt"), "evil sibling\n")
	f, err := newFS(tr.root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tr.fs = f
	return tr
}

// p returns a path under the root.
func (tr *tree) p(rel string) string { return filepath.Join(tr.root, rel) }

// checkOutside asserts that the outside files are exactly as created.
func (tr *tree) checkOutside(t *testing.T) {
	t.Helper()
	mustContent(t, tr.secret, secretContent)
	mustContent(t, filepath.Join(tr.evil, "file.txt"), "evil sibling\n")
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		// Symlinks are the point of these tests: never skip.
		t.Fatalf("symlinks unavailable: %v", err)
	}
}

func mustContent(t *testing.T, p, want string) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	if !bytes.Equal(got, []byte(want)) {
		t.Fatalf("%s: content %q, want %q", p, got, want)
	}
}

func mustGone(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s should be gone, Lstat: %v", p, err)
	}
}

func mustIs(t *testing.T, err error, targets ...error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got nil error, want %v", targets)
	}
	for _, target := range targets {
		if !errors.Is(err, target) {
			t.Fatalf("error %q does not match %q", err, target)
		}
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

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

// lastLookAt resolves and verifies path against want as Remove does, and
// returns the final check each implementation makes right before acting,
// so a test can change the file system between the two.
func lastLookAt(t *testing.T, fsys fsAPI, path string, want Info) func() error {
	t.Helper()
	p, ok := fsys.(*portable)
	if !ok {
		return lastLookKernel(t, fsys, path, want)
	}
	tg, err := p.resolve(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.close)
	h, st, err := tg.verify(want)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.sys.close(h) })
	return func() error { return tg.lastLook(h, st) }
}

// needEnv skips loudly when a kernel facility the test relies on is
// missing, and fails in CI, where the environment is known.
func needEnv(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("LOUD SKIP: %s unavailable: %v", what, err)
}
