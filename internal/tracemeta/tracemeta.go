// Package tracemeta carries W3C trace context (traceparent, tracestate) in
// an MCP request's _meta, so that a gated call joins its caller's trace and
// a proxy passes its own span on to the upstream server.
package tracemeta

import (
	"context"
	"sort"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// carrier is a request's _meta as a propagation.TextMapCarrier.
type carrier mcp.Meta

// Get returns the string value of key, or "".
func (c carrier) Get(key string) string {
	v, _ := c[key].(string)
	return v
}

// Set sets key to value.
func (c carrier) Set(key, value string) { c[key] = value }

// Keys lists the keys, sorted.
func (c carrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var traceContext = propagation.TraceContext{}

// Extract returns ctx with the remote span context that meta carries, if
// any.
func Extract(ctx context.Context, meta mcp.Meta) context.Context {
	return traceContext.Extract(ctx, carrier(meta))
}

// Inject writes the trace context of ctx's span into meta (a request's
// _meta), creating the map if needed. A proxy calls it before relaying a
// call upstream, so that the upstream's spans join the trace as children
// of the gate's.
func Inject(ctx context.Context, meta mcp.Meta) mcp.Meta {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	if meta == nil {
		meta = mcp.Meta{}
	}
	traceContext.Inject(ctx, carrier(meta))
	return meta
}
