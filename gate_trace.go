package mcpsafe

import (
	"context"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/tracing"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// noTracer is the Tracer of a gate without Options.Tracer: it starts
// nothing.
type noTracer struct{}

func (noTracer) Call(ctx context.Context, _ string, _ map[string]any) (context.Context, tracing.Span) {
	return ctx, noSpan{}
}

func (noTracer) Step(ctx context.Context, _ string, _ ...tracing.Attribute) (context.Context, tracing.Span) {
	return ctx, noSpan{}
}

type noSpan struct{}

func (noSpan) Fail(string, ...tracing.Attribute) {}
func (noSpan) End()                              {}

func newTracer(t tracing.Tracer) tracing.Tracer {
	if t == nil {
		return noTracer{}
	}
	return t
}

// startCall starts the span of one gated call, as a child of the caller's
// span when _meta carries a valid traceparent. Only the tool name is
// recorded: never arguments or principals.
func (g *Gate) startCall(ctx context.Context, tool string, req *mcp.CallToolRequest) (context.Context, tracing.Span) {
	var meta map[string]any
	if req != nil && req.Params != nil && req.Params.Meta != nil {
		meta = req.Params.Meta
	}
	return g.tracer.Call(ctx, tool, meta)
}

// step starts the span of one step of the call path (mcpsafe.decode,
// .rules, .resolve, .preview, .ask, .redeem, .recheck, .journal, .execute).
// The callers spell the whole name: a concatenation here would allocate
// on every step of every call, traced or not.
func (g *Gate) step(ctx context.Context, name string) (context.Context, tracing.Span) {
	return g.tracer.Step(ctx, name)
}

// endStep ends a step's span, marking a refusal with its reason code.
func endStep(span tracing.Span, r *Refusal) {
	if r != nil {
		span.Fail(r.Reason, tracing.Attribute{Key: "mcpsafe.reason", Value: r.Reason})
	}
	span.End()
}

// tracedJournal gives every journal write a "journal" step span.
type tracedJournal struct {
	j journal.Appender
	t tracing.Tracer
}

func (tj tracedJournal) Append(ctx context.Context, r journal.Record) error {
	ctx, span := tj.t.Step(ctx, "mcpsafe.journal", tracing.Attribute{Key: "mcpsafe.decision", Value: r.Decision})
	defer span.End()
	err := tj.j.Append(ctx, r)
	if err != nil {
		span.Fail("record not written")
	}
	return err
}

// tracedExecute gives a tool's Execute an "execute" step span; the tool
// (a proxy relaying upstream) sees it in ctx.
func tracedExecute(t tracing.Tracer, exec func(ctx context.Context, c *Call, in, st any, a *Approval) (*mcp.CallToolResult, error)) func(ctx context.Context, c *Call, in, st any, a *Approval) (*mcp.CallToolResult, error) {
	return func(ctx context.Context, c *Call, in, st any, a *Approval) (*mcp.CallToolResult, error) {
		ctx, span := t.Step(ctx, "mcpsafe.execute")
		defer span.End()
		res, err := exec(ctx, c, in, st, a)
		if err != nil || res != nil && res.IsError {
			span.Fail("the tool failed")
		}
		return res, err
	}
}
