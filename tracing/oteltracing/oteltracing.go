// Package oteltracing gives the gate's spans to OpenTelemetry: New(tp) is
// the tracing.Tracer to set in mcpsafe.Options.Tracer. A gated call joins
// its caller's trace when the request's _meta carries W3C trace context.
//
//	opts := mcpsafe.Options{Audience: "notes@host", Journal: j, Tracer: oteltracing.New(tp)}
package oteltracing

import (
	"context"

	"github.com/mcpsafe/mcpsafe/internal/tracemeta"
	"github.com/mcpsafe/mcpsafe/tracing"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of the gate's spans.
const Name = "github.com/mcpsafe/mcpsafe"

// New returns a Tracer that starts spans from tp (nil: a no-op provider,
// whose spans record nothing but still carry the caller's trace context
// on, to a proxy's upstream).
func New(tp trace.TracerProvider) tracing.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tracer{tp.Tracer(Name)}
}

type tracer struct{ t trace.Tracer }

func (t tracer) Call(ctx context.Context, tool string, meta map[string]any) (context.Context, tracing.Span) {
	if meta != nil {
		ctx = tracemeta.Extract(ctx, mcp.Meta(meta))
	}
	ctx, s := t.t.Start(ctx, "mcpsafe.call", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.tool.name", tool)))
	return ctx, span{s}
}

func (t tracer) Step(ctx context.Context, name string, attrs ...tracing.Attribute) (context.Context, tracing.Span) {
	var opts []trace.SpanStartOption
	if len(attrs) > 0 {
		opts = append(opts, trace.WithAttributes(kvs(attrs)...))
	}
	ctx, s := t.t.Start(ctx, name, opts...)
	return ctx, span{s}
}

type span struct{ s trace.Span }

func (s span) Fail(description string, attrs ...tracing.Attribute) {
	if len(attrs) > 0 {
		s.s.SetAttributes(kvs(attrs)...)
	}
	s.s.SetStatus(codes.Error, description)
}

func (s span) End() { s.s.End() }

func kvs(attrs []tracing.Attribute) []attribute.KeyValue {
	out := make([]attribute.KeyValue, len(attrs))
	for i, a := range attrs {
		out[i] = attribute.String(a.Key, a.Value)
	}
	return out
}
