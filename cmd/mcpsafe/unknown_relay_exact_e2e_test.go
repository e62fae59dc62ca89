package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The relay of methods the proxy does not know (unknown_methods: relay),
// through the built binary, against an upstream that reads JSON-RPC as
// encoding/json does: member names matched under case folding.

const (
	foldingUpstreamEnv = "MCPSAFE_TEST_FOLDING_UPSTREAM" // run as the folding upstream
	foldingRanEnv      = "MCPSAFE_TEST_FOLDING_RAN"      // one line per tool it ran
)

// runFoldingUpstream is a stdio MCP server of the 2025-11-25 generation
// written the way many are: each line decoded by encoding/json into a
// struct, so "Params" and "paramſ" are its params. Its tools: echo and
// fs.read (read-only), delete_thing and fs.delete (gated by the proxy).
// Its vendor extension runs tools around tools/call: x-acme/run runs the
// tool its params name, x-acme/<tool> runs <tool>.
func runFoldingUpstream() int {
	ran := func(tool string) {
		f, err := os.OpenFile(os.Getenv(foldingRanEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			f.WriteString(tool + "\n")
			f.Close()
		}
	}
	ro := json.RawMessage(`{"readOnlyHint":true}`)
	tools := []map[string]any{
		{"name": "echo", "inputSchema": map[string]any{"type": "object"}, "annotations": ro},
		{"name": "fs.read", "inputSchema": map[string]any{"type": "object"}, "annotations": ro},
		{"name": "delete_thing", "inputSchema": map[string]any{"type": "object"}},
		{"name": "fs.delete", "inputSchema": map[string]any{"type": "object"}},
	}
	out := bufio.NewWriter(os.Stdout)
	answer := func(id json.RawMessage, result any) {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
		out.Write(append(b, '\n'))
		out.Flush()
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage
			Method string
			Params json.RawMessage
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Method == "" || len(m.ID) == 0 {
			continue // responses and notifications
		}
		var p struct{ Name, Tool string }
		json.Unmarshal(m.Params, &p)
		switch {
		case m.Method == "initialize":
			answer(m.ID, map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "folding", "version": "1"}})
		case m.Method == "ping":
			answer(m.ID, map[string]any{})
		case m.Method == "tools/list":
			answer(m.ID, map[string]any{"tools": tools})
		case m.Method == "tools/call":
			ran(p.Name)
			answer(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "ran " + p.Name}}})
		case m.Method == "x-acme/run":
			ran(p.Tool)
			answer(m.ID, map[string]any{"ran": p.Tool})
		case strings.HasPrefix(m.Method, "x-acme/"):
			tool := strings.TrimPrefix(m.Method, "x-acme/")
			ran(tool)
			answer(m.ID, map[string]any{"ran": tool})
		default:
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			out.Write(append(b, '\n'))
			out.Flush()
		}
	}
	return 0
}

// rawStdio is a client writing JSON-RPC lines to the binary on stdio.
type rawStdio struct {
	t     *testing.T
	in    io.Writer
	lines chan []byte
}

// startRawProxy runs `mcpsafe proxy` with the policy in front of the
// folding upstream, completes the handshake, and returns the client and
// the file in which the upstream records the tools it ran.
func startRawProxy(t *testing.T, policy string) (*rawStdio, string) {
	t.Helper()
	dir := t.TempDir()
	pol, ranFile := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "ran")
	must(t, os.WriteFile(pol, []byte(policy), 0o600))
	cmd := exec.Command(binary, "proxy", "--journal", filepath.Join(dir, "j.jsonl"), "--policy", pol, "--", os.Args[0])
	cmd.Env = append(os.Environ(), foldingUpstreamEnv+"=1", foldingRanEnv+"="+ranFile)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	c := &rawStdio{t: t, in: in, lines: make(chan []byte, 100)}
	go func() {
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				close(c.lines)
				return
			}
			c.lines <- line
		}
	}()
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if l := c.await(`"id":0`); !bytes.Contains(l, []byte(`"result"`)) {
		t.Fatalf("initialize: %s; stderr: %s", l, stderr.String())
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c, ranFile
}

func (c *rawStdio) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// await returns the first line containing want, skipping others.
func (c *rawStdio) await(want string) []byte {
	c.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the proxy closed its output before a line with %s", want)
			}
			if bytes.Contains(line, []byte(want)) {
				return line
			}
		case <-timeout:
			c.t.Fatalf("no line with %s", want)
		}
	}
}

// answerOf sends line (a request with id 9) and reads its answer: relayed
// (the upstream's result) or refused (the proxy's error).
func (c *rawStdio) answerOf(line string) (relayed bool, answer []byte) {
	c.t.Helper()
	c.send(line)
	answer = c.await(`"id":9`)
	var m struct {
		Result json.RawMessage
		Error  *struct{ Message string }
	}
	if err := json.Unmarshal(answer, &m); err != nil {
		c.t.Fatal(err)
	}
	if m.Error != nil && !strings.Contains(m.Error.Message, "mcpsafe proxy") {
		c.t.Fatalf("an error that is not the proxy's refusal: %s", answer)
	}
	return m.Error == nil, answer
}

