package mcpsafe_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// grantBenchSession is gatedSession with a ledger and a standing grant
// policy; with grant set, the first call is approved through elicitation
// with the largest grant offered, so that every later call runs under it.
func grantBenchSession(b *testing.B, w *benchWork, store ledger.Ledger, grant bool) *mcp.ClientSession {
	return grantBenchSessionJournal(b, w, store, journal.Discard, grant)
}

func grantBenchSessionJournal(b *testing.B, w *benchWork, store ledger.Ledger, j journal.Appender, grant bool) *mcp.ClientSession {
	b.Helper()
	g, err := mcpsafe.New(mcpsafe.Options{Audience: "bench", Journal: j, Ledger: store})
	if err != nil {
		b.Fatal(err)
	}
	tool := mcpsafe.Tool{
		Name:        "touch",
		InputSchema: pathSchema,
		Grants:      &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: ledger.MaxStandingUses + 1, ClientRelayed: true},
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "touch a note"}, nil
		},
		Execute: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			var a benchArgs
			if err := c.Decode(&a); err != nil {
				return nil, err
			}
			return w.do(a.Path), nil
		},
	}
	if !grant {
		tool.AutoApprove = []mcpsafe.Rule{{Name: "bench", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}}
	}
	s := newBenchServer()
	if err := g.Register(s, tool); err != nil {
		b.Fatal(err)
	}
	asked := 0
	cs := benchSession(b, s, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-1-2"}}, nil
	}})
	if res := benchCall(b, cs, benchParams()); res.IsError {
		b.Fatal(text(res))
	}
	if grant && asked != 1 {
		b.Fatalf("asked %d times while making the grant, want 1", asked)
	}
	b.Cleanup(func() {
		if asked > 1 {
			b.Errorf("a covered call asked (%d times)", asked)
		}
	})
	w.n.Store(0)
	return cs
}

func benchRedis(b *testing.B) ledger.Ledger {
	b.Helper()
	prefix := "mcpsafe:bench-grants:" + uniqueName() + ":"
	store, err := ledger.Open(context.Background(), "redis://127.0.0.1:6379/0?ledger_prefix="+prefix)
	if err != nil {
		b.Skipf("SKIPPED: Redis: %v", err)
	}
	b.Cleanup(func() {
		if ss, ok := store.(ledger.StandingStore); ok {
			grants.Revoke(context.Background(), ss, "the benchmark", func(grants.Info) bool { return true })
		}
		store.Close()
	})
	return store
}

// BenchmarkGrantCost runs the covered call and the auto-approved call
// alternating call by call in one loop (so that drift on a shared machine
// hits both alike) and reports the ratio of their total times
// (scripts/bench-grants: goal <= 1.20). "nojournal" is the worst case for
// the ratio: the cheapest call there is, in memory, with nothing written;
// "journal" is how the gate runs in production, with a real fsync'd journal
// written before each call runs (and a grant-used record for each use).
func BenchmarkGrantCost(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) ledger.Ledger
	}{
		{"memory", func(*testing.B) ledger.Ledger { return ledger.NewMemory(0) }},
		{"redis", benchRedis},
	}
	for _, st := range stores {
		for _, journaled := range []bool{false, true} {
			name := st.name + "/nojournal"
			if journaled {
				name = st.name + "/journal"
			}
			b.Run(name, func(b *testing.B) {
				jr := func(n string) journal.Appender {
					if !journaled {
						return journal.Discard
					}
					return benchJournal(b, n)
				}
				store := st.open(b)
				wCov, wAuto := &benchWork{}, &benchWork{}
				cov := grantBenchSessionJournal(b, wCov, store, jr("covered.jsonl"), true)
				auto := grantBenchSessionJournal(b, wAuto, store, jr("auto.jsonl"), false)
				tCov, tAuto := alternate(b, cov, auto)
				mustRun(b, wCov, int64(b.N))
				mustRun(b, wAuto, int64(b.N))
				b.ReportMetric(float64(tCov.Nanoseconds())/float64(b.N), "covered-ns/call")
				b.ReportMetric(float64(tAuto.Nanoseconds())/float64(b.N), "auto-ns/call")
				b.ReportMetric(float64(tCov)/float64(tAuto), "ratio")
			})
		}
	}
}
