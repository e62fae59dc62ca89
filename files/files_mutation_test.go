package files

// The last line of defence: the file is swapped after the gate's own
// re-check and before Execute removes it. Execute must remove only the
// approved inode with the approved content (safefs.Remove with the
// approved Info), never "whatever is at this path now".
// (mutant: files-delete-without-recheck)

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/safefs"
)

func TestExecuteRemovesOnlyTheApprovedFile(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "cache.txt")
	if err := os.WriteFile(path, []byte("approved content"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, err := safefs.New(root)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	tl := &tools{fs: fsys}
	del := tl.deleteTool()
	call := mcpsafe.Call{Tool: DeleteFile, Arguments: []byte(`{"path":"cache.txt"}`), Principal: "stdio"}
	resolved, err := del.Resolve(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	// Swap: same name, other content (a new inode, as an editor's save leaves).
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("the user's new work"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = del.Execute(context.Background(), call, mcpsafe.Approval{Resolved: resolved})
	var r *mcpsafe.Refusal
	if !asRefusal(err, &r) || r.Reason != mcpsafe.ReasonTargetChanged {
		t.Fatalf("Execute after a swap: %v, want a %s refusal", err, mcpsafe.ReasonTargetChanged)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "the user's new work" {
		t.Fatalf("the swapped-in file was touched: %q, %v", b, err)
	}
	// Control: re-resolved, the same file is removed.
	if resolved, err = del.Resolve(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	if _, err := del.Execute(context.Background(), call, mcpsafe.Approval{Resolved: resolved}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("the approved file is still there: %v", err)
	}
}

func asRefusal(err error, r **mcpsafe.Refusal) bool {
	rf, ok := err.(*mcpsafe.Refusal)
	*r = rf
	return ok
}
