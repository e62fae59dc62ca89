package main

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkRelay is the floor of a relay built on the SDK, with no mcpsafe code:
// an mcp.Server served by the SDK's streamable HTTP handler with sessions
// (as the proxy serves a 2025-11-25 client, and as --http-stateful serves
// everyone), whose one tool forwards each call with an SDK client session
// to the upstream and hands back its result. The client leg speaks
// 2025-11-25, as the proxy's leg for such a client does. What this costs
// per call is what the SDK's decoding, encoding, sessions and SSE cost on
// both sides of a relay: the part of the proxy's stateful path that is not
// mcpsafe's.
//
//	benchdrive sdkrelay -upstream URL -addr ADDR
func sdkRelay(args []string) error {
	fl := flag.NewFlagSet("sdkrelay", flag.ExitOnError)
	upstream := fl.String("upstream", "", "upstream URL")
	addr := fl.String("addr", "127.0.0.1:0", "listen address")
	tool := fl.String("tool", "echo", "the one tool relayed")
	fl.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	up, err := mcp.NewClient(&mcp.Implementation{Name: "bench-sdk-relay", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: *upstream, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return err
	}
	defer up.Close()
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-sdk-relay", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: *tool, Description: *tool, InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	return serveUntil(ctx, *addr, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
}
