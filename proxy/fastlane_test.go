package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Which client lines take the fast lane: only a well-formed tools/call of
// a tool that passes through, read in a way no JSON parser reads
// differently. Everything else goes the SDK path (and through the gate).
func TestFastLanePeek(t *testing.T) {
	_, up := newGoUpstream(t)
	s := newProxy(t, up, nil)
	for _, c := range []struct {
		name string
		line string
		fast bool
	}{
		{"control: a pass-through call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`, true},
		{"control: string id and a progress token", `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","_meta":{"progressToken":3}}}`, true},
		{"a gated tool", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_thing","arguments":{}}}`, false},
		{"an unknown tool", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}`, false},
		{"duplicate name, gated last", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","name":"delete_thing"}}`, false},
		{"duplicate name, gated first", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_thing","name":"echo"}}`, false},
		{"case variant of name", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delete_thing","NAME":"echo"}}`, false},
		{"case variant, other order", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"Name":"echo","name":"echo"}}`, false},
		{"Kelvin sign folds to k", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1,"progressTo\u212Aen":2}}}`, false},
		{"escaped duplicate key", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","n\u0061me":"delete_thing"}}`, false},
		{"duplicate method", `{"jsonrpc":"2.0","id":7,"method":"tools/call","method":"tools/call","params":{"name":"echo"}}`, false},
		{"duplicate params", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"},"params":{"name":"delete_thing"}}`, false},
		{"case variant of params", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"},"Params":{"name":"delete_thing"}}`, false},
		{"no jsonrpc", `{"id":7,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"another method", `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"name":"echo"}}`, false},
		{"a notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}`, false},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}`, false},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"echo"}}`, false},
		{"the proxy's reserved id", `{"jsonrpc":"2.0","id":"mcpsafe-sdk-3","method":"tools/call","params":{"name":"echo"}}`, false},
		{"escaped reserved id", `{"jsonrpc":"2.0","id":"\u006dcpsafe-sdk-3","method":"tools/call","params":{"name":"echo"}}`, false},
		{"name not a string", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":["echo"]}}`, false},
		{"trailing data", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}} {"x":1}`, false},
		{"a batch", `[{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}]`, false},
		{"malformed", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}`, false},
		{"a member JSON-RPC does not have", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"},"extra":1}`, false},
		{"a params member the SDK path drops", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","task":{"ttl":1}}}`, false},
		{"folded keys in the arguments", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"source":"a","ſource":"b"}}}`, false},
		{"a lone CR", "{\"jsonrpc\":\"2.0\",\"id\":7,\r\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}\n", false},
		{"control: CRLF line end", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}\r\n", true},
	} {
		f := frame.Read([]byte(c.line))
		_, fast := s.fastCallOf(f, f.Tool)
		if fast = fast && f.Alike && f.Kind == frame.Request && f.Method == "tools/call"; fast != c.fast {
			t.Errorf("%s: fast = %v, want %v", c.name, fast, c.fast)
		}
	}
}

// rawSession talks JSON-RPC lines to the proxy served on pipes, as a
// 2025-11-25 client would.
type rawSession struct {
	t   *testing.T
	in  io.Writer
	out *bufio.Reader
}

func (r *rawSession) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// response reads lines until the response with id.
func (r *rawSession) response(id string) map[string]any {
	r.t.Helper()
	done := make(chan map[string]any, 1)
	go func() {
		for {
			line, err := r.out.ReadBytes('\n')
			if err != nil {
				close(done)
				return
			}
			var m map[string]any
			if json.Unmarshal(line, &m) == nil {
				if b, _ := json.Marshal(m["id"]); string(b) == id && m["method"] == nil {
					done <- m
					return
				}
			}
		}
	}()
	select {
	case m, ok := <-done:
		if !ok {
			r.t.Fatal("the proxy closed its output")
		}
		return m
	case <-time.After(20 * time.Second):
		r.t.Fatalf("no response with id %s", id)
	}
	return nil
}

func serveOnPipes(t *testing.T, s *Server) *rawSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	go s.ServeStdio(ctx, inR, outW)
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	return &rawSession{t: t, in: inW, out: bufio.NewReader(outR)}
}

// The fast lane against the real npm filesystem server over stdio: a
// read-only call takes it and answers as direct; a gated call, and every
// line that names a gated tool in any ambiguous way, takes the SDK path
// and the gate, and writes nothing.
func TestFastLaneFilesystem(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "f.txt")
	writeFile(t, target, "original\n")
	pipe, err := StartUpstream(exec.Command(fsServerBin(t), dir))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(context.Background(), Config{Upstream: pipe, Gate: stores(t, serverconfFor(filepath.Join(t.TempDir(), "j.jsonl")))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	r := serveOnPipes(t, s)
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.response("0")
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	quoted, _ := json.Marshal(target)
	read := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file","arguments":{"path":` + string(quoted) + `}}}`
	r.send(read)
	res := r.response("1")
	if b, _ := json.Marshal(res); !strings.Contains(string(b), "original") {
		t.Fatalf("read through the fast lane: %s", b)
	}
	if n := pipe.fastCalls.Load(); n != 1 {
		t.Fatalf("fast-lane calls = %d, want 1", n)
	}

	write := func(id, params string) {
		t.Helper()
		r.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`)
		r.response(id)
		if got := readFile(t, target); got != "original\n" {
			t.Fatalf("params %s wrote the file: %q", params, got)
		}
	}
	args := `"arguments":{"path":` + string(quoted) + `,"content":"pwned"}`
	write("2", `{"name":"write_file",`+args+`}`)
	write("3", `{"name":"read_text_file","name":"write_file",`+args+`}`)
	write("4", `{"name":"write_file","NAME":"read_text_file",`+args+`}`)
	write("5", `{"NAME":"read_text_file","name":"write_file",`+args+`}`)
	write("6", `{"name":"read_text_file","n\u0061me":"write_file",`+args+`}`)
	if n := pipe.fastCalls.Load(); n != 1 {
		t.Fatalf("a call naming write_file took the fast lane (%d fast calls)", n)
	}

	// The SDK path still works beside it, with the proxy's own ids upstream.
	r.send(`{"jsonrpc":"2.0","id":"mcpsafe-sdk-1","method":"tools/call","params":{"name":"read_text_file","arguments":{"path":` + string(quoted) + `}}}`)
	if b, _ := json.Marshal(r.response(`"mcpsafe-sdk-1"`)); !strings.Contains(string(b), "original") || pipe.fastCalls.Load() != 1 {
		t.Fatalf("a reserved id through the SDK path: %s", b)
	}
	r.send(read)
	r.response("1")
	if n := pipe.fastCalls.Load(); n != 2 {
		t.Fatalf("fast-lane calls = %d, want 2", n)
	}
}

// A Go SDK client of the 2025-11-25 generation over the fast lane: calls,
// progress under its own token, and the gate beside it.
func TestFastLaneSDKClient(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "f.txt"), "content\n")
	pipe, err := StartUpstream(exec.Command(fsServerBin(t), dir))
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(context.Background(), Config{Upstream: pipe, Gate: stores(t, serverconfFor(filepath.Join(t.TempDir(), "j.jsonl")))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.ServeStdio(ctx, inR, outW)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for range 20 {
		res := call(t, cs, "read_text_file", map[string]any{"path": filepath.Join(dir, "f.txt")})
		if res.IsError || !strings.Contains(text(res), "content") {
			t.Fatalf("read: %s", text(res))
		}
	}
	if n := pipe.fastCalls.Load(); n != 20 {
		t.Fatalf("fast-lane calls = %d, want 20", n)
	}
	res := call(t, cs, "write_file", map[string]any{"path": filepath.Join(dir, "g.txt"), "content": "x"})
	if reasonOf(t, res) != "elicitation_unsupported" {
		t.Fatalf("gated write without a way to approve: %s", text(res))
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
}

const progressUpstreamEnv = "MCPSAFE_PROXY_TEST_PROGRESS_UPSTREAM"

// runProgressUpstream is a stdio MCP server of the 2025-11-25 generation
// whose read-only tool reports progress twice, and whose other tool waits
// until cancelled.
func runProgressUpstream() int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "progress-upstream"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: objectSchema, Annotations: ro}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := 1; i <= 2; i++ {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 2})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	srv.AddTool(&mcp.Tool{Name: "hang", InputSchema: objectSchema, Annotations: ro}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		os.Stderr.WriteString("hang: cancelled\n")
		return nil, ctx.Err()
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// Progress and cancellation of a fast-lane call travel as is: the client's
// own token comes back, and its cancellation reaches the upstream handler.
func TestFastLaneProgressAndCancel(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), progressUpstreamEnv+"=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	pipe, err := StartUpstream(cmd)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(context.Background(), Config{Upstream: pipe, Gate: stores(t, serverconfFor(filepath.Join(t.TempDir(), "j.jsonl")))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.ServeStdio(ctx, inR, outW)
	var mu sync.Mutex
	var got []string
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, fmt.Sprintf("%v:%v", r.Params.ProgressToken, r.Params.Progress))
			mu.Unlock()
		},
	}).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	params.SetProgressToken("client-token-9")
	if _, err := cs.CallTool(ctx, params); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "progress under the client's token", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(got, ",") == "client-token-9:1,client-token-9:2"
	})
	if n := pipe.fastCalls.Load(); n != 1 {
		t.Fatalf("fast-lane calls = %d, want 1", n)
	}

	cctx, ccancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}})
		errc <- err
	}()
	waitUntil(t, "the hanging call in flight", func() bool { return pipe.fastCalls.Load() == 2 })
	ccancel()
	if err := <-errc; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	waitUntil(t, "the cancellation at the upstream", func() bool { return strings.Contains(stderr.String(), "hang: cancelled") })
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
