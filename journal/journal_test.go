package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestOpenCreatesPrivateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "mcpsafe")
	path := filepath.Join(dir, "journal.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for p, want := range map[string]os.FileMode{dir: 0o700, path: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", p, got, want)
		}
	}
}

func TestOpenRefusesNonRegularFile(t *testing.T) {
	if _, err := Open(os.DevNull); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Open(%s) = %v", os.DevNull, err)
	}
}

func TestOpenLocksOutSecondWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if j2, err := Open(path); err == nil {
		j2.Close()
		t.Fatal("second Open of a journal in use succeeded")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j, err = Open(path) // control: free again once closed
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
}

func TestAppendContinuesChainAcrossReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	recs := sampleRecords()
	writeJournal(t, path, recs[:2])
	writeJournal(t, path, recs[2:])
	sum, err := VerifyFile(path)
	if err != nil || sum.Records != 6 || sum.Unresolved != 0 || sum.Ambiguous != 0 {
		t.Fatalf("%+v %v", sum, err)
	}
}

func TestAppendValidatesRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	tests := []struct {
		name string
		rec  Record
		ok   bool
	}{
		{"approval with call", Record{Call: "c", Tool: "t", Decision: ClientAccepted}, true},
		{"refusal without call", Record{Tool: "t", Decision: Refused, Reason: "policy_denied"}, true},
		{"approval without call", Record{Tool: "t", Decision: TokenRedeemed}, false},
		{"outcome without call", Record{Tool: "t", Decision: Executed}, false},
		{"no decision", Record{Call: "c", Tool: "t"}, false},
		{"unknown decision", Record{Call: "c", Tool: "t", Decision: "approved"}, false},
		{"no tool", Record{Call: "c", Decision: Declined}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := j.Append(ctx, tc.rec)
			if (err == nil) != tc.ok {
				t.Fatalf("Append = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	// Invalid records are the caller's fault: they must not break the
	// journal for everyone else.
	if err := j.Append(ctx, Record{Call: "d", Tool: "t", Decision: Executed}); err != nil {
		t.Fatal(err)
	}
}

func TestAppendIgnoresCallerSeqPrevTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, WithClock(stepClock()))
	if err != nil {
		t.Fatal(err)
	}
	r := Record{Seq: 99, Prev: "forged", Time: time.Unix(0, 0), Call: "c", Tool: "t", Decision: Executed}
	if err := j.Append(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	j.Close()
	lines := readLines(t, path)
	got, _ := parseLine(lines[0])
	if got.Seq != 1 || got.Prev != Genesis || got.Time.Year() != 2026 {
		t.Fatalf("caller's seq/prev/time leaked into the journal: %+v", got)
	}
}

func TestConcurrentAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 64, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				errs <- j.Append(context.Background(), Record{
					Call: fmt.Sprintf("w%d-%d", w, i), Tool: "t", Decision: Executed,
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	sum, err := func() (Summary, error) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		res, err := scan(f, func(_ int, r *Record) { seen[r.Call]++ })
		return res.sum, err
	}()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != writers*each || sum.LastSeq != writers*each {
		t.Fatalf("summary %+v, want %d records", sum, writers*each)
	}
	for w := range writers {
		for i := range each {
			if n := seen[fmt.Sprintf("w%d-%d", w, i)]; n != 1 {
				t.Fatalf("record w%d-%d written %d times", w, i, n)
			}
		}
	}
}

func TestReopenMarksApprovalsWithoutOutcomeAmbiguous(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	recs := []Record{
		{Call: "a", Tool: "rm", Principal: "p", Session: "s", ArgsDigest: "da", Summary: "remove a", Decision: ClientAccepted, By: "client"},
		{Call: "b", Tool: "rm", Decision: TokenRedeemed},
		{Call: "b", Tool: "rm", Decision: Executed},
		{Call: "c", Tool: "mv", Principal: "q", ArgsDigest: "dc", Summary: "move c", Decision: ChannelApproved, By: "bob"},
		{Call: "d", Tool: "rm", Decision: PolicyAutoApproved, By: "rule-1"},
		{Call: "d", Tool: "rm", Decision: Failed, Error: "boom"},
		{Call: "e", Tool: "rm", Decision: PolicyAutoApproved},
		{Call: "x", Tool: "rm", Decision: Declined},
		{Call: "y", Tool: "rm", Decision: Refused, Reason: "token_spent"},
	}
	writeJournal(t, path, recs)

	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	lines := readLines(t, path)
	if len(lines) != len(recs)+3 {
		t.Fatalf("%d lines after reopen, want %d", len(lines), len(recs)+3)
	}
	for i, want := range []Record{recs[0], recs[3], recs[6]} {
		got, err := parseLine(lines[len(recs)+i])
		if err != nil {
			t.Fatal(err)
		}
		if got.Decision != Ambiguous || got.Call != want.Call || got.Tool != want.Tool ||
			got.Principal != want.Principal || got.Session != want.Session ||
			got.ArgsDigest != want.ArgsDigest || got.Summary != want.Summary {
			t.Fatalf("ambiguous record %d = %+v, want copy of %+v", i, got, want)
		}
		if !strings.Contains(got.Reason, "may or may not have run") || !strings.Contains(got.Reason, want.Decision) {
			t.Fatalf("reason %q does not say the outcome is unknown", got.Reason)
		}
	}

	// Exactly once: a second reopen finds every approval resolved.
	j, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if n := len(readLines(t, path)); n != len(recs)+3 {
		t.Fatalf("second reopen appended again: %d lines", n)
	}
	sum, err := VerifyFile(path)
	if err != nil || sum.Ambiguous != 3 || sum.Unresolved != 0 {
		t.Fatalf("%+v %v", sum, err)
	}

	var out bytes.Buffer
	f, _ := os.Open(path)
	defer f.Close()
	if err := Show(&out, f, Filter{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out.String(), AmbiguousMarker); got != 3 {
		t.Fatalf("Show flags %d ambiguous rows, want 3:\n%s", got, out.String())
	}
	if !strings.Contains(out.String(), "!! 3 AMBIGUOUS call(s)") {
		t.Fatalf("no ambiguous footer:\n%s", out.String())
	}
}

func TestOpenCutsTornTailAndRecordsIt(t *testing.T) {
	path, lines := sampleJournal(t)
	tail := []byte(`{"seq":7,"prev":"` + hashLine(lines[5])[:10])
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(tail)
	f.Close()
	if _, err := VerifyFile(path); err == nil {
		t.Fatal("torn tail verified")
	}

	j, err := Open(path)
	if err != nil {
		t.Fatalf("Open refused a crash-torn journal: %v", err)
	}
	j.Close()
	got := readLines(t, path)
	if len(got) != 7 || !bytes.Equal(joinLines(got[:6]), joinLines(lines)) {
		t.Fatalf("verified lines changed or tail kept:\n%s", joinLines(got))
	}
	rec, _ := parseLine(got[6])
	if rec.Decision != Recovered || rec.Seq != 7 || !strings.Contains(rec.Reason, hashLine(tail)) {
		t.Fatalf("recovery record %+v does not name the cut bytes", rec)
	}
	if _, err := VerifyFile(path); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesTamperedJournal: a journal Open reads whole (here one
// without a head file, as written before head files: nothing says where
// its tail begins) is refused for an edited middle line. With a head file
// Open reads only the tail and leaves older lines to verify
// (TestTailOpenLeavesOldRecordsToVerify).
func TestOpenRefusesTamperedJournal(t *testing.T) {
	path, lines := sampleJournal(t)
	lines[2] = []byte(strings.Replace(string(lines[2]), "delete /srv", "delete /tmp", 1))
	data := joinLines(lines)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path + HeadSuffix); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	var te *TamperError
	if !errors.As(err, &te) || te.Line != 3 {
		t.Fatalf("Open = %v, want refusal naming line 3", err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(after, data) {
		t.Fatal("Open changed a tampered journal")
	}
}

// withFaults replaces the file's Write and Sync for one test.
func withFaults(write func(*os.File, []byte) (int, error), sync func(*os.File) error) Option {
	return func(o *options) {
		if write != nil {
			o.write = write
		}
		if sync != nil {
			o.sync = sync
		}
	}
}

func TestClosedFileBreaksJournalForGood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rec := Record{Call: "c", Tool: "t", Decision: ClientAccepted}
	if err := j.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	j.f.Close() // the descriptor disappears underneath the writer
	if err := j.Append(ctx, rec); err == nil {
		t.Fatal("Append on a closed descriptor succeeded")
	}
	if err := j.Append(ctx, rec); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("later Append = %v, want permanent failure", err)
	}
	if err := j.Close(); err == nil {
		t.Fatal("Close hid the failure")
	}
}

// A failed fsync fails every record of its batch; the writer cuts them
// away, and once fsync works again the journal resumes on the same chain
// without a restart: the outcomes the batch held are written late, after a
// journal-recovered record.
func TestFailedFsyncFailsWholeBatchThenResumes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "j.jsonl")
		release := make(chan struct{})
		var writes, syncs atomic.Int32
		// Outcomes fsync'd one batch at a time, as approvals are (by default
		// an outcome's fsync joins the next commit).
		j, err := Open(path, WithSyncOutcome(true), withFaults(
			func(f *os.File, b []byte) (int, error) {
				if writes.Add(1) == 1 {
					<-release // hold the first batch so the next one queues up
				}
				return f.Write(b)
			},
			func(f *os.File) error {
				if syncs.Add(1) == 2 {
					return errors.New("injected: EIO")
				}
				return f.Sync()
			}))
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		first := make(chan error, 1)
		go func() { first <- j.Append(ctx, Record{Call: "0", Tool: "t", Decision: Executed}) }()
		synctest.Wait() // the writer holds the first batch
		if w := writes.Load(); w != 1 {
			t.Fatalf("%d writes before the release; want the first batch's", w)
		}
		const n = 10
		errs := make(chan error, n)
		for i := range n {
			go func() { errs <- j.Append(ctx, Record{Call: fmt.Sprint(i + 1), Tool: "t", Decision: Executed}) }()
		}
		synctest.Wait() // every caller waits in the queue
		if len(j.reqs) != n {
			t.Fatalf("%d records queued; want %d", len(j.reqs), n)
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatalf("first batch: %v", err)
		}
		for range n {
			if err := <-errs; err == nil || !strings.Contains(err.Error(), "EIO") {
				t.Fatalf("caller in the failed batch got %v", err)
			}
		}
		if w := writes.Load(); w != 2 {
			t.Fatalf("%d writes: the ten records did not share one batch", w)
		}
		// The disk is fine again: the next record is written, after the note
		// and the ten outcomes, on the same chain.
		if err := j.Append(ctx, Record{Call: "z", Tool: "t", Decision: Executed}); err != nil {
			t.Fatalf("Append after the disk recovered: %v", err)
		}
		if writes.Load() != 3 {
			t.Fatalf("%d writes; want one more", writes.Load())
		}
		if err := j.Close(); err != nil {
			t.Fatal(err)
		}
		sum, err := VerifyFile(path)
		if err != nil || sum.Records != 1+1+n+1 {
			t.Fatalf("VerifyFile = %+v, %v", sum, err)
		}
		lines := readLines(t, path)
		var note Record
		json.Unmarshal(lines[1], &note)
		if note.Decision != Recovered || !strings.Contains(note.Reason, "EIO") || !strings.Contains(note.Reason, "10 outcome record(s) follow") {
			t.Fatalf("recovery note %+v", note)
		}
	})
}

func TestAppendRespectsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	release := make(chan struct{})
	j, err := Open(path, withFaults(func(f *os.File, b []byte) (int, error) {
		<-release
		return f.Write(b)
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := j.Append(cancelled, Record{Call: "a", Tool: "t", Decision: Executed}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Append with a dead context = %v", err)
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if err := j.Append(ctx, Record{Call: "b", Tool: "t", Decision: Executed}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append stuck behind a slow disk = %v, want deadline", err)
	}
	close(release)
	if err := j.Append(context.Background(), Record{Call: "c", Tool: "t", Decision: Executed}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	// "a" was refused before it was queued; "b" may or may not have landed.
	if sum, err := VerifyFile(path); err != nil || sum.Records < 1 || sum.Records > 2 {
		t.Fatalf("%+v %v", sum, err)
	}
}

func TestAppendAfterClose(t *testing.T) {
	j, err := Open(filepath.Join(t.TempDir(), "j.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if err := j.Append(context.Background(), Record{Call: "a", Tool: "t", Decision: Executed}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close = %v", err)
	}
}

func TestSecretsNeverReachTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	args := `{"path":"/srv/ok.txt","keyboard":"qwerty-layout","password":"SEKRIT-pw","token":"SEKRIT-tok",
		"client_secret":"SEKRIT-sec","api_key":"SEKRIT-key","Authorization":"Bearer SEKRIT-auth",
		"approval_token":"SEKRIT-grant","recipient_iban":"SEKRIT-iban",
		"nested":{"list":[{"apiKey":"SEKRIT-nested"}],"mode":"fast"}}`
	err = j.Append(context.Background(), Record{
		Call: "c", Tool: "t", Decision: ClientAccepted,
		Args: json.RawMessage(args), SecretFields: []string{"recipient_iban"}, // a name the common list does not know
	})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	data, _ := os.ReadFile(path)
	for _, bad := range []string{"SEKRIT", "SecretFields", `"recipient_iban":"`} {
		if bytes.Contains(data, []byte(bad)) && !(bad == `"recipient_iban":"` && bytes.Contains(data, []byte(`"recipient_iban":"[redacted]"`))) {
			t.Errorf("%q reached the journal: %s", bad, data)
		}
	}
	// Control: ordinary fields stay readable.
	for _, good := range []string{`"path":"/srv/ok.txt"`, `"keyboard":"qwerty-layout"`, `"mode":"fast"`} {
		if !bytes.Contains(data, []byte(good)) {
			t.Errorf("ordinary field %s lost: %s", good, data)
		}
	}
}

func TestOversizedArgsAndRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	// Many values under LongValueBytes: one long one would be kept as its
	// digest, whatever the limit.
	big := json.RawMessage(`{"data":["` + strings.Repeat(strings.Repeat("x", 1000)+`","`, MaxArgsBytes/1000+2) + `"]}`)
	if err := j.Append(ctx, Record{Call: "a", Tool: "t", Decision: Executed, Args: big}); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("y", MaxLineBytes)
	if err := j.Append(ctx, Record{Call: "b", Tool: "t", Decision: Executed, Principal: huge}); err == nil {
		t.Fatal("a record over the line limit was written")
	}
	// Summaries, errors and reasons are clipped rather than refused: an
	// approval whose plan is huge must still be recordable.
	if err := j.Append(ctx, Record{Call: "b", Tool: "t", Decision: Failed, Summary: huge, Error: huge, Reason: huge}); err != nil {
		t.Fatalf("a record with a huge summary and error: %v", err)
	}
	// Control: the journal still works for everyone else.
	if err := j.Append(ctx, Record{Call: "c", Tool: "t", Decision: Executed}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte("[omitted: ")) || len(data) > 64<<10 {
		t.Fatalf("large args not replaced by a placeholder (%d bytes)", len(data))
	}
}

func TestDefaultPath(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	fallback := filepath.Join(home, ".local", "state", "mcpsafe", "journal.jsonl")
	for _, tc := range []struct{ xdg, want string }{
		{"/var/state", "/var/state/mcpsafe/journal.jsonl"},
		{"", fallback},
		{"relative/dir", fallback}, // the XDG spec says relative values are ignored
	} {
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		got, err := DefaultPath()
		if err != nil || got != tc.want {
			t.Errorf("XDG_STATE_HOME=%q: %q, %v; want %q", tc.xdg, got, err, tc.want)
		}
	}
}

func TestMaxBatchOneMeansOneFsyncPerRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tc := range []struct {
			opts     []Option
			maxSyncs int32 // upper bound for 32 concurrent appends
			minSyncs int32
		}{
			{[]Option{WithMaxBatch(1)}, 32, 32},
			{nil, 31, 1}, // control: with writers queued behind a slow fsync, batches form
		} {
			var syncs atomic.Int32
			var hold atomic.Bool
			release := make(chan struct{})
			path := filepath.Join(t.TempDir(), "j.jsonl")
			j, err := Open(path, append(tc.opts, WithSyncOutcome(true), withFaults(nil, func(f *os.File) error {
				syncs.Add(1)
				if hold.CompareAndSwap(true, false) {
					<-release // a slow disk: the callers pile up behind the first fsync
				}
				return f.Sync()
			}))...)
			if err != nil {
				t.Fatal(err)
			}
			hold.Store(true)
			var wg sync.WaitGroup
			for i := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := j.Append(context.Background(), Record{Call: fmt.Sprint(i), Tool: "t", Decision: Executed}); err != nil {
						t.Error(err)
					}
				}()
			}
			synctest.Wait() // one fsync held, every other caller in the queue
			close(release)
			wg.Wait()
			j.Close()
			if n := syncs.Load(); n < tc.minSyncs || n > tc.maxSyncs {
				t.Fatalf("%d fsyncs for 32 records, want %d..%d", n, tc.minSyncs, tc.maxSyncs)
			}
		}
	})
}
