package mcpsafe_test

// Benchmarks of the gate against the same tool ungated, over the real SDK
// client and server on the in-memory transport. scripts/bench runs them in
// one go test invocation and prints the ratios (BENCH <name> ratio=<x.xx>).
// The ratio benchmarks use NoJournal: with a real journal the fsync of the
// approval record dominates, and BenchmarkGateAutoApprovedJournal shows
// that cost on its own.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type benchArgs struct {
	Path string `json:"path"`
}

// benchWork is the tool's own work, identical gated and ungated.
type benchWork struct{ n atomic.Int64 }

func (w *benchWork) do(path string) *mcp.CallToolResult {
	w.n.Add(1)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched " + path}}}
}

func benchSession(b *testing.B, server *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	b.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func newBenchServer() *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "bench-server", Version: "1"}, nil)
}

// ungatedSession registers the work with a plain mcp.AddTool: the baseline.
func ungatedSession(b *testing.B, w *benchWork) *mcp.ClientSession {
	s := newBenchServer()
	mcp.AddTool(s, &mcp.Tool{Name: "touch", Description: "touch"}, func(_ context.Context, _ *mcp.CallToolRequest, a benchArgs) (*mcp.CallToolResult, any, error) {
		return w.do(a.Path), nil, nil
	})
	return benchSession(b, s, nil)
}

// rawUngatedSession registers the work with the SDK's raw Server.AddTool:
// no input schema inference or output handling, just the arguments decoded
// by hand. It is the cheapest honest ungated call, so that no ratio against
// it is below 1 by construction.
func rawUngatedSession(b *testing.B, w *benchWork) *mcp.ClientSession {
	s := newBenchServer()
	s.AddTool(&mcp.Tool{Name: "touch", Description: "touch", InputSchema: pathSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a benchArgs
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return nil, err
		}
		return w.do(a.Path), nil
	})
	return benchSession(b, s, nil)
}

// gatedSession registers the same work behind the gate.
func gatedSession(b *testing.B, w *benchWork, mode mcpsafe.Mode, j journal.Appender, auto bool, copts *mcp.ClientOptions) *mcp.ClientSession {
	b.Helper()
	return gatedSessionWith(b, w, mcpsafe.Options{Audience: "bench", Journal: j, Mode: mode}, auto, copts)
}

func gatedSessionWith(b *testing.B, w *benchWork, opts mcpsafe.Options, auto bool, copts *mcp.ClientOptions) *mcp.ClientSession {
	b.Helper()
	g, err := mcpsafe.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	tool := mcpsafe.Tool{
		Name:        "touch",
		InputSchema: pathSchema,
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
	if auto {
		tool.AutoApprove = []mcpsafe.Rule{{Name: "bench", Match: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) { return true, nil }}}
	}
	s := newBenchServer()
	if err := g.Register(s, tool); err != nil {
		b.Fatal(err)
	}
	return benchSession(b, s, copts)
}

// benchParams returns fresh params for every call: the SDK client writes
// its capabilities into the params' _meta, so one params value shared by
// two sessions would carry the first session's capabilities into the other.
func benchParams() *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"path": "cache.txt"}}
}

func benchCall(b *testing.B, cs *mcp.ClientSession, p *mcp.CallToolParams) *mcp.CallToolResult {
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

func mustRun(b *testing.B, w *benchWork, want int64) {
	b.Helper()
	if got := w.n.Load(); got != want {
		b.Fatalf("the work ran %d times, want %d", got, want)
	}
}

func BenchmarkUngated(b *testing.B) {
	w := &benchWork{}
	cs := ungatedSession(b, w)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if res := benchCall(b, cs, benchParams()); res.IsError {
			b.Fatal(text(res))
		}
	}
	b.StopTimer()
	mustRun(b, w, int64(b.N))
}

func BenchmarkUngatedRaw(b *testing.B) {
	w := &benchWork{}
	cs := rawUngatedSession(b, w)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if res := benchCall(b, cs, benchParams()); res.IsError {
			b.Fatal(text(res))
		}
	}
	b.StopTimer()
	mustRun(b, w, int64(b.N))
}

// BenchmarkGateAutoApproved: a gated call that a rule auto-approves.
func BenchmarkGateAutoApproved(b *testing.B) {
	w := &benchWork{}
	cs := gatedSession(b, w, mcpsafe.ModeAuto, journal.Discard, true, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if res := benchCall(b, cs, benchParams()); res.IsError {
			b.Fatal(text(res))
		}
	}
	b.StopTimer()
	mustRun(b, w, int64(b.N))
}

// BenchmarkGateAutoApprovedJournal is the same with a real, fsync'd journal.
func BenchmarkGateAutoApprovedJournal(b *testing.B) {
	j, err := journal.Open(filepath.Join(b.TempDir(), "journal.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	w := &benchWork{}
	cs := gatedSession(b, w, mcpsafe.ModeAuto, j, true, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if res := benchCall(b, cs, benchParams()); res.IsError {
			b.Fatal(text(res))
		}
	}
	b.StopTimer()
	mustRun(b, w, int64(b.N))
}

// BenchmarkTokenRoundTrip: the first call returns a token, the second
// redeems it (two tools/call round trips, one execution).
func BenchmarkTokenRoundTrip(b *testing.B) {
	w := &benchWork{}
	cs := gatedSession(b, w, mcpsafe.ModeToken, journal.Discard, false, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		res := benchCall(b, cs, benchParams())
		sc, _ := res.StructuredContent.(map[string]any)
		tok, _ := sc["approval_token"].(string)
		if tok == "" {
			b.Fatalf("no token: %v", text(res))
		}
		second := &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"path": "cache.txt", mcpsafe.TokenField: tok}}
		if res := benchCall(b, cs, second); res.IsError {
			b.Fatal(text(res))
		}
	}
	b.StopTimer()
	mustRun(b, w, int64(b.N))
}

// BenchmarkElicitRoundTrip: an MRTR client whose elicitation handler
// accepts at once; the SDK client retries with the answer (one CallTool,
// two round trips, one execution).
func BenchmarkElicitRoundTrip(b *testing.B) {
	w := &benchWork{}
	cs := gatedSession(b, w, mcpsafe.ModeElicit, journal.Discard, false, &mcp.ClientOptions{ElicitationHandler: accept})
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if res := benchCall(b, cs, benchParams()); res.IsError {
			b.Fatal(text(res))
		}
	}
	b.StopTimer()
	mustRun(b, w, int64(b.N))
}
