package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fsyncWatch counts the journal file's fsyncs and remembers how many of its
// bytes the last one made durable: what a machine crash would leave.
type fsyncWatch struct {
	mu      sync.Mutex
	n       int
	durable int64
	fail    func(n int) error // if set, may fail the n-th fsync (1-based)
}

func (w *fsyncWatch) option() Option {
	return func(o *options) {
		o.sync = func(f *os.File) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.n++
			if w.fail != nil {
				if err := w.fail(w.n); err != nil {
					return err
				}
			}
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			w.durable = fi.Size()
			return f.Sync()
		}
	}
}

func (w *fsyncWatch) get() (int, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n, w.durable
}

// noTimer keeps written outcomes waiting for the next commit for as long as
// a test runs.
func noTimer(o *options) { o.deferredSync = time.Hour }

func approvalRec(call string) Record {
	return Record{Call: call, Tool: "delete_file", Decision: PolicyAutoApproved, By: "rule", ArgsDigest: "sha256:" + call, Summary: "delete " + call}
}

func outcomeRec(call string) Record {
	return Record{Call: call, Tool: "delete_file", Decision: Executed, By: "gate"}
}

func mustAppend(t *testing.T, j *Journal, r Record) {
	t.Helper()
	if err := j.Append(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

// A call costs its caller one fsync: the approval's. The outcome is written
// at once and made durable by the next call's approval.
func TestOutcomeFsyncJoinsNextCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	w := &fsyncWatch{}
	j, err := Open(path, w.option(), noTimer)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, j, approvalRec("c1"))
	n1, _ := w.get()
	mustAppend(t, j, outcomeRec("c1"))
	n2, durable := w.get()
	if n2 != n1 {
		t.Fatalf("the outcome waited for its own fsync (%d fsyncs, then %d)", n1, n2)
	}
	if size := fileSize(t, path); size <= durable {
		t.Fatalf("the outcome was not written when Append returned (file %d bytes, durable %d)", size, durable)
	}
	mustAppend(t, j, approvalRec("c2"))
	n3, durable := w.get()
	if n3 != n1+1 || durable != fileSize(t, path) {
		t.Fatalf("the next approval's fsync did not cover the outcome: %d fsyncs (want %d), %d of %d bytes durable", n3, n1+1, durable, fileSize(t, path))
	}
	mustAppend(t, j, outcomeRec("c2"))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, durable := w.get(); durable != fileSize(t, path) {
		t.Fatal("Close left the last outcome without an fsync")
	}
	sum, err := VerifyFile(path)
	if err != nil || sum.Records != 4 || sum.Unresolved != 0 || sum.Ambiguous != 0 {
		t.Fatalf("%+v %v", sum, err)
	}
}

// The control: with WithSyncOutcome(true) the outcome is fsync'd before
// Append returns.
func TestSyncOutcomeWaitsForItsFsync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	w := &fsyncWatch{}
	j, err := Open(path, w.option(), noTimer, WithSyncOutcome(true))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	mustAppend(t, j, approvalRec("c1"))
	n1, _ := w.get()
	mustAppend(t, j, outcomeRec("c1"))
	if n2, durable := w.get(); n2 != n1+1 || durable != fileSize(t, path) {
		t.Fatalf("with WithSyncOutcome(true) the outcome was not durable when Append returned (%d fsyncs, then %d)", n1, n2)
	}
}

// With no call after it, a written outcome is fsync'd on its own, within
// DeferredSyncDelay.
func TestDeferredOutcomeSyncedWithinDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "j.jsonl")
		w := &fsyncWatch{}
		j, err := Open(path, w.option())
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		mustAppend(t, j, approvalRec("c1"))
		mustAppend(t, j, outcomeRec("c1"))
		n1, _ := w.get()
		time.Sleep(DeferredSyncDelay - time.Millisecond)
		synctest.Wait()
		if n, _ := w.get(); n != n1 {
			t.Fatalf("fsync'd before DeferredSyncDelay: %d fsyncs, then %d", n1, n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n, durable := w.get(); n != n1+1 || durable != fileSize(t, path) {
			t.Fatalf("the written outcome was not fsync'd after DeferredSyncDelay (%d fsyncs, then %d)", n1, n)
		}
	})
}

// crashCopy is what a machine crash leaves of the journal at path: its
// first keep bytes (what the fsyncs made durable, and possibly part of
// what followed) and its head file as it is.
func crashCopy(t *testing.T, path string, keep int64) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile(path + HeadSuffix)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "after-crash.jsonl")
	if err := os.WriteFile(cp, b[:keep], 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp+HeadSuffix, head, 0o600); err != nil {
		t.Fatal(err)
	}
	return cp
}

