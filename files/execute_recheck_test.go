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
	args := pathArgs{Path: "cache.txt"}
	resolved, err := del.Resolve(context.Background(), call, args)
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
	_, err = del.Execute(context.Background(), call, args, resolved, mcpsafe.Approval{})
	var r *mcpsafe.Refusal
	if !asRefusal(err, &r) || r.Reason != mcpsafe.ReasonTargetChanged {
		t.Fatalf("Execute after a swap: %v, want a %s refusal", err, mcpsafe.ReasonTargetChanged)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "the user's new work" {
		t.Fatalf("the swapped-in file was touched: %q, %v", b, err)
	}
	// Control: re-resolved, the same file is removed.
	if resolved, err = del.Resolve(context.Background(), call, args); err != nil {
		t.Fatal(err)
	}
	if _, err := del.Execute(context.Background(), call, args, resolved, mcpsafe.Approval{}); err != nil {
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

// The same for move_file: a source swapped after the check is not moved,
// and a destination that appeared after the check is not overwritten.
func TestExecuteMovesOnlyTheApprovedFile(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, src, dst string)
		reason string
	}{
		{"source swapped", func(t *testing.T, src, _ string) {
			if err := os.Remove(src); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src, []byte("new work"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, mcpsafe.ReasonTargetChanged},
		{"destination appeared", func(t *testing.T, _, dst string) {
			if err := os.WriteFile(dst, []byte("someone else's file"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ReasonDestinationExists},
		{"no change (control)", func(*testing.T, string, string) {}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			src, dst := filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt")
			if err := os.WriteFile(src, []byte("approved"), 0o644); err != nil {
				t.Fatal(err)
			}
			fsys, err := safefs.New(root)
			if err != nil {
				t.Fatal(err)
			}
			defer fsys.Close()
			mv := (&tools{fs: fsys}).moveTool()
			call := mcpsafe.Call{Tool: MoveFile, Arguments: []byte(`{"source":"a.txt","destination":"b.txt"}`), Principal: "stdio"}
			args := moveArgs{Source: "a.txt", Destination: "b.txt"}
			resolved, err := mv.Resolve(context.Background(), call, args)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(t, src, dst)
			_, err = mv.Execute(context.Background(), call, args, resolved, mcpsafe.Approval{})
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(dst); string(b) != "approved" {
					t.Fatalf("moved content %q", b)
				}
				return
			}
			var r *mcpsafe.Refusal
			if !asRefusal(err, &r) || r.Reason != tc.reason {
				t.Fatalf("Execute: %v, want a %s refusal", err, tc.reason)
			}
			if b, err := os.ReadFile(src); err != nil || string(b) == "" {
				t.Fatalf("source gone: %v", err)
			}
		})
	}
}
