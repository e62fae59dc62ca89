package proxy

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askInCall asks the client in the middle of the call, the way a server
// written for the 2025-11-25 generation does (elicitation/create); on a
// 2026-07-28 session the SDK refuses to send it.
func askInCall(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "your name?",
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
	if err != nil {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "asking failed: " + err.Error()}}}, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello " + res.Content["name"].(string)}}}, nil
}

// A client of the 2025-11-25 generation in front of an upstream run as a
// command: the upstream asks it mid-call, through a second process of the
// command that speaks its generation (CommandLeg, for a proxy with clients
// of both generations), passed through and gated. The control: without
// the second process the upstream's session is of the 2026-07-28
// generation and cannot ask. And a proxy with one client
// (Config.ClientProtocol, served over stdio) opens its one process in the
// client's generation, where the upstream asks it.
func TestLegacyClientIsAskedThroughACommandUpstream(t *testing.T) {
	policies := map[string]string{
		"passed-through": "upstream_requests: {elicitation: relay}\n",
		"gated":          "upstream_requests: {elicitation: relay}\ntools:\n  ask:\n    gate: true\n    auto_approve: [\"true\"]\n",
	}
	legacyClient := func(t *testing.T, p *Server) *mcp.ClientSession {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := p.MCP.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy"}, &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ada"}}, nil
			}}).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	for name, policy := range policies {
		t.Run(name, func(t *testing.T) {
			pol := mustPolicy(t, policy)
			pipe, err := StartUpstream(goUpstreamCmd(t))
			if err != nil {
				t.Fatal(err)
			}
			leg := &CommandLeg{Command: func() *exec.Cmd { return goUpstreamCmd(t) }}
			s, err := NewServer(context.Background(), Config{Upstream: pipe, LegacyUpstream: leg,
				Policy: pol, Gate: stores(t, serverconfFor(filepath.Join(t.TempDir(), "j.jsonl")))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if got := text(call(t, legacyClient(t, s), "ask", map[string]any{})); !strings.Contains(got, "hello ada") {
				t.Fatalf("through a second process: %q, want hello ada", got)
			}
			s.Close()
			select {
			case <-leg.pipe.exited:
			default:
				t.Fatal("the second process still runs after Close")
			}

			// The control: one process, of the other generation.
			pipe, err = StartUpstream(goUpstreamCmd(t))
			if err != nil {
				t.Fatal(err)
			}
			one := newProxy(t, pipe, pol)
			res, err := legacyClient(t, one).CallTool(testCtx(t), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
			if err == nil && !strings.Contains(text(res), "asking failed") {
				t.Fatalf("control: one process of the 2026-07-28 generation asked a 2025-11-25 client: %q", text(res))
			}

			// A proxy with one client (served over stdio): its one process
			// speaks the client's generation, and asks it.
			pipe, err = StartUpstream(goUpstreamCmd(t))
			if err != nil {
				t.Fatal(err)
			}
			own, err := NewServer(context.Background(), Config{Upstream: pipe, ClientProtocol: "2025-11-25",
				Policy: pol, Gate: stores(t, serverconfFor(filepath.Join(t.TempDir(), "j.jsonl")))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { own.Close() })
			if v := own.Upstream.InitializeResult().ProtocolVersion; v != "2025-11-25" {
				t.Fatalf("the upstream session of a 2025-11-25 client is of %s", v)
			}
			if got := text(call(t, legacyClient(t, own), "ask", map[string]any{})); !strings.Contains(got, "hello ada") {
				t.Fatalf("one process in the client's generation: %q, want hello ada", got)
			}
		})
	}
}
