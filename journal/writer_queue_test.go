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
	"testing"
	"testing/synctest"
)

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

// wantQueued waits, inside a synctest bubble, until every goroutine of
// the test is blocked (the writer on its held write, callers in the queue),
// and checks that n requests wait in the queue.
func wantQueued(t *testing.T, j *Journal, n int) {
	t.Helper()
	synctest.Wait()
	if len(j.reqs) != n {
		t.Fatalf("%d requests queued; want %d", len(j.reqs), n)
	}
}

// wantWrites is wantQueued for the number of writes the writer began.
func wantWrites(t *testing.T, w *atomic.Int32, n int32) {
	t.Helper()
	synctest.Wait()
	if w.Load() != n {
		t.Fatalf("%d writes; want %d", w.Load(), n)
	}
}

// A record queued while the batch before it fails is not refused with that
// failure: the writer cuts the file back, and the queued record is written
// after a journal-recovered record on the same chain. The failed record is
// not in the file.
func TestQueuedBehindFailedWriteResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
		wantWrites(t, writes, 1)
		second := make(chan error, 1)
		go func() { second <- j.Append(ctx, Record{Call: "b", Tool: "t", Decision: ClientAccepted}) }()
		wantQueued(t, j, 1)
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
	})
}

// A record whose caller gave up while it waited in the queue is dropped,
// and the records around it still chain without a gap.
func TestQueuedRecordOfCancelledCallerDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
		wantWrites(t, writes, 1)
		ctx, cancel := context.WithCancel(bg)
		gaveUp := make(chan error, 1)
		go func() { gaveUp <- j.Append(ctx, Record{Call: "cancelled", Tool: "t", Decision: Executed}) }()
		wantQueued(t, j, 1)
		third := make(chan error, 1)
		go func() { third <- j.Append(bg, Record{Call: "c", Tool: "t", Decision: Executed}) }()
		wantQueued(t, j, 2)
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
	})
}

// Close lets the writer finish what was queued before it: a record queued
// behind a slow write is durable when Close returns.
func TestCloseDrainsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
		wantWrites(t, writes, 1)
		second := make(chan error, 1)
		go func() { second <- j.Append(ctx, Record{Call: "b", Tool: "t", Decision: Executed}) }()
		wantQueued(t, j, 1)
		closed := make(chan error, 1)
		go func() { closed <- j.Close() }()
		synctest.Wait()
		j.mu.RLock()
		c := j.closed
		j.mu.RUnlock()
		if !c {
			t.Fatal("Close did not start")
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
	})
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
