package files

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsafe/mcpsafe/safefs"
)

// With no root to place a relative link against (the FS closed), the
// message classifier assumes the worst: the link leads out.
func TestLeadsOutWithoutRoots(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(root, "in")); err != nil {
		t.Fatal(err)
	}
	fsys, err := safefs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	tl := &tools{fs: fsys}
	if tl.leadsOut("in") {
		t.Fatal("control: a link to a sibling inside the root classified as leading out")
	}
	fsys.Close()
	if !tl.leadsOut("in") {
		t.Fatal("with no roots left, a relative link must count as leading out")
	}
}
