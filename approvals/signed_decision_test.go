package approvals

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// Through the real service: an approval carries the service's signed
// statement, which the gate's webhook checks with the public key.
func TestSignedDecisionThroughService(t *testing.T) {
	pub, priv := newKey(t)
	e := newEnv(t, ServiceOptions{SigningKey: priv})

	// Control: the right key; the evidence verifies and names the call.
	e.hook = newHook(t, e.srv.URL+"/webhook", channel.WithServiceKey(pub))
	req := testRequest("signed-1")
	ch := e.ask(req)
	e.waitPending("signed-1")
	e.decide("signed-1", "approve", "alice", 200)
	r := wait(t, ch)
	if r.err != nil || !r.d.Approved || len(r.d.Evidence) == 0 {
		t.Fatalf("control: %+v, %v", r.d, r.err)
	}
	st, err := channel.VerifyAttestation(pub, r.d.Evidence)
	if err != nil || st.ID != req.ID || st.ArgsDigest != req.ArgsDigest || st.Assurance != "channel" ||
		strings.Join(st.Approvers, ",") != "alice" || st.DecidedAt.IsZero() {
		t.Fatalf("statement %+v, %v", st, err)
	}

	// Attack: the gate holds another key (the service's was swapped).
	other, _ := newKey(t)
	e.hook = newHook(t, e.srv.URL+"/webhook", channel.WithServiceKey(other))
	ch = e.ask(testRequest("signed-2"))
	e.waitPending("signed-2")
	e.decide("signed-2", "approve", "alice", 200)
	if r := wait(t, ch); !errors.Is(r.err, channel.ErrAttestation) || !errors.Is(r.err, channel.ErrBadResponse) || r.d.Approved {
		t.Fatalf("wrong key: %+v, %v", r.d, r.err)
	}

	// Attack: a service without a key (or one that lost it) is refused by
	// a gate that expects signatures.
	e2 := newEnv(t, ServiceOptions{})
	e2.hook = newHook(t, e2.srv.URL+"/webhook", channel.WithServiceKey(pub))
	ch = e2.ask(testRequest("signed-3"))
	e2.waitPending("signed-3")
	e2.decide("signed-3", "approve", "alice", 200)
	if r := wait(t, ch); !errors.Is(r.err, channel.ErrAttestation) || r.d.Approved {
		t.Fatalf("unsigned approval: %+v, %v", r.d, r.err)
	}
}

// The gate journals the evidence and the assurance; an auditor with the
// public key re-checks it from the journal file alone, and a record whose
// evidence was swapped or edited fails.
func TestJournalCarriesSignedDecision(t *testing.T) {
	pub, priv := newKey(t)
	e := newEnv(t, ServiceOptions{SigningKey: priv})
	e.hook = newHook(t, e.srv.URL+"/webhook", channel.WithServiceKey(pub))
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	jr, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer jr.Close()
	files := &fileStore{files: map[string]string{"a.txt": "A", "b.txt": "B"}}
	gate, err := mcpsafe.New(mcpsafe.Options{Audience: "files@attest", Journal: jr, Mode: mcpsafe.ModeChannel, Approver: e.hook, ChannelTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	if err := gate.Register(server, files.deleteTool()); err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, p := range []string{"a.txt", "b.txt"} {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": p}})
			done <- res
		}()
		id := pendingID(t, e)
		e.decide(id, "approve", "alice", 200)
		if res := <-done; res == nil || res.IsError || files.has(p) {
			t.Fatalf("%s: %+v", p, res)
		}
	}
	jr.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := channel.CheckJournal(bytes.NewReader(data), pub, nil)
	if err != nil || n != 2 {
		t.Fatalf("control: %d records checked, %v", n, err)
	}
	var recs []journal.Record
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r journal.Record
		json.Unmarshal(l, &r)
		if r.Decision == journal.ChannelApproved {
			recs = append(recs, r)
		}
	}
	if len(recs) != 2 || recs[0].Assurance != "channel" || len(recs[0].Evidence) == 0 {
		t.Fatalf("journal records: %+v", recs)
	}
	other, _ := newKey(t)
	if _, err := channel.CheckJournalRecord(other, recs[0]); !errors.Is(err, channel.ErrAttestation) {
		t.Errorf("another key: %v", err)
	}
	swapped := recs[0]
	swapped.Evidence = recs[1].Evidence // b.txt's approval under a.txt's record
	if _, err := channel.CheckJournalRecord(pub, swapped); !errors.Is(err, channel.ErrAttestation) {
		t.Errorf("evidence of another call: %v", err)
	}
	claimed := recs[0]
	claimed.By = "alice,bob"
	if _, err := channel.CheckJournalRecord(pub, claimed); !errors.Is(err, channel.ErrAttestation) {
		t.Errorf("record names an approver the statement does not: %v", err)
	}
	bare := recs[0]
	bare.Evidence = nil
	if _, err := channel.CheckJournalRecord(pub, bare); !errors.Is(err, channel.ErrAttestation) {
		t.Errorf("record without evidence: %v", err)
	}
	if _, err := channel.CheckJournal(bytes.NewReader(bytes.Replace(data, []byte(`"signature":"`), []byte(`"signature":"A`), 1)), pub, nil); err == nil {
		t.Error("an edited signature in the file passed")
	}
}

// pendingID waits for the one pending request and returns its id.
func pendingID(t *testing.T, e *env) string {
	t.Helper()
	var id string
	waitFor(t, "a pending request", func() bool {
		_, out := e.api("GET", "/api/requests", "carol")
		list, _ := out["requests"].([]any)
		for _, it := range list {
			if m, ok := it.(map[string]any); ok && m["status"] == channel.StatusPending {
				id = m["id"].(string)
				return true
			}
		}
		return false
	})
	return id
}
