package files

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/safefs"
)

// Resolve is normally reached only after the gate's schema check, but it
// must still refuse arguments that do not decode rather than act on zero
// values (an empty path would otherwise name the root).
func TestResolveRefusesUndecodableArguments(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := safefs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	tl := &tools{fs: fsys}
	for _, tc := range []struct {
		tool    mcpsafe.Tool
		bad, ok string
	}{
		{tl.deleteTool(), `{"path":5}`, `{"path":"a.txt"}`},
		{tl.moveTool(), `{"source":["a.txt"],"destination":"b.txt"}`, `{"source":"a.txt","destination":"b.txt"}`},
	} {
		r, err := tc.tool.Resolve(context.Background(), mcpsafe.Call{Tool: tc.tool.Name, Arguments: []byte(tc.bad), Principal: "stdio"})
		if err == nil || r != nil {
			t.Errorf("%s: Resolve(%s) = %v, %v; want a decode error", tc.tool.Name, tc.bad, r, err)
		}
		if _, err := tc.tool.Resolve(context.Background(), mcpsafe.Call{Tool: tc.tool.Name, Arguments: []byte(tc.ok), Principal: "stdio"}); err != nil {
			t.Errorf("%s: control Resolve(%s): %v", tc.tool.Name, tc.ok, err)
		}
	}
}

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
