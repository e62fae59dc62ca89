package channel

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
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
	e.hook = newHook(t, e.srv.URL+"/webhook", WithServiceKey(pub))
	req := testRequest("signed-1")
	ch := e.ask(req)
	e.waitPending("signed-1")
	e.decide("signed-1", "approve", "alice", 200)
	r := wait(t, ch)
	if r.err != nil || !r.d.Approved || len(r.d.Evidence) == 0 {
		t.Fatalf("control: %+v, %v", r.d, r.err)
	}
	st, err := VerifyAttestation(pub, r.d.Evidence)
	if err != nil || st.ID != req.ID || st.ArgsDigest != req.ArgsDigest || st.Assurance != "channel" ||
		strings.Join(st.Approvers, ",") != "alice" || st.DecidedAt.IsZero() {
		t.Fatalf("statement %+v, %v", st, err)
	}

	// Attack: the gate holds another key (the service's was swapped).
	other, _ := newKey(t)
	e.hook = newHook(t, e.srv.URL+"/webhook", WithServiceKey(other))
	ch = e.ask(testRequest("signed-2"))
	e.waitPending("signed-2")
	e.decide("signed-2", "approve", "alice", 200)
	if r := wait(t, ch); !errors.Is(r.err, ErrAttestation) || !errors.Is(r.err, ErrBadResponse) || r.d.Approved {
		t.Fatalf("wrong key: %+v, %v", r.d, r.err)
	}

	// Attack: a service without a key (or one that lost it) is refused by
	// a gate that expects signatures.
	e2 := newEnv(t, ServiceOptions{})
	e2.hook = newHook(t, e2.srv.URL+"/webhook", WithServiceKey(pub))
	ch = e2.ask(testRequest("signed-3"))
	e2.waitPending("signed-3")
	e2.decide("signed-3", "approve", "alice", 200)
	if r := wait(t, ch); !errors.Is(r.err, ErrAttestation) || r.d.Approved {
		t.Fatalf("unsigned approval: %+v, %v", r.d, r.err)
	}
}

