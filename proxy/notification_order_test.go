package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// chattyLogs is how many log messages the chatty tool sends before it
// answers: enough that, were the answer relayed ahead of them, some would
// still be queued in the proxy when the client has its result.
const chattyLogs = 40

func chatty(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for i := range chattyLogs {
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: "chatty", Data: i}); err != nil {
			return nil, err
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "said it all"}}}, nil
}

// logsBeforeResult connects to srv as a client that reads the wire in
// order (the SDK's own client hands log messages to a queue apart from
// results, so it cannot tell), calls tool, and counts the log messages
// that came before the result.
func logsBeforeResult(t *testing.T, srv *mcp.Server, tool string) int {
	t.Helper()
	ctx := testCtx(t)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	send := func(id int64, method, params string) {
		t.Helper()
		req := &jsonrpc.Request{Method: method, Params: json.RawMessage(params)}
		if id != 0 {
			req.ID = mustID(t, id)
		}
		if err := conn.Write(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	// answer reads until the response to id, counting log messages.
	answer := func(id int64) (logs int) {
		t.Helper()
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			switch m := msg.(type) {
			case *jsonrpc.Request:
				if m.Method == "notifications/message" {
					logs++
				}
			case *jsonrpc.Response:
				if m.ID != mustID(t, id) {
					t.Fatalf("an answer to %v, waiting for %d", m.ID, id)
				}
				if m.Error != nil {
					t.Fatalf("request %d: %v", id, m.Error)
				}
				if bytes.Contains(m.Result, []byte(`"isError":true`)) {
					t.Fatalf("request %d: %s", id, m.Result)
				}
				return logs
			}
		}
	}
	send(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wire-order","version":"1"}}`)
	answer(1)
	send(0, "notifications/initialized", `{}`)
	send(2, "logging/setLevel", `{"level":"debug"}`)
	answer(2)
	send(3, "tools/call", `{"name":"`+tool+`","arguments":{}}`)
	return answer(3)
}

// goUpstreamCmd is the Go test upstream (runGatewayUpstream) as a command.
func goUpstreamCmd(t *testing.T) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), gwUpstreamEnv+"=1", "MCPSAFE_GW_LOG="+t.TempDir()+"/calls.log")
	return cmd
}

// A relayed call answers only after the log messages the upstream sent
// before its answer: as directly, the client has all of them when it has
// the result. Over a stdio upstream and an HTTP one (both generations of
// the upstream's HTTP sessions), passed through and gated.
func TestNotificationsArriveBeforeTheAnswer(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "chatty-http"}, nil)
	srv.AddTool(&mcp.Tool{Name: "chatty", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, chatty)
	stateful := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(stateful.Close)
	stateless := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(stateless.Close)

	// The control: directly, every message is there before the result.
	if n := logsBeforeResult(t, srv, "chatty"); n != chattyLogs {
		t.Fatalf("control, direct: %d of %d log messages before the result", n, chattyLogs)
	}

	upstreams := map[string]func(t *testing.T) mcp.Transport{
		"stdio": func(t *testing.T) mcp.Transport {
			pipe, err := StartUpstream(goUpstreamCmd(t))
			if err != nil {
				t.Fatal(err)
			}
			return pipe
		},
		"http-stateful": func(*testing.T) mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: stateful.URL, HTTPClient: UpstreamHTTPClient()}
		},
		"http-stateless": func(*testing.T) mcp.Transport {
			return &mcp.StreamableClientTransport{Endpoint: stateless.URL, HTTPClient: UpstreamHTTPClient()}
		},
	}
	policies := map[string]string{
		"passed-through": "tools: {}\n",
		"gated":          "tools:\n  chatty:\n    gate: true\n    auto_approve: [\"true\"]\n",
	}
	for up, transport := range upstreams {
		for name, pol := range policies {
			t.Run(up+"/"+name, func(t *testing.T) {
				p := newProxy(t, transport(t), mustPolicy(t, pol))
				for i := range 3 {
					if n := logsBeforeResult(t, p.MCP, "chatty"); n != chattyLogs {
						t.Fatalf("call %d: the client had %d of %d log messages when the result came", i, n, chattyLogs)
					}
				}
			})
		}
	}

	t.Run("gateway", func(t *testing.T) {
		g, _ := newGateway(t, "servers:\n"+newGoServer(t).yaml(t, "go", ""))
		for i := range 3 {
			if n := logsBeforeResult(t, g.MCP, "go__chatty"); n != chattyLogs {
				t.Fatalf("call %d: the client had %d of %d log messages when the result came", i, n, chattyLogs)
			}
		}
	})
}

func mustID(t *testing.T, n int64) jsonrpc.ID {
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		t.Fatal(err)
	}
	return id
}
