package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsafe/mcpsafe/proxy/policy"
)

// gwUpstreamEnv makes the test binary a small Go MCP server over stdio
// (see TestMain), the gateway's second real upstream beside the npm
// filesystem server.
const gwUpstreamEnv = "MCPSAFE_PROXY_TEST_GW_UPSTREAM"

// runGatewayUpstream serves echo and pid (read-only), note and wipe
// (destructive: each call appends a line to $MCPSAFE_GW_LOG), chatty
// (read-only: logs chattyLogs messages, then answers), ask (read-only: asks
// the client in-call, as a 2025-11-25 server does), and a prompt.
// While the file $MCPSAFE_GW_BLOCK exists it refuses to start, so that a
// test can hold a crashed upstream down.
func runGatewayUpstream() int {
	if b := os.Getenv("MCPSAFE_GW_BLOCK"); b != "" {
		if _, err := os.Stat(b); err == nil {
			return 1
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "gw-upstream", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	textResult := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema, Annotations: ro},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult("echo " + string(req.Params.Arguments)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "pid", InputSchema: objectSchema, Annotations: ro},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return textResult(fmt.Sprint(os.Getpid())), nil
		})
	for _, name := range []string{"note", "wipe"} {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				f, err := os.OpenFile(os.Getenv("MCPSAFE_GW_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					return nil, err
				}
				defer f.Close()
				fmt.Fprintf(f, "%s %s\n", name, req.Params.Arguments)
				return textResult(name + " done"), nil
			})
	}
	srv.AddTool(&mcp.Tool{Name: "chatty", InputSchema: objectSchema, Annotations: ro}, chatty)
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: objectSchema, Annotations: ro}, askInCall)
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Description: "says hello"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello from gw-upstream"}}}}, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// goServer is one Go upstream of a gateway under test: the lines of its
// destructive calls land in Log; Block holds it down after a crash.
type goServer struct{ Log, Block string }

func newGoServer(t testing.TB) goServer {
	dir := t.TempDir()
	return goServer{Log: filepath.Join(dir, "calls.log"), Block: filepath.Join(dir, "block")}
}

// yaml is the server's entry in a gateway file (with extra keys indented
// as its siblings).
func (g goServer) yaml(t testing.TB, name, extra string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("  %s:\n    command: [%q]\n    env: {%s: \"1\", MCPSAFE_GW_LOG: %q, MCPSAFE_GW_BLOCK: %q}\n%s",
		name, exe, gwUpstreamEnv, g.Log, g.Block, extra)
}

func (g goServer) calls() string {
	b, _ := os.ReadFile(g.Log)
	return string(b)
}

// fsServerYAML is the npm filesystem server's entry, confined to dir.
func fsServerYAML(t testing.TB, name, dir, extra string) string {
	return fmt.Sprintf("  %s:\n    command: [%q, %q]\n%s", name, fsServerBin(t), dir, extra)
}

// gatewayFile writes a gateway configuration into dir and loads it.
func gatewayFile(t testing.TB, dir, body string) (string, *policy.GatewayFile) {
	t.Helper()
	path := filepath.Join(dir, "gateway.yaml")
	writeFile(t, path, body)
	f, err := policy.LoadGateway(path)
	if err != nil {
		t.Fatalf("LoadGateway: %v\n%s", err, body)
	}
	return path, f
}

// newGateway starts a gateway with a real journal; it returns the
// journal's path.
func newGateway(t testing.TB, body string) (*Gateway, string) {
	t.Helper()
	dir := t.TempDir()
	_, f := gatewayFile(t, dir, body)
	journal := filepath.Join(dir, "journal.jsonl")
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(journal)), gatewayTestOptions())
	if err != nil {
		t.Fatalf("NewGateway: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	return g, journal
}

// connectGateway attaches a real SDK client to the gateway in memory.
func connectGateway(t testing.TB, g *Gateway, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := g.MCP.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client"}, copts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func toolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	return out
}

func hasTool(t testing.TB, cs *mcp.ClientSession, name string) bool {
	for _, n := range toolNames(t, cs) {
		if n == name {
			return true
		}
	}
	return false
}

// eventually polls cond (an outside process has to act first) and fails
// with what after 30 seconds.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("never happened: " + what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func lines(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func gatewayTestOptions() GatewayOptions {
	o := GatewayOptions{RestartMin: 50 * time.Millisecond, RestartMax: 200 * time.Millisecond}
	if testing.Verbose() {
		o.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return o
}
