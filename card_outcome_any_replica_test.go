package mcpsafe_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/ledger"
)

// What the approval card decided lives in the ledger: two gate replicas
// share a key and a real Redis or PostgreSQL ledger; the person decides in
// the card on replica A (the call runs there, once), and the model's handle
// picks the outcome up on replica B, which runs nothing. A denial reads the
// same. Control: a replica with a ledger of its own (same key) has no
// outcome to give, and says the card has not decided.
func TestCardOutcomeOnAnyReplica(t *testing.T) {
	for _, kind := range []string{"redis", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			url := sharedLedgerURL(t, kind)
			keys, err := mcpsafe.NewKeys(bytes.Repeat([]byte{3}, 32))
			if err != nil {
				t.Fatal(err)
			}
			replica := func(l ledger.Ledger) *env {
				return cardEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Keys, o.Ledger = keys, l })
			}
			open := func() ledger.Store {
				s, err := ledger.Open(context.Background(), url)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			a, b, alone := replica(open()), replica(open()), replica(ledger.NewMemory(0))
			csA, csB, csAlone := a.connectCaps(appsCaps(false), nil), b.connectCaps(appsCaps(false), nil), alone.connectCaps(appsCaps(false), nil)

			args := map[string]any{"path": "cache.txt"}
			card, handle := cardOf(t, callTool(t, csA, "delete_note", args))
			ran := decide(t, csA, card["decision"].(string), args, true)
			wantExecuted(t, ran)
			withHandle := map[string]any{"path": "cache.txt", "approval_token": handle}
			res := callTool(t, csB, "delete_note", withHandle)
			wantExecuted(t, res)
			if text(res) != text(ran) {
				t.Fatalf("B's answer %q is not A's outcome %q", text(res), text(ran))
			}
			if a.notes.executions() != 1 || b.notes.executions() != 0 {
				t.Fatalf("executions: A %d, B %d; want the one on A", a.notes.executions(), b.notes.executions())
			}
			if res := callTool(t, csAlone, "delete_note", withHandle); res.IsError || structured(t, res)["status"] != "approval_pending" {
				t.Fatalf("a replica without the shared ledger: %v %v", structured(t, res), text(res))
			}

			args = map[string]any{"path": "thesis.txt"}
			card, handle = cardOf(t, callTool(t, csA, "delete_note", args))
			wantRefused(t, decide(t, csA, card["decision"].(string), args, false), mcpsafe.ReasonDeclined)
			wantRefused(t, callTool(t, csB, "delete_note", map[string]any{"path": "thesis.txt", "approval_token": handle}), mcpsafe.ReasonDeclined)
			if a.notes.executions() != 1 || b.notes.executions() != 0 || alone.notes.executions() != 0 {
				t.Fatal("a denied call ran")
			}
		})
	}
}
