package mcpsafe

import (
	"context"

	"github.com/mcpsafe/mcpsafe/internal/tracemeta"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// tracerName is the instrumentation scope of the gate's spans.
const tracerName = "github.com/mcpsafe/mcpsafe"

func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(tracerName)
}

// startCall starts the span of one gated call, as a child of the caller's
// span when _meta carries a valid traceparent. Only the tool name is
// recorded: never arguments or principals.
func (g *Gate) startCall(ctx context.Context, tool string, req *mcp.CallToolRequest) (context.Context, trace.Span) {
	if req != nil && req.Params != nil && req.Params.Meta != nil {
		ctx = tracemeta.Extract(ctx, req.Params.Meta)
	}
	if g.opts.TracerProvider == nil {
		// No tracer: a noop span would only allocate a context carrying
		// the caller's span context, which ctx carries already.
		return ctx, noSpan
	}
	return g.tracer.Start(ctx, "mcpsafe.call", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("mcp.tool.name", tool)))
}

// step starts the span of one step of the call path (decode, rules,
// resolve, preview, ask, redeem, recheck, journal, execute).
func (g *Gate) step(ctx context.Context, name string) (context.Context, trace.Span) {
	if g.opts.TracerProvider == nil {
		return ctx, noSpan
	}
	return g.tracer.Start(ctx, "mcpsafe."+name)
}

// noSpan is the span of every step when no TracerProvider is set: a
// non-recording span whose End and attributes do nothing.
var noSpan = trace.SpanFromContext(context.Background())

// endStep ends a step's span, marking a refusal with its reason code.
func endStep(span trace.Span, r *Refusal) {
	if r != nil {
		span.SetAttributes(attribute.String("mcpsafe.reason", r.Reason))
		span.SetStatus(codes.Error, r.Reason)
	}
	span.End()
}

// tracedJournal gives every journal write a "journal" step span.
type tracedJournal struct {
	j Journal
	t trace.Tracer
}

func (tj tracedJournal) Append(ctx context.Context, r journal.Record) error {
	ctx, span := tj.t.Start(ctx, "mcpsafe.journal", trace.WithAttributes(attribute.String("mcpsafe.decision", r.Decision)))
	defer span.End()
	err := tj.j.Append(ctx, r)
	if err != nil {
		span.SetStatus(codes.Error, "record not written")
	}
	return err
}

// tracedExecute gives a tool's Execute an "execute" step span; the tool
// (a proxy relaying upstream) sees it in ctx.
func tracedExecute(t trace.Tracer, exec func(ctx context.Context, c *Call, in, st any, a *Approval) (*mcp.CallToolResult, error)) func(ctx context.Context, c *Call, in, st any, a *Approval) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, c *Call, in, st any, a *Approval) (*mcp.CallToolResult, error) {
		ctx, span := t.Start(ctx, "mcpsafe.execute")
		defer span.End()
		res, err := exec(ctx, c, in, st, a)
		if err != nil || res != nil && res.IsError {
			span.SetStatus(codes.Error, "the tool failed")
		}
		return res, err
	}
}
