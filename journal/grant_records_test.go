package journal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Standing-grant records: created and ended need the grant's ID, a use
// is an approval like any other (it needs a Call and is closed by its
// outcome), and show names the grant.
func TestGrantRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, bad := range []Record{
		{Tool: "w", Decision: GrantCreated},
		{Tool: "w", Decision: GrantEnded, Reason: "used-up"},
		{Tool: "w", Decision: GrantUsed, Grant: "g1"},
	} {
		if err := j.Append(ctx, bad); err == nil {
			t.Errorf("%s without its id was accepted", bad.Decision)
		}
	}
	for _, rec := range []Record{
		{Tool: "w", Decision: GrantCreated, Grant: "g1", By: "alice", Summary: "calls with paths under tmp/"},
		{Tool: "w", Decision: GrantUsed, Grant: "g1", Call: "c1", By: "alice"},
		{Tool: "w", Decision: Executed, Call: "c1"},
		{Tool: "w", Decision: GrantEnded, Grant: "g1", Reason: "used-up"},
	} {
		if err := j.Append(ctx, rec); err != nil {
			t.Fatalf("%s: %v", rec.Decision, err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := VerifyFile(path)
	if err != nil || sum.Records != 4 || sum.Unresolved != 0 {
		t.Fatalf("verify: %+v, %v (a grant use must be closed by its outcome)", sum, err)
	}
	data, _ := os.ReadFile(path)
	out, err := showString(t, data, Filter{})
	if err != nil || strings.Count(out, "grant g1") != 3 || !strings.Contains(out, "used-up") {
		t.Fatalf("show:\n%s", out)
	}
}
