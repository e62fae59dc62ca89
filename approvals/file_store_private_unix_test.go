//go:build unix

package approvals

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A fresh machine has no state directory: the file store creates it and
// its database private, as the USAGE setup expects.
func TestFileStoreOnFreshMachine(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "state", "mcpsafe")
	path := filepath.Join(dir, "approvals.db")
	svc, err := NewService(ServiceOptions{Secret: testSecret, Approvers: testApprovers, Store: "file:" + path})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	for p, mode := range map[string]os.FileMode{dir: 0o700, filepath.Dir(dir): 0o700, path: 0o600} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, %v; want mode %v", p, fi, err, mode)
		}
	}
}
