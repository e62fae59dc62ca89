package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An approval_pending handle outlives the gate replica that issued it: two
// `mcpsafe files --http --mode channel` replicas share a key file and a
// Redis ledger; replica A answers approval_pending and is killed (kill -9)
// while the person decides at the approval service; the approved handle
// then runs the call once on replica B, and on A restarted the replay is
// refused. Before the plan's content fingerprint was keyed by the key file,
// every process but A computed another plan, the service refused the
// re-attach, and the approved call could never run (channel_unavailable).
func TestApprovedHandleRunsOnAnyReplica(t *testing.T) {
	needService(t, "redis", "127.0.0.1:6379")
	w := newWorkspace(t)
	a := startApprovalsService(t)
	key := filepath.Join(w.base, "key")
	if out, err := exec.Command(binary, "keygen", key).CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v %s", err, out)
	}
	ledger := fmt.Sprintf("redis://127.0.0.1:6379/0?ledger_prefix=mcpsafe-handle-%d:", time.Now().UnixNano())
	common := []string{"--root", w.root, "--key-file", key, "--ledger", ledger, "--mode", "channel",
		"--approver-url", a.base + "/webhook", "--approver-secret-file", a.secretFile, "--channel-wait", "1s"}
	ja, jb := filepath.Join(w.base, "a.jsonl"), filepath.Join(w.base, "b.jsonl")
	repA := startReplica(t, append(common, "--journal", ja)...)
	repB := startReplica(t, append(common, "--journal", jb)...)

	args := map[string]any{"path": "cache.txt"}
	first := sc(t, call(t, repA.connect(t), "delete_file", args))
	handle, _ := first["approval_token"].(string)
	if first["status"] != "approval_pending" || handle == "" {
		t.Fatalf("first call on A: %v", first)
	}
	repA.cmd.Process.Kill() // kill -9 while the person decides
	repA.cmd.Wait()

	id := a.pendingID()
	if code, out := a.api("POST", "/api/requests/"+id+"/approve", "alice"); code != 200 {
		t.Fatalf("approve: HTTP %d %v", code, out)
	}
	withHandle := map[string]any{"path": "cache.txt", "approval_token": handle}
	csB := repB.connect(t)
	if res := call(t, csB, "delete_file", withHandle); res.IsError {
		t.Fatalf("the approved handle on replica B: %v %v", sc(t, res), res.Content)
	}
	if content(t, w.path("cache.txt")) != "<missing>" || content(t, w.path("thesis.txt")) != "thesis" {
		t.Fatal("the approved call did not run on B, or something else ran")
	}

	// A restarted (its journal's lock died with it) refuses the replay, and
	// so does B: the grant was spent in the shared ledger.
	repA2 := startReplica(t, append(common, "--journal", ja)...)
	for name, session := range map[string]*mcp.ClientSession{"A restarted": repA2.connect(t), "B": csB} {
		res := call(t, session, "delete_file", withHandle)
		if !res.IsError || sc(t, res)["status"] != "refused" {
			t.Fatalf("replayed handle on %s ran or was not refused: %v", name, sc(t, res))
		}
	}
	recs := readJournalFile(t, jb)
	runs := 0
	for _, r := range recs {
		if r.Decision == journal.Executed {
			runs++
		}
	}
	if runs != 1 || countOf(readJournalFile(t, ja), journal.Executed) != 0 {
		t.Fatalf("executions: B %d (journal %s), A %d; want exactly one, on B", runs, decisions(recs), countOf(readJournalFile(t, ja), journal.Executed))
	}
	if got := decisions(recs); !strings.Contains(got, "channel-approved::alice executed::") {
		t.Fatalf("B's journal does not say who approved and that it ran: %s", got)
	}
}

func countOf(recs []journal.Record, decision string) int {
	n := 0
	for _, r := range recs {
		if r.Decision == decision {
			n++
		}
	}
	return n
}
