package journal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// resolvedJournal writes pairs approval/outcome pairs, with three calls left
// open among them: "open-a" early (approved twice), "open-b" in the middle,
// "open-c" last.
func resolvedJournal(t testing.TB, pairs int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "j.jsonl")
	// No fsync: durability is not what these tests are about, and 40,000
	// fsyncs one after the other take a minute.
	j, err := Open(path, WithClock(stepClock()), func(o *options) { o.sync = func(*os.File) error { return nil } })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	add := func(r Record) {
		if err := j.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	approve := func(call string) {
		add(Record{Call: call, Tool: "delete_file", Decision: PolicyAutoApproved, By: "rule",
			ArgsDigest: "sha256:" + call, Summary: "delete " + call, Args: []byte(`{"path":"/srv/` + call + `"}`)})
	}
	for i := range pairs {
		switch i {
		case 1:
			approve("open-a")
		case pairs / 2:
			approve("open-b")
		case pairs - 2:
			approve("open-a") // again: it keeps its first place
		}
		call := fmt.Sprintf("c%d", i)
		approve(call)
		add(Record{Call: call, Tool: "delete_file", Decision: Executed, By: "gate"})
	}
	approve("open-c")
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A scan keeps the approvals still waiting for their outcome and nothing
// of the resolved ones: what it holds never grows with the journal.
func TestVerifyTracksOnlyOpenApprovals(t *testing.T) {
	path := resolvedJournal(t, 3000)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	most := 0
	var s *setScan
	s = newSetScan(nil, func(int, *Record) { most = max(most, len(s.res.open)) })
	err = s.file(f, 0, false)
	if err == nil {
		err = s.finish()
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.res.sum.Records != 6004 || s.res.sum.Unresolved != 3 {
		t.Fatalf("records %d, unresolved %d: want 6004 and 3", s.res.sum.Records, s.res.sum.Unresolved)
	}
	// At most the three open calls and the one whose outcome is next.
	if most > 4 {
		t.Fatalf("the scan tracked up to %d approvals at once over 3,000 resolved calls: it keeps resolved ones", most)
	}
	var got []string
	for _, r := range s.res.unresolved() {
		got = append(got, r.Call+"/"+r.Decision)
	}
	if want := "[open-a/policy-auto-approved open-b/policy-auto-approved open-c/policy-auto-approved]"; fmt.Sprint(got) != want {
		t.Fatalf("unresolved approvals %v, want %s (journal order, each call once)", got, want)
	}
}

// The same, seen from outside: the heap a verify holds by its last record
// is the same after 20,000 resolved calls as after 1,000.
func TestVerifyHeapDoesNotGrowWithResolvedCalls(t *testing.T) {
	held := func(pairs int) uint64 {
		path := resolvedJournal(t, pairs)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var heap uint64
		records := 2*pairs + 4
		s := newSetScan(nil, func(ord int, _ *Record) {
			if ord == records {
				var m runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m)
				heap = m.HeapAlloc
			}
		})
		if err := s.file(f, 0, false); err != nil {
			t.Fatal(err)
		}
		runtime.KeepAlive(s)
		if heap == 0 {
			t.Fatal("the last record was never seen")
		}
		return heap
	}
	small, large := held(1000), held(20_000)
	// 19,000 more resolved calls kept as records would be ~10 MB.
	if large > small+1<<20 {
		t.Fatalf("the heap held at the end of the scan grew from %d to %d bytes with 19,000 more resolved calls", small, large)
	}
}
