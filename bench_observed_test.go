package mcpsafe_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/metrics"
	"github.com/mcpsafe/mcpsafe/tracing/oteltracing"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// observedOptions turns on everything `--metrics` and tracing turn on: the
// Prometheus observer, timed journal and ledger wrappers, and a sampled span
// per call and step handed to a batching span processor (whose exporter
// discards them, as an OTLP exporter ships them off the call path).
func observedOptions(b *testing.B, j *journal.Journal) mcpsafe.Options {
	m := metrics.New()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	return mcpsafe.Options{
		Audience: "bench", Mode: mcpsafe.ModeAuto,
		Journal:  m.Journal(j),
		Ledger:   m.Ledger(ledger.NewMemory(10_000)),
		Observer: m,
		Tracer:   oteltracing.New(tp),
	}
}

func benchJournal(b *testing.B, name string) *journal.Journal {
	j, err := journal.Open(filepath.Join(b.TempDir(), name))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	return j
}

// BenchmarkGateAutoApprovedJournalObserved is BenchmarkGateAutoApprovedJournal
// with metrics and tracing on.
func BenchmarkGateAutoApprovedJournalObserved(b *testing.B) {
	w := &benchWork{}
	cs := gatedSessionWith(b, w, observedOptions(b, benchJournal(b, "journal.jsonl")), true, nil)
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

// BenchmarkObservedVsUnobserved runs the journaled auto-approved call with
// metrics and tracing off and on, alternating call by call in one loop, so
// that the fsync's drift on a shared disk hits both alike; it reports the
// ratio of the total times (scripts/bench: goal <= 1.05).
func BenchmarkObservedVsUnobserved(b *testing.B) {
	wOff, wOn := &benchWork{}, &benchWork{}
	off := gatedSessionWith(b, wOff, mcpsafe.Options{Audience: "bench", Mode: mcpsafe.ModeAuto, Journal: benchJournal(b, "off.jsonl")}, true, nil)
	on := gatedSessionWith(b, wOn, observedOptions(b, benchJournal(b, "on.jsonl")), true, nil)
	tOff, tOn := alternate(b, off, on)
	mustRun(b, wOff, int64(b.N))
	mustRun(b, wOn, int64(b.N))
	b.ReportMetric(float64(tOff.Nanoseconds())/float64(b.N), "off-ns/call")
	b.ReportMetric(float64(tOn.Nanoseconds())/float64(b.N), "on-ns/call")
	b.ReportMetric(float64(tOn)/float64(tOff), "ratio")
}

// alternate makes b.N calls on each of two sessions, alternating call by
// call (ABBA: a drift in the machine's speed hits both alike), and returns
// the total time each took. It runs the benchmark's timer.
func alternate(b *testing.B, x, y *mcp.ClientSession) (tx, ty time.Duration) {
	one := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		if res := benchCall(b, cs, benchParams()); res.IsError {
			b.Fatal(text(res))
		}
		return time.Since(start)
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			tx += one(x)
			ty += one(y)
		} else {
			ty += one(y)
			tx += one(x)
		}
	}
	b.StopTimer()
	return tx, ty
}
