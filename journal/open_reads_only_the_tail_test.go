package journal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// pairsJournal appends pairs approval/outcome pairs from several writers
// at once (group commit keeps it quick) and closes the journal.
func pairsJournal(t testing.TB, path string, pairs int, opts ...Option) {
	t.Helper()
	j, err := Open(path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	appendPairs(t, j, pairs)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func appendPairs(t testing.TB, j *Journal, pairs int) {
	t.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range 32 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(pairs) {
					return
				}
				call := fmt.Sprintf("p%d", i)
				err := j.Append(ctx, Record{Call: call, Tool: "touch", Decision: PolicyAutoApproved, By: "rule"})
				if err == nil {
					err = j.Append(ctx, Record{Call: call, Tool: "touch", Decision: Executed})
				}
				if err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(err)
	}
}

// openCounting opens the journal and returns how many lines Open read.
func openCounting(t *testing.T, path string, opts ...Option) (*Journal, int) {
	t.Helper()
	lines := -1
	j, err := Open(path, append(opts, func(o *options) { o.scanned = func(n int) { lines = n } })...)
	if err != nil {
		t.Fatal(err)
	}
	if lines < 0 {
		t.Fatal("Open did not report what it read")
	}
	return j, lines
}

// TestOpenReadsOnlyTheTail: a journal whose calls all have their outcome
// is opened by reading a few lines at its end, not its 4,000 records; the
// control (the same journal without its head file, as written before head
// files) is read whole, and both open on the same chain.
func TestOpenReadsOnlyTheTail(t *testing.T) {
	const pairs = 2000
	path := filepath.Join(t.TempDir(), "j.jsonl")
	pairsJournal(t, path, pairs)
	h, err := ReadHead(path)
	if err != nil || h == nil || h.Seq != 2*pairs || h.Open != 2*pairs+1 {
		t.Fatalf("head %+v %v: want seq %d, open %d (no call waiting)", h, err, 2*pairs, 2*pairs+1)
	}
	j, lines := openCounting(t, path)
	if lines > 100 {
		t.Fatalf("Open read %d lines of a %d-record journal whose calls are all resolved", lines, 2*pairs)
	}
	if err := j.Append(context.Background(), Record{Tool: "t", Decision: Refused}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	sum, err := VerifyFile(path)
	if err != nil || sum.LastSeq != 2*pairs+1 || sum.Unresolved != 0 || sum.Ambiguous != 0 {
		t.Fatalf("after a tail-only open: %+v %v", sum, err)
	}

	// Control: no hint, so the whole set is read.
	os.Remove(path + HeadSuffix)
	j, lines = openCounting(t, path)
	j.Close()
	if lines < 2*pairs {
		t.Fatalf("without a head file Open read %d lines, want all %d", lines, 2*pairs+1)
	}
	// That open wrote a head with the hint: the next one reads the tail.
	j, lines = openCounting(t, path)
	j.Close()
	if lines > 100 {
		t.Fatalf("Open read %d lines after the head was rewritten", lines)
	}
}

// TestOpenFindsAnOldApprovalWithoutOutcome: a call approved early whose
// outcome never came (the process stopped while it ran, thousands of
// records later) is still marked ambiguous, exactly once: Open reads from
// that approval, and the next Open, with it resolved, only the tail.
func TestOpenFindsAnOldApprovalWithoutOutcome(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := j.Append(ctx, Record{Call: "old", Tool: "rm", Decision: ClientAccepted, Summary: "rm -r /srv/old"}); err != nil {
		t.Fatal(err)
	}
	appendPairs(t, j, 1500)
	if err := j.Append(ctx, Record{Call: "late", Tool: "rm", Decision: TokenRedeemed}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	if h, _ := ReadHead(path); h == nil || h.Open != 1 {
		t.Fatalf("head %+v: want open 1, the approval still waiting", h)
	}
	j, lines := openCounting(t, path)
	j.Close()
	if lines < 3000 {
		t.Fatalf("Open read %d lines: it cannot have seen the approval at seq 1", lines)
	}
	sum, err := VerifyFile(path)
	if err != nil || sum.Ambiguous != 2 || sum.Unresolved != 0 {
		t.Fatalf("%+v %v: want both waiting calls ambiguous", sum, err)
	}
	var amb []string
	if _, err := ReadFile(path, func(r *Record) {
		if r.Decision == Ambiguous {
			amb = append(amb, r.Call)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(amb, ",") != "old,late" {
		t.Fatalf("ambiguous records for %v, want old then late", amb)
	}
	j, lines = openCounting(t, path)
	j.Close()
	if lines > 100 {
		t.Fatalf("the next Open read %d lines", lines)
	}
	if sum2, _ := VerifyFile(path); sum2.Ambiguous != 2 {
		t.Fatalf("ambiguous written again: %+v", sum2)
	}
}

// TestTailOpenCutsATornLine: a crash that tears the last line of a long
// journal is repaired from the tail as from a full read: the torn bytes
// cut at the right offset, the cut recorded, the chain intact.
func TestTailOpenCutsATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	pairsJournal(t, path, 1000)
	before, _ := os.ReadFile(path)
	torn := []byte(`{"seq":2001,"prev":"` + strings.Repeat("a", 20))
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(torn)
	f.Close()
	j, lines := openCounting(t, path)
	j.Close()
	if lines > 100 {
		t.Fatalf("Open read %d lines", lines)
	}
	after, _ := os.ReadFile(path)
	if !bytes.HasPrefix(after, before) {
		t.Fatal("the verified lines changed")
	}
	rest := readLines(t, path)[2000]
	rec, _ := parseLine(rest)
	if rec.Decision != Recovered || rec.Seq != 2001 || !strings.Contains(rec.Reason, hashLine(torn)) {
		t.Fatalf("recovery record %s", rest)
	}
	if _, err := VerifyFile(path); err != nil {
		t.Fatal(err)
	}
}

// TestTailOpenOverSegments: a rotated journal is opened from its tail,
// with an approval sealed into an older segment still found, and a set
// whose files no longer join up is read whole and refused.
func TestTailOpenOverSegments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	rot := WithRotation(Rotation{MaxBytes: 16 << 10})
	j, err := Open(path, rot)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := j.Append(ctx, Record{Call: "sealed", Tool: "rm", Decision: ClientAccepted}); err != nil {
		t.Fatal(err)
	}
	appendPairs(t, j, 1000)
	j.Close()
	segs, _ := Segments(path)
	if len(segs) < 4 {
		t.Fatalf("%d segments", len(segs))
	}
	// The approval keeps Open reading from the first segment once.
	j, lines := openCounting(t, path, rot)
	j.Close()
	if lines < 2000 {
		t.Fatalf("read %d lines", lines)
	}
	if sum, err := VerifyFile(path); err != nil || sum.Ambiguous != 1 {
		t.Fatalf("%+v %v", sum, err)
	}
	j, lines = openCounting(t, path, rot)
	j.Close()
	if lines > 100+2*len(segs) {
		t.Fatalf("read %d lines of %d segments", lines, len(segs))
	}
	// The last line of a segment before the tail edited: the next file
	// no longer joins up, so Open reads all and refuses, naming it.
	segs, _ = Segments(path)
	l := readLines(t, segs[1].Path)
	edited := bytes.Replace(l[len(l)-1], []byte(`"tool":"`), []byte(`"tool":"x`), 1)
	if bytes.Equal(edited, l[len(l)-1]) {
		t.Fatal("nothing edited")
	}
	l[len(l)-1] = edited
	if err := os.WriteFile(segs[1].Path, joinLines(l), 0o600); err != nil {
		t.Fatal(err)
	}
	if j, err := Open(path, rot); err == nil || !strings.Contains(err.Error(), filepath.Base(segs[1].Path)) {
		if j != nil {
			j.Close()
		}
		t.Fatalf("Open = %v, want a refusal naming %s", err, segs[1].Path)
	}
}

// TestTailOpenLeavesOldRecordsToVerify is what the tail open gives up: an
// edit to a record long before the tail, which does not change the chain
// after it, is not read by Open (it opens, and the journal goes on) but
// `journal verify` names it, before and after; an edit in the tail is
// refused at Open as before.
func TestTailOpenLeavesOldRecordsToVerify(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	pairsJournal(t, path, 500)
	lines := readLines(t, path)
	lines[9] = bytes.Replace(lines[9], []byte(`"touch"`), []byte(`"rm-rf"`), 1)
	if err := os.WriteFile(path, joinLines(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	wantErr(t, func() error { _, err := VerifyFile(path); return err }(), "tamper", 10)
	j, err := Open(path)
	if err != nil {
		t.Fatalf("Open read the old records: %v", err)
	}
	j.Append(context.Background(), Record{Tool: "t", Decision: Refused})
	j.Close()
	_, err = VerifyFile(path)
	wantErr(t, err, "tamper", 10)

	// The tail: the last line edited no longer matches the head file.
	lines = readLines(t, path)
	n := len(lines)
	lines[n-1] = bytes.Replace(lines[n-1], []byte(`"refused"`), []byte(`"declined"`), 1)
	os.WriteFile(path, joinLines(lines), 0o600)
	if j, err := Open(path); err == nil {
		j.Close()
		t.Fatal("Open accepted an edited last line")
	}
}
