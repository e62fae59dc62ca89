package approvals

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type approverFn func(context.Context, approver.Request) (approver.Decision, error)

func (f approverFn) Approve(ctx context.Context, r approver.Request) (approver.Decision, error) {
	return f(ctx, r)
}

func (approverFn) Awaiter() approver.Awaiter       { return nil }
func (approverFn) Withdrawer() approver.Withdrawer { return nil }

type endJournal struct {
	mu   sync.Mutex
	recs []journal.Record
}

func (j *endJournal) Append(_ context.Context, r journal.Record) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recs = append(j.recs, r)
	return nil
}

func (j *endJournal) ends() []journal.Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []journal.Record
	for _, r := range j.recs {
		if r.Decision == journal.GrantEnded {
			out = append(out, r)
		}
	}
	return out
}

// A grant an approver made through the service and then revoked from its
// API is journaled by the gate sharing the ledger, as revoked by that
// approver through the API; until the revocation the gate journals no end
// (control).
func TestServiceRevocationJournaledByGate(t *testing.T) {
	ctx := context.Background()
	store := ledger.NewMemory(0)
	t.Cleanup(func() { store.Close() })
	e := newEnv(t, ServiceOptions{Grants: store})
	ids := make(chan string, 4)
	j := &endJournal{}
	g, err := mcpsafe.New(mcpsafe.Options{
		Audience: "svc-grants", Mode: mcpsafe.ModeChannel, Ledger: store, Journal: j, GrantEndSweep: -1,
		Approver: approverFn(func(ctx context.Context, r approver.Request) (approver.Decision, error) {
			ids <- r.ID
			return e.hook.Approve(ctx, r)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := mcp.NewServer(&mcp.Implementation{Name: "svc-grants", Version: "1"}, nil)
	err = g.Register(srv, mcpsafe.Tool{
		Name:        "touch",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		Grants:      &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: 5},
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "touch a name"}, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"name": "x"}})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	id := <-ids
	e.waitPending(id)
	e.approveGrant(id, "grant-1-2", "alice", 200)
	if res := <-done; res == nil || res.IsError {
		t.Fatalf("the approved call failed: %+v", res)
	}
	list, err := grants.List(ctx, store)
	if err != nil || len(list) != 1 {
		t.Fatalf("Grants = %+v, %v", list, err)
	}
	if n, err := g.JournalGrantEnds(ctx); n != 0 || err != nil || len(j.ends()) != 0 {
		t.Fatalf("before the revocation: %d ends journaled (%v): %+v", n, err, j.ends())
	}
	if code, out := e.api("POST", "/api/grants/"+list[0].ID+"/revoke", "bob"); code != 200 {
		t.Fatalf("revoke: HTTP %d %v", code, out)
	}
	if _, ok, _ := store.UseStanding(ctx, list[0].ID); ok {
		t.Fatal("the revoked grant can still be used")
	}
	if n, err := g.JournalGrantEnds(ctx); n != 1 || err != nil {
		t.Fatalf("JournalGrantEnds = %d, %v; want 1", n, err)
	}
	ends := j.ends()
	if len(ends) != 1 || ends[0].Reason != ledger.EndRevoked || ends[0].By != "bob via the approval service API" ||
		ends[0].Grant != list[0].ID || ends[0].Tool != "touch" {
		t.Fatalf("end records %+v; want one revocation by bob via the approval service API", ends)
	}
	if n, _ := g.JournalGrantEnds(ctx); n != 0 || len(j.ends()) != 1 {
		t.Fatal("the revocation was journaled twice")
	}
}
