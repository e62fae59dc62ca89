package proxy

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// metaUpstream is an in-memory upstream that remembers the _meta of every
// call it gets.
func metaUpstream(t *testing.T) (func() []mcp.Meta, mcp.Transport) {
	t.Helper()
	var mu sync.Mutex
	var seen []mcp.Meta
	srv := mcp.NewServer(&mcp.Implementation{Name: "meta-upstream"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number"}}}
	h := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		seen = append(seen, req.Params.Meta)
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "wipe", InputSchema: schema}, h)
	srv.AddTool(&mcp.Tool{Name: "peek", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, h)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return func() []mcp.Meta {
		mu.Lock()
		defer mu.Unlock()
		return append([]mcp.Meta(nil), seen...)
	}, ct
}

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
)

// The proxy relays trace context upstream: a gated call reaches the
// upstream as a child of the gate's execute span, in the caller's trace; an
// ungated call passes the caller's own traceparent through (control).
func TestProxyRelaysTraceContext(t *testing.T) {
	seen, up := metaUpstream(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	s, err := NewServer(context.Background(), Config{
		Upstream: up,
		Gate:     stores(t, serverconf.Config{JournalPath: filepath.Join(t.TempDir(), "journal.jsonl"), TracerProvider: tp}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: answer("accept", true)})
	callerTP := "00-" + callerTrace + "-" + callerSpan + "-01"
	for _, tool := range []string{"wipe", "peek"} {
		p := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"x": 1}}
		p.Meta = mcp.Meta{"traceparent": callerTP}
		res, err := cs.CallTool(context.Background(), p)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", tool, err, text(res))
		}
	}
	got := seen()
	if len(got) != 2 {
		t.Fatalf("upstream saw %d calls", len(got))
	}
	var execute string
	for _, sp := range rec.Ended() {
		if sp.Name() == "mcpsafe.execute" {
			execute = sp.SpanContext().SpanID().String()
		}
	}
	if execute == "" {
		t.Fatal("no execute span")
	}
	if want := "00-" + callerTrace + "-" + execute + "-01"; got[0]["traceparent"] != want {
		t.Fatalf("gated call reached upstream with traceparent %v, want %s", got[0]["traceparent"], want)
	}
	if got[1]["traceparent"] != callerTP {
		t.Fatalf("ungated call: traceparent %v, want the caller's %s", got[1]["traceparent"], callerTP)
	}
}
