//go:build linux

package journal

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Paths the journal cannot live at are refused with the system's reason.
func TestOpenRefusesUnusablePaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, prefix string
		errno        syscall.Errno
	}{
		{filepath.Join(file, "j.jsonl"), "journal: creating " + file + ": ", syscall.ENOTDIR},
		{dir, "journal: open " + dir + ": ", syscall.EISDIR},
	}
	for _, c := range cases {
		j, err := Open(c.path)
		if err == nil {
			j.Close()
			t.Fatalf("Open(%q) succeeded", c.path)
		}
		if !errors.Is(err, c.errno) || !strings.HasPrefix(err.Error(), c.prefix) {
			t.Fatalf("Open(%q) = %v; want %q... (%v)", c.path, err, c.prefix, c.errno)
		}
	}
	// Control: a new directory below dir is created and the journal opens.
	j, err := Open(filepath.Join(dir, "sub", "j.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// When the record Open owes the journal (a cut torn line, an approval left
// without outcome) cannot be written, Open fails: the gate must not start
// on a journal that cannot record.
func TestOpenFailsWhenRecoveryRecordCannotBeWritten(t *testing.T) {
	t.Run("torn line", func(t *testing.T) {
		path, _ := sampleJournal(t)
		size := fileSize(t, path)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(`{"seq":7,"prev":"`); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if !t.Run("limited", func(t *testing.T) {
			limitFileSize(t, size)
			j, err := Open(path)
			if err == nil {
				j.Close()
				t.Fatal("Open succeeded without room for the recovery record")
			}
			if !errors.Is(err, syscall.EFBIG) || !strings.HasPrefix(err.Error(), "journal: write failed, record not durable: ") {
				t.Fatalf("Open = %v; want the write failure (EFBIG)", err)
			}
		}) {
			t.FailNow()
		}
		// Nothing half-written: the cut journal is the original one.
		if sum, err := VerifyFile(path); err != nil || sum.Records != len(sampleRecords()) || fileSize(t, path) != size {
			t.Fatalf("after the failed Open: %+v, %v, %d bytes", sum, err, fileSize(t, path))
		}
	})
	t.Run("approval without outcome", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "j.jsonl")
		writeJournal(t, path, []Record{{Call: "c1", Tool: "delete_file", Decision: ClientAccepted, By: "client"}})
		size := fileSize(t, path)
		if !t.Run("limited", func(t *testing.T) {
			limitFileSize(t, size)
			j, err := Open(path)
			if err == nil {
				j.Close()
				t.Fatal("Open succeeded without room for the ambiguous record")
			}
			if !errors.Is(err, syscall.EFBIG) || !strings.HasPrefix(err.Error(), "journal: write failed, record not durable: ") {
				t.Fatalf("Open = %v; want the write failure (EFBIG)", err)
			}
		}) {
			t.FailNow()
		}
		// Control: with room again, the next Open records the call as
		// ambiguous (it was not forgotten).
		j, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		if sum, err := VerifyFile(path); err != nil || sum.Ambiguous != 1 || sum.Unresolved != 0 {
			t.Fatalf("after reopening: %+v, %v", sum, err)
		}
	})
}

