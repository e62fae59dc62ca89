package mcpsafe_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/tracemeta"
	"github.com/mcpsafe/mcpsafe/tracing/oteltracing"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

func tracedEnv(t *testing.T, adjust func(*mcpsafe.Options, *[]mcpsafe.Tool)) (*env, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Tracer = oteltracing.New(tp)
		if adjust != nil {
			adjust(o, tools)
		}
	})
	return e, rec
}

func callWithMeta(t *testing.T, cs *mcp.ClientSession, meta mcp.Meta, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: "delete_note", Arguments: args}
	p.Meta = meta
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// spansByName indexes the ended spans; names may repeat (resolve and
// preview run again under recheck).
func spansByName(rec *tracetest.SpanRecorder) map[string][]sdktrace.ReadOnlySpan {
	out := map[string][]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		out[s.Name()] = append(out[s.Name()], s)
	}
	return out
}

// A gated call approved in-call leaves one span per step, all in the
// caller's trace (W3C trace context in _meta), under one call span whose
// parent is the caller's span. No argument value becomes an attribute.
func TestTraceJoinsCallersTrace(t *testing.T) {
	e, rec := tracedEnv(t, nil)
	cs := e.connect(client{protocol: "2025-11-25", elicit: accept})
	meta := mcp.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"}
	wantExecuted(t, callWithMeta(t, cs, meta, map[string]any{"path": "cache.txt"}))

	spans := spansByName(rec)
	for _, name := range []string{"mcpsafe.call", "mcpsafe.decode", "mcpsafe.rules", "mcpsafe.resolve", "mcpsafe.preview",
		"mcpsafe.ask", "mcpsafe.redeem", "mcpsafe.recheck", "mcpsafe.journal", "mcpsafe.execute"} {
		if len(spans[name]) == 0 {
			t.Errorf("no %s span (have %v)", name, names(rec))
		}
	}
	if len(spans["mcpsafe.call"]) != 1 {
		t.Fatalf("want one call span, got %d", len(spans["mcpsafe.call"]))
	}
	call := spans["mcpsafe.call"][0]
	if call.Parent().SpanID().String() != callerSpan || !call.Parent().IsRemote() {
		t.Fatalf("call span's parent %v, want the caller's span %s", call.Parent().SpanID(), callerSpan)
	}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID().String() != callerTrace {
			t.Errorf("%s is in trace %s, not the caller's", s.Name(), s.SpanContext().TraceID())
		}
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.Emit(), "cache.txt") || strings.Contains(a.Value.Emit(), "test-client") {
				t.Errorf("%s carries %s=%s", s.Name(), a.Key, a.Value.Emit())
			}
		}
	}
	// resolve and preview ran twice: once under rules, once under recheck.
	if len(spans["mcpsafe.resolve"]) != 2 || len(spans["mcpsafe.preview"]) != 2 {
		t.Fatalf("resolve %d, preview %d spans; want 2 each", len(spans["mcpsafe.resolve"]), len(spans["mcpsafe.preview"]))
	}
	recheck := spans["mcpsafe.recheck"][0].SpanContext().SpanID()
	under := 0
	for _, s := range append(spans["mcpsafe.resolve"], spans["mcpsafe.preview"]...) {
		if s.Parent().SpanID() == recheck {
			under++
		}
	}
	if under != 2 {
		t.Fatalf("%d of the resolve/preview spans are under recheck, want 2", under)
	}
}

// Control: without trace context the call starts its own trace; and a
// refusal marks its step and the call span with the reason code.
func TestTraceWithoutCallerContext(t *testing.T) {
	e, rec := tracedEnv(t, nil)
	cs := e.connect(client{protocol: "2025-11-25", elicit: answer("decline", nil)})
	wantRefused(t, callWithMeta(t, cs, nil, map[string]any{"path": "cache.txt"}), mcpsafe.ReasonDeclined)
	spans := spansByName(rec)
	if len(spans["mcpsafe.call"]) != 1 {
		t.Fatalf("spans %v", names(rec))
	}
	call := spans["mcpsafe.call"][0]
	if call.Parent().IsValid() || call.SpanContext().TraceID().String() == callerTrace {
		t.Fatalf("call span has parent %v", call.Parent())
	}
	if call.Status().Description != mcpsafe.ReasonDeclined {
		t.Fatalf("call span status %+v", call.Status())
	}
	if len(spans["mcpsafe.execute"]) != 0 || len(spans["mcpsafe.recheck"]) != 0 {
		t.Fatalf("a declined call has execute or recheck spans: %v", names(rec))
	}
	// Its one journal write is the refusal record.
	if j := spans["mcpsafe.journal"]; len(j) != 1 || j[0].Attributes()[0].Value.Emit() != "declined" {
		t.Fatalf("journal spans %v", j)
	}
	// A malformed traceparent is ignored, not trusted.
	rec2 := len(rec.Ended())
	wantRefused(t, callWithMeta(t, cs, mcp.Meta{"traceparent": "00-zz-" + callerSpan + "-01"}, map[string]any{"path": "cache.txt"}), mcpsafe.ReasonDeclined)
	for _, s := range rec.Ended()[rec2:] {
		if s.Name() == "mcpsafe.call" && s.Parent().IsValid() {
			t.Fatalf("malformed traceparent became a parent: %v", s.Parent())
		}
	}
}

func names(rec *tracetest.SpanRecorder) []string {
	var out []string
	for _, s := range rec.Ended() {
		out = append(out, s.Name())
	}
	return out
}

// InjectTraceContext writes the current span into an outgoing _meta (what
// the proxy relays upstream); without a span it leaves _meta alone.
func TestInjectTraceContext(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("t").Start(context.Background(), "s")
	defer span.End()
	meta := tracemeta.Inject(ctx, nil)
	want := "00-" + span.SpanContext().TraceID().String() + "-" + span.SpanContext().SpanID().String() + "-01"
	if meta["traceparent"] != want {
		t.Fatalf("traceparent %v, want %s", meta["traceparent"], want)
	}
	if got := tracemeta.Inject(context.Background(), nil); got != nil {
		t.Fatalf("no span, but meta %v", got)
	}
}