func ranTools(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// A relayed line whose parameters sit under a member that equals "params"
// only under case folding ("Params", "paramſ"), or next to members
// JSON-RPC does not have, is refused: the folding upstream would run the
// gated tool it names, with nobody asked. Control: the same line with
// "params" spelt exactly and a pass-through tool is relayed and runs it;
// with the gated tool it is refused by the params scan.
func TestUnknownRelayRefusesMembersNotSpeltExactly(t *testing.T) {
	c, ranFile := startRawProxy(t, "unknown_methods: relay\n")
	if relayed, a := c.answerOf(`{"jsonrpc":"2.0","id":9,"method":"x-acme/run","params":{"tool":"echo"}}`); !relayed || !bytes.Contains(a, []byte(`"ran":"echo"`)) {
		t.Fatalf("control, a pass-through tool: %s", a)
	}
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":9,"method":"x-acme/run","params":{"tool":"delete_thing"}}`, // control: the scan of params
		`{"jsonrpc":"2.0","id":9,"method":"x-acme/run","Params":{"tool":"delete_thing"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"x-acme/run","paramſ":{"tool":"delete_thing"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"x-acme/run","PARAMS":{"tool":"fs.delete"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"x-acme/run","params":{"tool":"echo"},"extra":{"tool":"x"}}`,
	} {
		if relayed, a := c.answerOf(line); relayed {
			t.Errorf("relayed %s: %s", line, a)
		}
	}
	// The upstream reads lines in order: once it has answered this one,
	// it would have recorded any tool the lines above made it run.
	if relayed, a := c.answerOf(`{"jsonrpc":"2.0","id":9,"method":"x-acme/run","params":{"tool":"echo"}}`); !relayed {
		t.Fatalf("second control: %s", a)
	}
	if got := strings.Join(ranTools(t, ranFile), " "); got != "echo echo" {
		t.Fatalf("the upstream ran %q, want only the two controls", got)
	}
}

// A method that names a gated tool whose own name holds a dot
// ("x-acme/fs.delete" names "fs.delete") is refused, over stdio and over
// HTTP: the upstream's extension would run it. Controls: a dotted
// pass-through tool by the same extension (x-acme/fs.read) is relayed
// and runs.
func TestUnknownRelayRefusesMethodNamingDottedTool(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		c, ranFile := startRawProxy(t, "unknown_methods: relay\n")
		if relayed, a := c.answerOf(`{"jsonrpc":"2.0","id":9,"method":"x-acme/fs.read","params":{}}`); !relayed || !bytes.Contains(a, []byte(`"ran":"fs.read"`)) {
			t.Fatalf("control: %s", a)
		}
		for _, m := range []string{"x-acme/fs.delete", "x-acme/FS.Delete", "x-acme/fs.delete/now"} {
			if relayed, a := c.answerOf(`{"jsonrpc":"2.0","id":9,"method":"` + m + `","params":{}}`); relayed {
				t.Errorf("relayed %s: %s", m, a)
			}
		}
		if relayed, a := c.answerOf(`{"jsonrpc":"2.0","id":9,"method":"x-acme/echo","params":{}}`); !relayed {
			t.Fatalf("second control: %s", a)
		}
		if got := strings.Join(ranTools(t, ranFile), " "); got != "fs.read echo" {
			t.Fatalf("the upstream ran %q, want only the controls", got)
		}
	})
	t.Run("http", func(t *testing.T) {
		up := mcp.NewServer(&mcp.Implementation{Name: "dotted"}, nil)
		done := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		}
		obj := map[string]any{"type": "object"}
		up.AddTool(&mcp.Tool{Name: "fs.read", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, done)
		up.AddTool(&mcp.Tool{Name: "fs.delete", InputSchema: obj}, done)
		sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, &mcp.StreamableHTTPOptions{Stateless: true})
		var mu sync.Mutex
		var ran []string
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method := r.Header.Get("Mcp-Method")
			tool, ok := strings.CutPrefix(method, "x-acme/")
			if !ok {
				sdk.ServeHTTP(w, r)
				return
			}
			var m struct{ ID json.RawMessage }
			json.NewDecoder(r.Body).Decode(&m)
			mu.Lock()
			ran = append(ran, tool)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"ran":"` + tool + `"}}`))
		}))
		t.Cleanup(hs.Close)
		dir := t.TempDir()
		pol := filepath.Join(dir, "policy.yaml")
		must(t, os.WriteFile(pol, []byte("unknown_methods: relay\n"), 0o600))
		url := startBinary(t, "proxy", "--journal", filepath.Join(dir, "j.jsonl"), "--policy", pol, "--http", "127.0.0.1:0", "--upstream-url", hs.URL)
		post := func(method string) (int, string) {
			req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"`+method+`","params":{}}`))
			must(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
			req.Header.Set("Mcp-Method", method)
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if code, body := post("x-acme/fs.read"); code != 200 || !strings.Contains(body, `"ran":"fs.read"`) {
			t.Fatalf("control: %d %s", code, body)
		}
		for _, m := range []string{"x-acme/fs.delete", "x-acme/FS.Delete"} {
			if code, body := post(m); code == 200 || !strings.Contains(body, "mcpsafe proxy") {
				t.Errorf("relayed %s: %d %s", m, code, body)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(ran, " "); got != "fs.read" {
			t.Fatalf("the upstream ran %q, want only the control", got)
		}
	})
}
