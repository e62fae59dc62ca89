package proxy

import (
	"context"
	"net"
	"net/http"
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
