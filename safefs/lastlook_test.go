package safefs

// lastLook is the final check between the content verification and the
// rename: a write through another descriptor, or a different inode under
// the name, must stop the removal. The race windows are a few system calls
// wide, so the test drives lastLook directly at that point instead of
// racing Remove. (mutant: safefs-lastlook-skipped)

import (
	"os"
	"testing"
)

func TestLastLookCatchesLateChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		ok     bool
	}{
		{"no change (control)", func(*testing.T, string) {}, true},
		{"written after verification", func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(" and more"); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"another inode under the name", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, path, "approved")
		}, false},
		{"name removed", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			path := tr.p("victim.txt")
			mustWrite(t, path, "approved")
			f, err := newFS(tr.root)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			want, err := f.Inspect(path)
			if err != nil {
				t.Fatal(err)
			}
			look := lastLookAt(t, f, path, want)
			tc.change(t, path)
			err = look()
			if tc.ok {
				if err != nil {
					t.Fatalf("lastLook on an unchanged file: %v", err)
				}
				return
			}
			mustIs(t, err, ErrChanged)
		})
	}
}