// decisions reopens the journal at path (as a restarted server does) and
// returns its records' calls and decisions.
func decisions(t *testing.T, path string) []Record {
	t.Helper()
	j, err := Open(path)
	if err != nil {
		t.Fatalf("the journal left by the crash does not open: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	var recs []Record
	if _, err := scanFile(path, func(_ int, r *Record) { recs = append(recs, *r) }); err != nil {
		t.Fatal(err)
	}
	return recs
}

func scanFile(path string, each func(int, *Record)) (Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return Summary{}, err
	}
	defer f.Close()
	res, err := scan(f, each)
	return res.sum, err
}

// noOutcomeWithoutApproval fails if any executed or failed record comes
// without an approval of its call before it.
func noOutcomeWithoutApproval(t *testing.T, recs []Record) {
	t.Helper()
	approved := map[string]bool{}
	for _, r := range recs {
		switch {
		case approval(r.Decision):
			approved[r.Call] = true
		case r.Decision == Executed || r.Decision == Failed:
			if !approved[r.Call] {
				t.Fatalf("seq %d: %s for call %s with no approval before it", r.Seq, r.Decision, r.Call)
			}
		}
	}
}

// A machine crash after the outcome was written but before its fsync: on
// the next open the call is ambiguous, never executed, and never an
// outcome without its approval. Also when the crash tore the outcome line.
func TestCrashBeforeOutcomeFsyncEndsAmbiguous(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	w := &fsyncWatch{}
	j, err := Open(path, w.option(), noTimer)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	mustAppend(t, j, approvalRec("c1"))
	mustAppend(t, j, outcomeRec("c1"))
	_, durable := w.get()
	size := fileSize(t, path)
	if size <= durable {
		t.Fatal("no outcome bytes past the last fsync: nothing to crash on")
	}
	for name, keep := range map[string]int64{
		"outcome line lost": durable,
		"outcome line torn": durable + (size-durable)/2,
	} {
		t.Run(name, func(t *testing.T) {
			recs := decisions(t, crashCopy(t, path, keep))
			noOutcomeWithoutApproval(t, recs)
			var got []string
			for _, r := range recs {
				if r.Call == "c1" {
					got = append(got, r.Decision)
				}
			}
			if strings.Join(got, " ") != PolicyAutoApproved+" "+Ambiguous {
				t.Fatalf("call c1 after the crash: %v, want the approval then ambiguous", got)
			}
		})
	}
	// The control: once the next commit's fsync has covered the outcome, a
	// crash keeps it: the call is executed, not ambiguous.
	t.Run("after the next fsync", func(t *testing.T) {
		mustAppend(t, j, approvalRec("c2"))
		_, durable := w.get()
		recs := decisions(t, crashCopy(t, path, durable))
		noOutcomeWithoutApproval(t, recs)
		var got []string
		for _, r := range recs {
			if r.Call == "c1" {
				got = append(got, r.Decision)
			}
		}
		if strings.Join(got, " ") != PolicyAutoApproved+" "+Executed {
			t.Fatalf("call c1: %v, want the approval then executed", got)
		}
	})
}

// A failed fsync after outcomes were written without one: the file goes
// back to the last fsync, and those outcomes are written again, late,
// after the note of the outage; the chain verifies.
func TestFailedFsyncRewritesDeferredOutcomesLate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	w := &fsyncWatch{}
	j, err := Open(path, w.option(), noTimer)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, j, approvalRec("c1"))
	mustAppend(t, j, outcomeRec("c1"))
	n, _ := w.get()
	eio := errors.New("input/output error")
	w.mu.Lock()
	w.fail = func(k int) error {
		if k == n+1 {
			return eio
		}
		return nil
	}
	w.mu.Unlock()
	if err := j.Append(context.Background(), approvalRec("c2")); !errors.Is(err, eio) {
		t.Fatalf("the approval whose fsync failed: %v, want the fsync's error", err)
	}
	mustAppend(t, j, approvalRec("c3"))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	sum, err := scanFile(path, func(_ int, r *Record) { got = append(got, r.Call+":"+r.Decision) })
	if err != nil || sum.Unresolved != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	want := "c1:" + PolicyAutoApproved + " :" + Recovered + " c1:" + Executed + " c3:" + PolicyAutoApproved
	if strings.Join(got, " ") != want {
		t.Fatalf("records %v\nwant %s", got, want)
	}
}

// Calls 100 ms apart, one at a time, cost one fsync each too: each
// outcome waits for the next call's approval rather than being fsync'd on
// its own, and the last one is fsync'd within DeferredSyncDelay of being
// written. (With a delay shorter than the gap, every call costs two.)
func TestSparseCallsOneFsyncEach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "j.jsonl")
		w := &fsyncWatch{}
		j, err := Open(path, w.option())
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		n0, _ := w.get()
		const calls = 20
		for i := range calls {
			call := string(rune('a' + i))
			mustAppend(t, j, approvalRec(call))
			mustAppend(t, j, outcomeRec(call))
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
		}
		if n, _ := w.get(); n-n0 != calls {
			t.Fatalf("%d calls 100 ms apart took %d fsyncs, want one each", calls, n-n0)
		}
		time.Sleep(DeferredSyncDelay)
		synctest.Wait()
		if n, durable := w.get(); n-n0 != calls+1 || durable != fileSize(t, path) {
			t.Fatalf("the last outcome was not fsync'd within DeferredSyncDelay after the calls stopped (%d fsyncs)", n-n0)
		}
	})
}
