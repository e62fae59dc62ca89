package proxy

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpUpstream serves a Go MCP server over streamable HTTP on addr (a
// fixed address, so that it can come back where it was).
func httpUpstream(t *testing.T, addr string) (stop func()) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "http-upstream"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "http echo"}}}, nil
		})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)}
	go hs.Serve(ln)
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			hs.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

// An HTTP upstream that goes away is reported as a crashed stdio one is:
// its tools leave the list, calls are refused as server_unavailable; when
// it is back, the gateway reconnects.
func TestGatewayHTTPUpstreamDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	stop := httpUpstream(t, addr)
	gs := newGoServer(t)
	g, _ := newGateway(t, "servers:\n"+gs.yaml(t, "go", "")+"  web:\n    url: http://"+addr+"/\n")
	cs := connectGateway(t, g, nil)
	if res := call(t, cs, "web__echo", map[string]any{}); res.IsError {
		t.Fatalf("control: %s", text(res))
	}
	stop()
	// The first call finds out (a transport error, relayed as one).
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "web__echo", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Fatalf("a call to a stopped HTTP upstream succeeded: %s", text(res))
	}
	eventually(t, "web's tools withdrawn", func() bool { return !hasTool(t, cs, "web__echo") })
	res := call(t, cs, "web__echo", map[string]any{})
	if reasonOf(t, res) != ReasonServerUnavailable || !strings.Contains(text(res), `\"web\"`) {
		t.Fatalf("web__echo while down: %s", text(res))
	}
	if gs.calls() != "" || !hasTool(t, cs, "go__echo") {
		t.Fatal("the other server was disturbed")
	}
	httpUpstream(t, addr)
	eventually(t, "web back", func() bool { return hasTool(t, cs, "web__echo") })
	if res := call(t, cs, "web__echo", map[string]any{}); res.IsError {
		t.Fatalf("after reconnect: %s", text(res))
	}
}

// A bare server's tool whose name reads as another server's prefixed name
// ("p__zzz" beside server p, which has no such tool) is refused at start; control: the same
// tool beside servers with other names starts.
func TestGatewayBareNameLikePrefixRefused(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "tricky"}, nil)
	up.AddTool(&mcp.Tool{Name: "p__zzz", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "tricky"}}}, nil
		})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	gs := newGoServer(t)
	tricky := "  a-tricky:\n    url: http://" + ln.Addr().String() + "/\n    prefix: false\n"
	dir := t.TempDir()
	_, f := gatewayFile(t, dir, "servers:\n"+gs.yaml(t, "p", "")+tricky)
	if g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), GatewayOptions{}); err == nil {
		g.Close()
		t.Fatal("a bare p__zzz started beside server p")
	} else if !strings.Contains(err.Error(), "would read as a tool of server p") {
		t.Fatalf("error: %v", err)
	}
	g, _ := newGateway(t, "servers:\n"+gs.yaml(t, "q", "")+tricky)
	cs := connectGateway(t, g, nil)
	if res := call(t, cs, "p__zzz", map[string]any{}); res.IsError || !strings.Contains(text(res), "tricky") {
		t.Fatalf("control: %s", text(res))
	}
}
