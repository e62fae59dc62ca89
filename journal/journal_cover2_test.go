package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
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

// VerifyFile reports why it could not read, never an empty summary as if
// the journal were fine.
func TestVerifyFileUnreadable(t *testing.T) {
	dir := t.TempDir()
	if _, err := VerifyFile(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "journal: open ") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := VerifyFile(dir); !errors.Is(err, syscall.EISDIR) || !strings.HasPrefix(err.Error(), "journal: reading line 1: ") {
		t.Fatalf("directory: %v", err)
	}
	// Control.
	path, _ := sampleJournal(t)
	sum, err := VerifyFile(path)
	if err != nil || sum.Records != len(sampleRecords()) {
		t.Fatalf("VerifyFile = %+v, %v", sum, err)
	}
}

// Close is not idempotent by accident: a second Close and any Append after
// it say ErrClosed, and what was appended before is on disk.
func TestCloseTwice(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(context.Background(), Record{Call: "c1", Tool: "t", Decision: Declined}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v; want ErrClosed", err)
	}
	if err := j.Append(context.Background(), Record{Call: "c2", Tool: "t", Decision: Declined}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v; want ErrClosed", err)
	}
	if sum, err := VerifyFile(path); err != nil || sum.Records != 1 {
		t.Fatalf("VerifyFile = %+v, %v; want the one record", sum, err)
	}
}

// A call approved twice (say, by the client, then by a token) and never
// finished is one ambiguous call, reported with its latest approval.
func TestReapprovedCallWithoutOutcome(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	writeJournal(t, path, []Record{
		{Call: "c1", Tool: "delete_file", Decision: ClientAccepted, By: "client"},
		{Call: "c1", Tool: "delete_file", Decision: TokenRedeemed, By: "token"},
		{Call: "c2", Tool: "delete_file", Decision: ClientAccepted, By: "client"},
		{Call: "c2", Tool: "delete_file", Decision: Executed, By: "gate"},
	})
	if sum, err := VerifyFile(path); err != nil || sum.Unresolved != 1 {
		t.Fatalf("before reopening: %+v, %v; want 1 unresolved", sum, err)
	}
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	if len(lines) != 5 {
		t.Fatalf("%d lines; want 4 and one ambiguous record", len(lines))
	}
	rec, err := parseLine(lines[4])
	if err != nil {
		t.Fatal(err)
	}
	if rec.Call != "c1" || rec.Decision != Ambiguous || !strings.Contains(rec.Reason, "approved (token-redeemed, seq 2)") {
		t.Fatalf("recovery record %+v; want c1 ambiguous after its seq 2 approval", rec)
	}
	if sum, err := VerifyFile(path); err != nil || sum.Ambiguous != 1 || sum.Unresolved != 0 {
		t.Fatalf("after reopening: %+v, %v", sum, err)
	}
}

// An edited line followed by a line that is not a record: the unparseable
// line gives no evidence, so the earlier line is blamed.
func TestBlameBeforeUnparseableLine(t *testing.T) {
	_, lines := sampleJournal(t)
	edited := bytes.Replace(lines[2], []byte("delete /srv"), []byte("delete /tmp"), 1)
	if bytes.Equal(edited, lines[2]) {
		t.Fatal("test setup: line 3 unchanged")
	}
	for name, next := range map[string][]byte{
		"garbage":  []byte("not a record"),
		"too long": bytes.Repeat([]byte("x"), MaxLineBytes+10),
	} {
		t.Run(name, func(t *testing.T) {
			l := append([][]byte{}, lines...)
			l[2] = edited
			l[4] = next
			_, err := Verify(bytes.NewReader(joinLines(l)))
			var te *TamperError
			if !errors.As(err, &te) || te.Line != 3 || !strings.Contains(te.Reason, "line 4's prev does not match the SHA-256 of line 3") {
				t.Fatalf("Verify = %v; want line 3 blamed", err)
			}
		})
	}
	// Control: with line 5 intact, line 5 still chains to line 4, which
	// pins the edit on line 3 by the other rule.
	l := append([][]byte{}, lines...)
	l[2] = edited
	_, err := Verify(bytes.NewReader(joinLines(l)))
	var te *TamperError
	if !errors.As(err, &te) || te.Line != 3 || !strings.Contains(te.Reason, "line 3 was edited") {
		t.Fatalf("Verify = %v; want line 3 blamed", err)
	}
}

