//go:build linux

package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory for the
// rest of the test: a real small filesystem that fills up.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		needEnv(t, "mounting a tmpfs (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		// A failed test may leave a file open in it: detach rather than
		// leave the mount behind.
		if err := unix.Unmount(dir, 0); err != nil && unix.Unmount(dir, unix.MNT_DETACH) != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk writes path until the filesystem has no block left.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for i := 0; ; i++ {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
		if i > 1<<20 {
			t.Fatal("the filesystem never filled up")
		}
	}
}

func decoded(t *testing.T, path string) []Record {
	t.Helper()
	var out []Record
	for _, line := range readLines(t, path) {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestFullDiskRecoversWithoutRestart fills a real tmpfs under an open
// journal. While it is full every Append fails with ENOSPC (an approval
// that cannot be written is a call that must not run), and the file holds
// no partial line. Once space returns, the same Journal resumes on the
// same chain: a journal-recovered record says what was refused meanwhile,
// the outcome of a call that ran during the outage follows it, written
// late, and a reopen finds nothing to cut and no ambiguous call.
// (mutant: journal-resume-keeps-partial-line)
func TestFullDiskRecoversWithoutRestart(t *testing.T) {
	dir := mountTmpfs(t, 128<<10)
	path := filepath.Join(dir, "journal.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() }) // before the unmount; ErrClosed once the test closed it
	ctx := context.Background()
	for _, r := range []Record{
		{Call: "c1", Tool: "delete_file", Decision: ClientAccepted},
		{Call: "c1", Tool: "delete_file", Decision: Executed},
		{Call: "c3", Tool: "delete_file", Decision: ClientAccepted}, // runs across the outage
	} {
		if err := j.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	fillDisk(t, filepath.Join(dir, "filler"))
	// The journal's last block may still have room: use it up.
	var full error
	for i := 0; i < 10000 && full == nil; i++ {
		full = j.Append(ctx, Record{Tool: "delete_file", Decision: Refused, Reason: "policy_denied", Args: json.RawMessage(`{"path":"` + strings.Repeat("p", 200) + `"}`)})
	}
	if !errors.Is(full, syscall.ENOSPC) {
		t.Fatalf("Append on a full disk = %v; want ENOSPC", full)
	}
	sizeFull := fileSize(t, path)
	if err := j.Append(ctx, Record{Call: "c2", Tool: "delete_file", Decision: ClientAccepted}); !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "record not durable") {
		t.Fatalf("approval on a full disk = %v; want a reported ENOSPC", err)
	}
	if err := j.Append(ctx, Record{Call: "c3", Tool: "delete_file", Decision: Executed}); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("outcome on a full disk = %v; want ENOSPC", err)
	}
	if fileSize(t, path) != sizeFull {
		t.Fatalf("failed appends changed the file: %d -> %d bytes", sizeFull, fileSize(t, path))
	}
	if _, err := VerifyFile(path); err != nil {
		t.Fatalf("the full journal is not a clean chain: %v", err)
	}

	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{{Call: "c4", Tool: "delete_file", Decision: TokenRedeemed}, {Call: "c4", Tool: "delete_file", Decision: Executed}} {
		if err := j.Append(ctx, r); err != nil {
			t.Fatalf("Append once space returned: %v", err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatalf("Close = %v; the journal recovered", err)
	}
	sum, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs := decoded(t, path)
	n := len(recs)
	note, late, next := recs[n-4], recs[n-3], recs[n-2]
	if note.Decision != Recovered || !strings.Contains(note.Reason, "no space left on device") ||
		!strings.Contains(note.Reason, "1 approval record(s), whose calls did not run, and 1 other record(s); 1 outcome record(s) follow") {
		t.Fatalf("recovery note: %+v", note)
	}
	if late.Call != "c3" || late.Decision != Executed || !strings.HasPrefix(late.Reason, "written late: ") || next.Call != "c4" {
		t.Fatalf("after the note: %+v, %+v", late, next)
	}
	for _, r := range recs {
		if r.Call == "c2" {
			t.Fatal("the approval that failed to write is in the journal")
		}
	}
	// Control: a restart finds a clean file: nothing cut, nothing ambiguous.
	j, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if again, err := VerifyFile(path); err != nil || again.Records != sum.Records || again.Ambiguous != 0 || again.Unresolved != 0 {
		t.Fatalf("after reopening: %+v, %v (before: %+v)", again, err, sum)
	}
}

// TestRepairFailureKeepsJournalShut: when the file cannot be cut back to
// its durable end (here: it shrank under the journal, as a truncation by
// hand would do), the journal refuses every record instead of writing on
// a chain it cannot vouch for, and Close reports it.
func TestRepairFailureKeepsJournalShut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	var fail bool
	j, err := Open(path, withFaults(func(f *os.File, b []byte) (int, error) {
		if fail {
			return 0, errors.New("injected: EIO")
		}
		return f.Write(b)
	}, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := j.Append(ctx, Record{Call: "a", Tool: "t", Decision: ClientAccepted}); err != nil {
		t.Fatal(err)
	}
	fail = true
	if err := j.Append(ctx, Record{Call: "a", Tool: "t", Decision: Executed}); err == nil {
		t.Fatal("injected failure not reported")
	}
	if err := os.Truncate(path, 10); err != nil {
		t.Fatal(err)
	}
	fail = false
	for i := 0; i < 2; i++ {
		err := j.Append(ctx, Record{Call: "b", Tool: "t", Decision: ClientAccepted})
		if err == nil || !strings.Contains(err.Error(), "unusable until its end is repaired (the file shrank") {
			t.Fatalf("Append %d on an unrepairable journal = %v", i+1, err)
		}
	}
	if fileSize(t, path) != 10 {
		t.Fatal("the unrepairable journal was written to")
	}
	if err := j.Close(); err == nil {
		t.Fatal("Close hid the failure")
	}
}

// TestRefusalsStopAtSizeLimit: refusal-class records stop at the size
// limit, with one note saying so, while approvals and outcomes (the
// controls) are still written past it; the chain stays whole.
// (mutant: journal-refusals-uncapped)
func TestRefusalsStopAtSizeLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	const limit = 8 << 10
	j, err := Open(path, WithMaxBytes(limit))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	capped := 0
	for i := 0; i < 500; i++ {
		d := []string{Refused, Declined, Cancelled, Timeout}[i%4]
		err := j.Append(ctx, Record{Tool: "delete_file", Decision: d, Reason: "policy_denied", Args: json.RawMessage(`{"path":"/srv/x"}`)})
		if errors.Is(err, ErrRefusalsCapped) {
			capped++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if capped == 0 || fileSize(t, path) > limit+1024 {
		t.Fatalf("%d refusals capped, file %d bytes with a %d-byte limit", capped, fileSize(t, path), limit)
	}
	atCap := fileSize(t, path)
	if err := j.Append(ctx, Record{Tool: "t", Decision: Refused}); !errors.Is(err, ErrRefusalsCapped) || fileSize(t, path) != atCap {
		t.Fatalf("refusal past the limit: %v, %d -> %d bytes", err, atCap, fileSize(t, path))
	}
	for _, r := range []Record{{Call: "k", Tool: "t", Decision: ChannelApproved}, {Call: "k", Tool: "t", Decision: Executed}} {
		if err := j.Append(ctx, r); err != nil {
			t.Fatalf("%s past the limit: %v", r.Decision, err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyFile(path); err != nil {
		t.Fatal(err)
	}
	notes := 0
	for _, r := range decoded(t, path) {
		if r.Tool == "-" && strings.HasPrefix(r.Reason, "size limit: ") {
			notes++
		}
	}
	if notes != 1 {
		t.Fatalf("%d size-limit notes; want exactly one", notes)
	}
}

// TestLargeRefusalArgumentsByDigest: a refused call's arguments past
// MaxRefusalArgsBytes are recorded as a note pointing at args_digest (or
// carrying the SHA-256 of the redacted copy when there is no digest), and
// its summary is clipped. Controls: small refusal arguments are kept, and
// an approval keeps arguments up to MaxArgsBytes.
func TestLargeRefusalArgumentsByDigest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Many short values: one long one would be kept as its digest
	// (LongValueBytes), whatever the limit.
	big := json.RawMessage(`{"paths":["` + strings.Repeat(strings.Repeat("z", 64)+`","`, MaxRefusalArgsBytes/64) + `"]}`)
	small := json.RawMessage(`{"path":"/srv/ok"}`)
	for _, r := range []Record{
		{Tool: "t", Decision: Refused, ArgsDigest: "d1", Args: big, Summary: strings.Repeat("s", 5000)},
		{Tool: "t", Decision: Declined, Args: big},
		{Tool: "t", Decision: Refused, ArgsDigest: "d3", Args: small},
		{Call: "c", Tool: "t", Decision: ClientAccepted, ArgsDigest: "d4", Args: big},
	} {
		if err := j.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	recs := decoded(t, path)
	var a0, a1 string
	json.Unmarshal(recs[0].Args, &a0)
	json.Unmarshal(recs[1].Args, &a1)
	if !strings.HasPrefix(a0, "[omitted: ") || !strings.HasSuffix(a0, "see args_digest]") || recs[0].ArgsDigest != "d1" || len(recs[0].Summary) > 1024 {
		t.Fatalf("large refusal: args %q, digest %q, summary %d bytes", a0, recs[0].ArgsDigest, len(recs[0].Summary))
	}
	if !strings.Contains(a1, "SHA-256 of the redacted copy "+hashLine(big)) {
		t.Fatalf("large refusal without a digest: %q", a1)
	}
	if string(recs[2].Args) != string(small) || string(recs[3].Args) != string(big) {
		t.Fatalf("controls changed: %s / %.40s", recs[2].Args, recs[3].Args)
	}
}

// TestCloseWritesHeldBackOutcomes: an outcome that could not be written
// during an outage is written by Close if writes work again by then, so it
// is not lost with the process; the control is the outage that has not
// ended, where Close reports the failure.
func TestCloseWritesHeldBackOutcomes(t *testing.T) {
	for _, healed := range []bool{true, false} {
		t.Run(fmt.Sprintf("healed=%v", healed), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.jsonl")
			failing := true
			j, err := Open(path, withFaults(func(f *os.File, b []byte) (int, error) {
				if failing {
					return 0, syscall.ENOSPC
				}
				return f.Write(b)
			}, nil))
			if err != nil {
				t.Fatal(err)
			}
			failing = false
			ctx := context.Background()
			if err := j.Append(ctx, Record{Call: "a", Tool: "t", Decision: ClientAccepted}); err != nil {
				t.Fatal(err)
			}
			failing = true
			if err := j.Append(ctx, Record{Call: "a", Tool: "t", Decision: Executed}); !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("outcome during the outage: %v", err)
			}
			failing = !healed
			err = j.Close()
			sum, verr := VerifyFile(path)
			if verr != nil {
				t.Fatal(verr)
			}
			if healed {
				if err != nil || sum.Records != 3 || sum.Unresolved != 0 {
					t.Fatalf("Close = %v; journal %+v: want the note and the late outcome", err, sum)
				}
				return
			}
			if !errors.Is(err, syscall.ENOSPC) || sum.Records != 1 || sum.Unresolved != 1 {
				t.Fatalf("Close = %v; journal %+v: want the failure reported and the approval open", err, sum)
			}
		})
	}
}