// Whoever holds the shared HMAC secret (every gated server does) can
// answer in the service's place. Without the signing key it cannot make an
// approval the gate accepts, and it cannot reuse one made for another call.
func TestForgedAttestationsRefused(t *testing.T) {
	pub, priv := newKey(t)
	_, otherPriv := newKey(t)
	req := testRequest("forge-1")
	good := Statement{Version: 1, ID: req.ID, Tool: req.Tool, ArgsDigest: req.ArgsDigest, Principal: req.Principal,
		Audience: req.Audience, ExpiresAt: req.ExpiresAt.UTC(), Approved: true, Approvers: []string{"alice"},
		Assurance: "channel", DecidedAt: time.Now().UTC()}
	sign := func(k ed25519.PrivateKey, mod func(*Statement)) Attestation {
		st := good
		st.Approvers = append([]string(nil), good.Approvers...)
		if mod != nil {
			mod(&st)
		}
		a, err := signStatement(k, st)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	answer := func(a any, approvers ...string) string {
		if len(approvers) == 0 {
			approvers = []string{"alice"}
		}
		b, _ := json.Marshal(map[string]any{"id": req.ID, "approved": true, "approvers": approvers, "attestation": a})
		return string(b)
	}
	withGrant := func(a any, grant string) string {
		b, _ := json.Marshal(map[string]any{"id": req.ID, "approved": true, "approvers": []string{"alice"}, "attestation": a, "grant": grant})
		return string(b)
	}
	altered := sign(priv, nil)
	altered.Statement = bytes.Replace(altered.Statement, []byte(req.ArgsDigest), []byte(strings.Repeat("0", 64)), 1)
	unknownField := sign(priv, nil)
	cases := []struct {
		name string
		body string
		want string // "" = approved
	}{
		{"control: signed statement for this call", answer(sign(priv, nil)), ""},
		{"no attestation", `{"id":"forge-1","approved":true,"approvers":["alice"]}`, "no signed statement"},
		{"answer adds a standing grant", withGrant(sign(priv, nil), "tmp-15m"), "chooses grant"},
		{"answer swaps the signed grant", withGrant(sign(priv, func(s *Statement) { s.Grant = "tmp-15m" }), "all-forever"), "chooses grant"},
		{"control: the signed grant", withGrant(sign(priv, func(s *Statement) { s.Grant = "tmp-15m" }), "tmp-15m"), ""},
		{"control: once is this call alone", withGrant(sign(priv, nil), "once"), ""},
		{"signed by another key", answer(sign(otherPriv, nil)), "does not match the service's public key"},
		{"statement altered after signing", answer(altered), "does not match the service's public key"},
		{"signed for another request", answer(sign(priv, func(s *Statement) { s.ID = "forge-0" })), "signed for request"},
		{"signed for other arguments", answer(sign(priv, func(s *Statement) { s.ArgsDigest = strings.Repeat("1", 64) })), "other arguments"},
		{"signed for another tool", answer(sign(priv, func(s *Statement) { s.Tool = "read_file" })), "signed for tool"},
		{"signed for another audience", answer(sign(priv, func(s *Statement) { s.Audience = "other@host" })), "signed for audience"},
		{"signed for another principal", answer(sign(priv, func(s *Statement) { s.Principal = "eve" })), "signed for principal"},
		{"signed for another expiry", answer(sign(priv, func(s *Statement) { s.ExpiresAt = s.ExpiresAt.Add(time.Hour) })), "another expiry"},
		{"decided after expiry", answer(sign(priv, func(s *Statement) { s.DecidedAt = req.ExpiresAt })), "not before the request expired"},
		{"signed denial", answer(sign(priv, func(s *Statement) { s.Approved = false })), "does not approve"},
		{"answer adds an approver", answer(sign(priv, nil), "alice", "bob"), "differ from the answer"},
		{"signed approver swapped", answer(sign(priv, func(s *Statement) { s.Approvers = []string{"bob"} })), "differ from the answer"},
		{"bad signature encoding", answer(map[string]any{"statement": json.RawMessage(unknownField.Statement), "signature": "!!"}), "not base64"},
		{"extra field in the envelope", answer(map[string]any{"statement": json.RawMessage(unknownField.Statement), "signature": unknownField.Signature, "x": 1}), "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(answering(t, 200, tc.body))
			defer srv.Close()
			d, err := newHook(t, srv.URL, WithServiceKey(pub)).Approve(context.Background(), req)
			if tc.want == "" {
				if err != nil || !d.Approved || len(d.Evidence) == 0 {
					t.Fatalf("control refused: %+v, %v", d, err)
				}
				return
			}
			if err == nil || d.Approved || !errors.Is(err, ErrAttestation) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %+v, %v; want a refusal naming %q", d, err, tc.want)
			}
		})
	}
}

// The gate journals the evidence and the assurance; an auditor with the
// public key re-checks it from the journal file alone, and a record whose
// evidence was swapped or edited fails.
func TestJournalCarriesSignedDecision(t *testing.T) {
	pub, priv := newKey(t)
	e := newEnv(t, ServiceOptions{SigningKey: priv})
	e.hook = newHook(t, e.srv.URL+"/webhook", WithServiceKey(pub))
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
	n, err := CheckJournal(bytes.NewReader(data), pub, nil)
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
	if _, err := CheckJournalRecord(other, recs[0]); !errors.Is(err, ErrAttestation) {
		t.Errorf("another key: %v", err)
	}
	swapped := recs[0]
	swapped.Evidence = recs[1].Evidence // b.txt's approval under a.txt's record
	if _, err := CheckJournalRecord(pub, swapped); !errors.Is(err, ErrAttestation) {
		t.Errorf("evidence of another call: %v", err)
	}
	claimed := recs[0]
	claimed.By = "alice,bob"
	if _, err := CheckJournalRecord(pub, claimed); !errors.Is(err, ErrAttestation) {
		t.Errorf("record names an approver the statement does not: %v", err)
	}
	bare := recs[0]
	bare.Evidence = nil
	if _, err := CheckJournalRecord(pub, bare); !errors.Is(err, ErrAttestation) {
		t.Errorf("record without evidence: %v", err)
	}
	if _, err := CheckJournal(bytes.NewReader(bytes.Replace(data, []byte(`"signature":"`), []byte(`"signature":"A`), 1)), pub, nil); err == nil {
		t.Error("an edited signature in the file passed")
	}
}

// pendingID waits for the one pending request and returns its id.
func pendingID(t *testing.T, e *env) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_, out := e.api("GET", "/api/requests", "carol")
		if list, ok := out["requests"].([]any); ok {
			for _, it := range list {
				if m, ok := it.(map[string]any); ok && m["status"] == StatusPending {
					return m["id"].(string)
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no pending request")
	return ""
}