// Show's table goes out at the end; a full device there is an error, not
// a silently empty report.
func TestShowReportsWriteFailure(t *testing.T) {
	path, _ := sampleJournal(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("/dev/full: %v", err)
	}
	defer full.Close()
	err = Show(full, bytes.NewReader(data), Filter{})
	if !errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), "journal: write /dev/full: ") {
		t.Fatalf("Show to /dev/full = %v; want ENOSPC", err)
	}
	var out bytes.Buffer
	if err := Show(&out, bytes.NewReader(data), Filter{}); err != nil || !strings.Contains(out.String(), "6 of 6 records shown.") {
		t.Fatalf("Show = %v:\n%s", err, out.String())
	}
}

// A byte that is not UTF-8 reaches the terminal as a visible escape.
func TestOneLineEscapesInvalidUTF8(t *testing.T) {
	if got, want := oneLine("rm \xff\xfe x", 0), `rm \xff\xfe x`; got != want {
		t.Fatalf("oneLine = %q; want %q", got, want)
	}
	if got := oneLine("rm é x", 0); got != "rm é x" {
		t.Fatalf("valid UTF-8 changed: %q", got)
	}
}

// limitFileSize lowers RLIMIT_FSIZE for the rest of the test, so that a
// write past size fails with EFBIG (the Go runtime ignores SIGXFSZ). Only
// for tests that are not parallel: the limit is process-wide.
func limitFileSize(t *testing.T, size int64) {
	t.Helper()
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

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
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

// holdFirstWrite returns an option whose first write waits for release and
// then returns what first returns; later writes go to the file.
func holdFirstWrite(release <-chan struct{}, first func(f *os.File, b []byte) (int, error)) (Option, *atomic.Int32) {
	var writes atomic.Int32
	return withFaults(func(f *os.File, b []byte) (int, error) {
		if writes.Add(1) == 1 {
			<-release
			return first(f, b)
		}
		return f.Write(b)
	}, nil), &writes
}

func waitQueued(t *testing.T, j *Journal, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(j.reqs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued; want %d", len(j.reqs), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitWrites(t *testing.T, w *atomic.Int32, n int32) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for w.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes; want %d", w.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A record queued while the batch before it fails is not refused with that
// failure: the writer cuts the file back, and the queued record is written
// after a journal-recovered record on the same chain. The failed record is
// not in the file.
func TestQueuedBehindFailedWriteResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	release := make(chan struct{})
	opt, writes := holdFirstWrite(release, func(*os.File, []byte) (int, error) {
		return 0, errors.New("injected: EIO")
	})
	j, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- j.Append(ctx, Record{Call: "a", Tool: "t", Decision: ClientAccepted}) }()
	waitWrites(t, writes, 1)
	second := make(chan error, 1)
	go func() { second <- j.Append(ctx, Record{Call: "b", Tool: "t", Decision: ClientAccepted}) }()
	waitQueued(t, j, 1)
	close(release)
	if err := <-first; err == nil || !strings.Contains(err.Error(), "write failed, record not durable: injected: EIO") {
		t.Fatalf("first Append = %v; want the write failure", err)
	}
	if err := <-second; err != nil {
		t.Fatalf("second Append = %v; want it written after the repair", err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close = %v; the journal recovered", err)
	}
	sum, err := VerifyFile(path)
	if err != nil || sum.Records != 2 {
		t.Fatalf("VerifyFile = %+v, %v; want the recovery note and b", sum, err)
	}
	lines := readLines(t, path)
	var note, b Record
	json.Unmarshal(lines[0], &note)
	json.Unmarshal(lines[1], &b)
	if note.Decision != Recovered || !strings.Contains(note.Reason, "1 approval record(s), whose calls did not run") || b.Call != "b" {
		t.Fatalf("records %+v, %+v", note, b)
	}
}

// A record whose caller gave up while it waited in the queue is dropped,
// and the records around it still chain without a gap.
func TestQueuedRecordOfCancelledCallerDropped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	release := make(chan struct{})
	opt, writes := holdFirstWrite(release, func(f *os.File, b []byte) (int, error) { return f.Write(b) })
	j, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	first := make(chan error, 1)
	go func() { first <- j.Append(bg, Record{Call: "a", Tool: "t", Decision: Executed}) }()
	waitWrites(t, writes, 1)
	ctx, cancel := context.WithCancel(bg)
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- j.Append(ctx, Record{Call: "cancelled", Tool: "t", Decision: Executed}) }()
	waitQueued(t, j, 1)
	third := make(chan error, 1)
	go func() { third <- j.Append(bg, Record{Call: "c", Tool: "t", Decision: Executed}) }()
	waitQueued(t, j, 2)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Append = %v; want context.Canceled", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := VerifyFile(path)
	if err != nil || sum.Records != 2 || sum.LastSeq != 2 {
		t.Fatalf("VerifyFile = %+v, %v; want records a and c, seq 1 and 2", sum, err)
	}
	if data, _ := os.ReadFile(path); bytes.Contains(data, []byte(`"cancelled"`)) {
		t.Fatal("the cancelled caller's record was written")
	}
}

