//go:build unix

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/ledger/ledgertest"
)

func TestFileCreatedPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	// A fresh machine: the state directory does not exist yet.
	dir := filepath.Join(t.TempDir(), "state", "mcpsafe")
	path := filepath.Join(dir, "ledger.db")
	s, err := ledger.Open(context.Background(), "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Issue(context.Background(), ledgertest.NewNonce(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v, %v; want a directory with mode 0700", d, fi, err)
		}
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v; want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
}
