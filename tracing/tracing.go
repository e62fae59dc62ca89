// Package tracing is the gate's side of tracing: the Tracer it starts its
// spans with (one per gated call, one per step: decode, rules, resolve,
// preview, ask, redeem, recheck, journal, execute) and the Span it ends.
// Package tracing/oteltracing implements it with OpenTelemetry; set it in
// mcpsafe.Options.Tracer. The root links no tracing library, so a program
// that does not trace does not carry one.
//
// Spans carry tool names, step names, decision words and reason codes:
// never arguments, principals or sessions.
package tracing

import "context"

// Tracer starts the gate's spans.
type Tracer interface {
	// Call starts the span of one gated call, named "mcpsafe.call", of kind
	// server, with the attribute mcp.tool.name. Its parent is the span
	// whose W3C trace context (traceparent, tracestate) the request's
	// _meta carries, if valid, else ctx's.
	Call(ctx context.Context, tool string, meta map[string]any) (context.Context, Span)
	// Step starts a child span of ctx's, named name, with attrs.
	Step(ctx context.Context, name string, attrs ...Attribute) (context.Context, Span)
}

// Span is one started span.
type Span interface {
	// Fail marks the span's work as failed: an error status with
	// description, and attrs added.
	Fail(description string, attrs ...Attribute)
	// End ends the span.
	End()
}

// Attribute is a string attribute of a span.
type Attribute struct {
	Key, Value string
}