// Close lets the writer finish what was queued before it: a record queued
// behind a slow write is durable when Close returns.
func TestCloseDrainsQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	release := make(chan struct{})
	opt, writes := holdFirstWrite(release, func(f *os.File, b []byte) (int, error) { return f.Write(b) })
	j, err := Open(path, opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { first <- j.Append(ctx, Record{Call: "a", Tool: "t", Decision: Executed}) }()
	waitWrites(t, writes, 1)
	second := make(chan error, 1)
	go func() { second <- j.Append(ctx, Record{Call: "b", Tool: "t", Decision: Executed}) }()
	waitQueued(t, j, 1)
	closed := make(chan error, 1)
	go func() { closed <- j.Close() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		j.mu.RLock()
		c := j.closed
		j.mu.RUnlock()
		if c {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Close did not start")
		}
		time.Sleep(time.Millisecond)
	}
	close(release)
	for _, ch := range []chan error{first, second, closed} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if sum, err := VerifyFile(path); err != nil || sum.Records != 2 {
		t.Fatalf("VerifyFile = %+v, %v; want both records", sum, err)
	}
}

// A write that reports fewer bytes than asked (without an error) fails its
// record like a failed write, and the partial line it left is cut away at
// once: nothing torn stays in the file. Once writes are whole again, the
// journal resumes on the same chain without a restart.
func TestShortWriteCutBackThenResumes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	var writes atomic.Int32
	j, err := Open(path, withFaults(func(f *os.File, b []byte) (int, error) {
		if writes.Add(1) <= 2 {
			return f.Write(b[:len(b)-1])
		}
		return f.Write(b)
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		err := j.Append(ctx, Record{Call: "a", Tool: "t", Decision: Executed})
		if err == nil || !strings.HasSuffix(err.Error(), "record not durable: short write") {
			t.Fatalf("Append %d = %v; want the short write failure", i+1, err)
		}
		if fileSize(t, path) != 0 {
			t.Fatalf("after failure %d the partial line is still there (%d bytes)", i+1, fileSize(t, path))
		}
	}
	if err := j.Append(ctx, Record{Call: "b", Tool: "t", Decision: Refused}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := VerifyFile(path)
	if err != nil || sum.Records != 4 || sum.Unresolved != 0 {
		t.Fatalf("after resuming: %+v, %v; want the note, a twice (late) and b", sum, err)
	}
	var late Record
	json.Unmarshal(readLines(t, path)[1], &late)
	if late.Call != "a" || late.Decision != Executed || !strings.HasPrefix(late.Reason, "written late: ") {
		t.Fatalf("the held-back outcome: %+v", late)
	}
}
