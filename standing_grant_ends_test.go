package mcpsafe_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/grants/celscope"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func decline(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "decline"}, nil
}

// sharedStores opens n handles on one ledger of kind (one object for
// memory, which is in-process).
func sharedStores(t *testing.T, kind string, n int) []ledger.StandingStore {
	t.Helper()
	var url string
	switch kind {
	case "memory":
		m := ledger.NewMemory(0)
		t.Cleanup(func() { m.Close() })
		out := make([]ledger.StandingStore, n)
		for i := range out {
			out[i] = m
		}
		return out
	case "file":
		url = "file:" + filepath.Join(t.TempDir(), "ledger.db")
	default:
		url = sharedLedgerURL(t, kind)
	}
	var out []ledger.StandingStore
	for i := 0; i < n; i++ {
		s, err := ledger.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s.(ledger.StandingStore))
	}
	return out
}

// replica is one gate on a shared ledger, with its own journal.
func replica(t *testing.T, store ledger.StandingStore, keys mcpsafe.Keys, writes *notes, p *mcpsafe.GrantPolicy, sweep time.Duration) *env {
	t.Helper()
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Ledger, o.Keys, o.GrantEndSweep = store.(ledger.Ledger), keys, sweep
		o.GrantCEL = celscope.New()
		o.Principal = func(req *mcp.CallToolRequest) string {
			return "client:" + req.Session.InitializeParams().ClientInfo.Name
		}
		*tools = append(*tools, writes.writeTool(p))
	})
	t.Cleanup(func() { e.gate.Close() })
	return e
}

// endsOf returns the grant-ended records about grant id in the journals.
func endsOf(id string, envs ...*env) []journal.Record {
	var out []journal.Record
	for _, e := range envs {
		e.journal.mu.Lock()
		for _, r := range e.journal.recs {
			if r.Decision == journal.GrantEnded && r.Grant == id {
				out = append(out, r)
			}
		}
		e.journal.mu.Unlock()
	}
	return out
}