// Administrators make audit logs append-only (chattr +a). Such a journal
// keeps working, but a torn final line cannot be cut: Open must refuse
// with the reason and leave the file as it was, not start on a journal
// whose tail it could not repair.
func TestAppendOnlyJournalWithTornTail(t *testing.T) {
	path, _ := sampleJournal(t)
	torn := filepath.Join(filepath.Dir(path), "torn.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, `{"seq":7,"prev":"`...)
	if err := os.WriteFile(torn, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, torn} {
		if err := setAppendOnly(p, true); err != nil {
			needEnv(t, "chattr +a (FS_IOC_SETFLAGS, needs CAP_LINUX_IMMUTABLE and ext4/xfs/btrfs): %v", err)
		}
		t.Cleanup(func() {
			if err := setAppendOnly(p, false); err != nil {
				t.Errorf("chattr -a %s: %v", p, err)
			}
		})
	}

	j, err := Open(torn)
	if err == nil {
		j.Close()
		t.Fatal("Open of an append-only journal with a torn tail succeeded")
	}
	if !errors.Is(err, syscall.EPERM) || !strings.HasPrefix(err.Error(), "journal: cutting torn line 7: truncate ") {
		t.Fatalf("Open = %v; want the truncate refusal (EPERM)", err)
	}
	if after, _ := os.ReadFile(torn); !bytes.Equal(after, data) {
		t.Fatal("the refused Open changed the file")
	}

	// Control: an append-only journal without damage opens and appends.
	j, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(context.Background(), Record{Call: "c9", Tool: "t", Decision: Declined}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if sum, err := VerifyFile(path); err != nil || sum.Records != len(sampleRecords())+1 {
		t.Fatalf("VerifyFile = %+v, %v", sum, err)
	}
}

// A new journal's directory entry must be made durable (fsync of the
// directory) before the journal is used; when that fails, Open fails.
// Here the process has exactly one descriptor left: the journal file takes
// it and opening the directory fails with EMFILE. Not parallel: the limit
// is process-wide.
func TestOpenFailsWhenDirectorySyncFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "j.jsonl")
	// Initialise the runtime poller (it may need descriptors of its own)
	// before descriptors run out.
	if f, err := os.Open(dir); err == nil {
		f.Close()
	}
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		needEnv(t, "/proc/self/fd: %v", err)
	}
	low := orig
	low.Cur = uint64(len(entries) + 8)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var held []int
	func() {
		defer func() {
			for _, fd := range held {
				unix.Close(fd)
			}
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
				t.Errorf("restoring RLIMIT_NOFILE: %v", err)
			}
		}()
		for {
			fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if errors.Is(err, unix.EMFILE) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, fd)
			if len(held) > 1000 {
				t.Fatal("RLIMIT_NOFILE was not applied")
			}
		}
		// One descriptor free: for the journal file, none for its directory.
		unix.Close(held[len(held)-1])
		held = held[:len(held)-1]
		var j *Journal
		j, err = Open(path)
		if err == nil {
			j.Close()
		}
	}()
	if err == nil {
		t.Fatal("Open succeeded though the directory could not be synced")
	}
	if !errors.Is(err, syscall.EMFILE) || !strings.HasPrefix(err.Error(), "journal: open "+dir+": ") {
		t.Fatalf("Open = %v; want the directory open failure (EMFILE)", err)
	}
	// Control: with descriptors back, a new journal opens.
	j, err := Open(filepath.Join(dir, "other.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

// limitFileSize lowers RLIMIT_FSIZE for the rest of the test, so that a
// write past size fails with EFBIG (the Go runtime ignores SIGXFSZ). Only
// for tests that are not parallel: the limit is process-wide.
func limitFileSize(t *testing.T, size int64) {
	t.Helper()
	if f := flag.Lookup("test.testlogfile"); f != nil && f.Value.String() != "" {
		// go test's own log of opened files (kept for its cache) would
		// hit the limit too and fail the package: run with -count=1, as
		// scripts/test does.
		msg := "RLIMIT_FSIZE is process-wide and would cut go test's testlog; run with -count=1"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (scripts/test does)")
		}
		t.Skip(msg)
	}
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &orig); err != nil {
		t.Fatal(err)
	}
	low := orig
	low.Cur = uint64(size)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &orig); err != nil {
			t.Errorf("restoring RLIMIT_FSIZE: %v", err)
		}
	})
}

// fsAppendFL is FS_APPEND_FL from linux/fs.h (chattr +a); x/sys/unix does
// not export it.
const fsAppendFL = 0x20

// setAppendOnly sets or clears chattr +a on path.
func setAppendOnly(path string, on bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	if on {
		flags |= fsAppendFL
	} else {
		flags &^= fsAppendFL
	}
	return unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags)
}
