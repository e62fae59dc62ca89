package journal

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// A redemption that neither an approval nor a refusal followed (the gate
// stopped while it spent the grant) is closed at the next Open with a
// refusal that says nothing ran; an approval without an outcome is still
// ambiguous. Redemptions closed by their approval and outcome, or by a
// refusal with their Call, are left alone (controls). Many records after
// the open redemption make the tail-read Open depend on the head file
// naming it among the open calls.
func TestOpenClosesAnInterruptedRedemption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	add := func(recs ...Record) {
		t.Helper()
		for _, r := range recs {
			if err := j.Append(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(
		Record{Call: "ran", Tool: "rm", Decision: Redeeming},
		Record{Call: "ran", Tool: "rm", Decision: ChannelApproved},
		Record{Call: "ran", Tool: "rm", Decision: Executed},
		Record{Call: "spent", Tool: "rm", Decision: Redeeming},
		Record{Call: "spent", Tool: "rm", Decision: Refused, Reason: "token_spent"},
		Record{Call: "cut", Tool: "rm", Principal: "alice", Summary: "remove /srv/x", Decision: Redeeming},
	)
	for i := range 3000 {
		add(Record{Tool: "rm", Decision: Refused, Reason: fmt.Sprintf("filler %d", i)})
	}
	add(
		Record{Call: "mid", Tool: "rm", Decision: Redeeming},
		Record{Call: "mid", Tool: "rm", Decision: TokenRedeemed},
	)
	if s, err := VerifyFile(path); err != nil || s.Unresolved != 2 {
		t.Fatalf("before reopen: %v, %d unresolved, want 2 (cut, mid)", err, s.Unresolved)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	n := len(readLines(t, path))
	j, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	lines := readLines(t, path)
	if len(lines) != n+2 {
		t.Fatalf("reopen appended %d records, want 2", len(lines)-n)
	}
	cut, _ := parseLine(lines[n])
	if cut.Decision != Refused || cut.Call != "cut" || cut.By != "journal" || cut.Principal != "alice" || cut.Summary != "remove /srv/x" ||
		!strings.HasPrefix(cut.Reason, RedemptionInterrupted+":") || !strings.Contains(cut.Reason, "nothing ran") {
		t.Fatalf("the interrupted redemption was closed as %+v", cut)
	}
	mid, _ := parseLine(lines[n+1])
	if mid.Decision != Ambiguous || mid.Call != "mid" {
		t.Fatalf("the approval without an outcome was closed as %+v", mid)
	}
	if s, err := VerifyFile(path); err != nil || s.Unresolved != 0 {
		t.Fatalf("after reopen: %v, %d unresolved", err, s.Unresolved)
	}
	// A second reopen finds nothing left to close.
	j, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	if got := len(readLines(t, path)); got != n+2 {
		t.Fatalf("the second reopen appended %d records", got-n-2)
	}
}

// A refusal that closes a redemption is written past the size limit that
// stops refusals, else the next Open would call it interrupted; a refusal
// without a Call is still capped (control).
func TestRefusalClosingARedemptionIsNotCapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path, WithMaxBytes(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	if err := j.Append(ctx, Record{Call: "x", Tool: "rm", Decision: Redeeming}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		err := j.Append(ctx, Record{Tool: "rm", Decision: Refused, Summary: strings.Repeat("r", 200)})
		if errors.Is(err, ErrRefusalsCapped) {
			break
		}
		if err != nil || i > 100 {
			t.Fatalf("refusals not capped: %v after %d", err, i)
		}
	}
	if err := j.Append(ctx, Record{Tool: "rm", Decision: Refused}); !errors.Is(err, ErrRefusalsCapped) {
		t.Fatalf("a plain refusal past the cap: %v", err)
	}
	if err := j.Append(ctx, Record{Call: "x", Tool: "rm", Decision: Refused, Reason: "token_spent"}); err != nil {
		t.Fatalf("the refusal closing a redemption was not written: %v", err)
	}
	if s, err := VerifyFile(path); err != nil || s.Unresolved != 0 {
		t.Fatalf("%v, %d unresolved", err, s.Unresolved)
	}
}