func grantOf(t *testing.T, store ledger.StandingStore, principal string) string {
	t.Helper()
	list, err := grants.List(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range list {
		if g.Principal == principal {
			return g.ID
		}
	}
	t.Fatalf("no live grant of %s in %+v", principal, list)
	return ""
}

// Every end of a standing grant (expiry, revocation from outside the gate,
// last use) is journaled exactly once by the gates sharing the ledger,
// however many replicas look at once; a grant still live is never journaled
// as ended (control), and an ended grant stays unusable after its end is
// journaled.
func TestGrantEndJournaledOnceAcrossReplicas(t *testing.T) {
	keys, err := mcpsafe.NewKeys(bytesOf(11, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"memory", "file", "redis", "postgres"} {
		for _, end := range []string{ledger.EndExpired, ledger.EndRevoked, ledger.EndUsedUp} {
			t.Run(kind+"/"+end, func(t *testing.T) {
				ctx := context.Background()
				stores := sharedStores(t, kind, 2)
				p := grantPolicy() // 3 uses
				if end == ledger.EndExpired {
					p.MaxTTL = 2 * time.Second // long enough that a loaded machine reaches the control sweep before it ends
				}
				writes := newNotes()
				a, b := replica(t, stores[0], keys, writes, p, -1), replica(t, stores[1], keys, writes, p, -1)
				alice := &asker{choice: tmpFor15m}
				csA := a.connect(client{name: "alice", elicit: alice.elicit})
				wantExecuted(t, callTool(t, csA, "write_note", map[string]any{"path": "tmp/a", "text": "x"}))
				id := grantOf(t, stores[0], "client:alice")
				var live string
				if end != ledger.EndExpired {
					bob := &asker{choice: tmpFor15m}
					wantExecuted(t, callTool(t, b.connect(client{name: "bob", elicit: bob.elicit}), "write_note", map[string]any{"path": "tmp/b", "text": "x"}))
					live = grantOf(t, stores[1], "client:bob")
				}
				// Control: nothing has ended; the sweeps journal nothing.
				for _, e := range []*env{a, b} {
					if n, err := e.gate.JournalGrantEnds(ctx); n != 0 || err != nil {
						t.Fatalf("sweep before any end = %d, %v", n, err)
					}
				}
				switch end {
				case ledger.EndExpired:
					waitFor(t, "the ledger sees the grant expired", func() bool {
						ends, err := stores[1].EndedStanding(ctx)
						if err != nil {
							t.Fatal(err)
						}
						return len(ends) == 1
					})
				case ledger.EndRevoked:
					ended, err := grants.Revoke(ctx, stores[1], "admin via the test", func(g grants.Info) bool { return g.ID == id })
					if err != nil || len(ended) != 1 {
						t.Fatalf("RevokeGrants = %+v, %v", ended, err)
					}
				case ledger.EndUsedUp:
					csB := b.connect(client{name: "alice", elicit: (&asker{}).elicit})
					for _, path := range []string{"tmp/c", "tmp/d"} {
						wantExecuted(t, callTool(t, csB, "write_note", map[string]any{"path": path, "text": "x"}))
					}
				}
				// Both replicas sweep at once, several times over.
				var wg sync.WaitGroup
				for i := 0; i < 8; i++ {
					wg.Add(1)
					go func(e *env) {
						defer wg.Done()
						for j := 0; j < 3; j++ {
							if _, err := e.gate.JournalGrantEnds(ctx); err != nil {
								t.Error(err)
							}
						}
					}([]*env{a, b}[i%2])
				}
				wg.Wait()
				got := endsOf(id, a, b)
				if len(got) != 1 {
					t.Fatalf("%d grant-ended records for the grant, want exactly 1: %+v", len(got), got)
				}
				r := got[0]
				if r.Reason != end || r.Tool != "write_note" || r.Principal != "client:alice" {
					t.Fatalf("end record %+v; want reason %s for write_note by client:alice", r, end)
				}
				if end == ledger.EndRevoked && (r.By != "admin via the test" || r.Summary == "") {
					t.Fatalf("revocation record %+v lacks who revoked", r)
				}
				if live != "" {
					if n := len(endsOf(live, a, b)); n != 0 {
						t.Fatalf("a live grant was journaled as ended %d times", n)
					}
				}
				// The ended grant covers nothing, on either replica.
				before := writes.executions()
				for _, e := range []*env{a, b} {
					wantRefused(t, callTool(t, e.connect(client{name: "alice", elicit: decline}), "write_note",
						map[string]any{"path": "tmp/z", "text": "x"}), mcpsafe.ReasonDeclined)
				}
				if writes.executions() != before {
					t.Fatal("an ended grant covered a call")
				}
				// A gate started later finds nothing left to journal.
				c := replica(t, stores[0], keys, writes, p, -1)
				if n, err := c.gate.JournalGrantEnds(ctx); n != 0 || err != nil {
					t.Fatalf("a later gate journaled %d ends (%v); want 0", n, err)
				}
			})
		}
	}
}

// An end that happens while no gate runs is journaled by the next gate that
// starts, from its background sweep.
func TestGrantEndJournaledByNextGate(t *testing.T) {
	keys, err := mcpsafe.NewKeys(bytesOf(12, 32))
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"file", "redis", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			stores := sharedStores(t, kind, 3)
			writes := newNotes()
			a := replica(t, stores[0], keys, writes, grantPolicy(), -1)
			alice := &asker{choice: tmpFor15m}
			wantExecuted(t, callTool(t, a.connect(client{name: "alice", elicit: alice.elicit}), "write_note", map[string]any{"path": "tmp/a", "text": "x"}))
			id := grantOf(t, stores[0], "client:alice")
			a.gate.Close()
			if ended, err := grants.Revoke(ctx, stores[1], "admin", func(grants.Info) bool { return true }); err != nil || len(ended) != 1 {
				t.Fatalf("RevokeGrants = %+v, %v", ended, err)
			}
			b := replica(t, stores[2], keys, writes, grantPolicy(), 10*time.Millisecond)
			waitFor(t, "the new gate's sweep journals the end", func() bool { return len(endsOf(id, b)) != 0 })
			if got := endsOf(id, a, b); len(got) != 1 || got[0].Reason != ledger.EndRevoked || got[0].By != "admin" {
				t.Fatalf("ends journaled: %+v; want one revocation by admin, from the new gate", got)
			}
			b.gate.Close()
			if got := endsOf(id, a, b); len(got) != 1 {
				t.Fatalf("the sweep journaled the end %d times", len(got))
			}
		})
	}
}
