package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	unknownUpstreamEnv = "MCPSAFE_PROXY_TEST_UNKNOWN_UPSTREAM"
	unknownOutEnv      = "MCPSAFE_PROXY_TEST_UNKNOWN_OUT"                          // a copy of every line the upstream writes
	unknownInEnv       = "MCPSAFE_PROXY_TEST_UNKNOWN_IN"                           // a copy of every line the upstream reads
	unknownRanEnv      = "MCPSAFE_PROXY_TEST_UNKNOWN_RAN"                          // one line per tool the upstream ran
	unknownNote        = `{"note":  "spaced  out", "z":1,"a":[1 ,2],"é":"\u00e9"}` // bytes an SDK re-encoding would change
)

// rawParams keeps a custom method's params as the bytes that came.
type rawParams struct {
	mcp.ParamsBase
	raw json.RawMessage
}

func (p *rawParams) UnmarshalJSON(b []byte) error {
	p.raw = append(json.RawMessage(nil), b...)
	return nil
}

type rawResult struct {
	mcp.ResultBase
	raw json.RawMessage
}

func (r *rawResult) MarshalJSON() ([]byte, error) { return r.raw, nil }

// teeWriter writes the upstream's stdout, one whole line at a time, and a
// copy of it to a file, so that a test can compare what the client got
// with what the upstream wrote.
type teeWriter struct {
	mu   sync.Mutex
	out  io.Writer
	copy *os.File
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	// The SDK writes compact JSON; the note is spaced out as another
	// server might write it, so that a proxy re-encoding it would show.
	line := bytes.ReplaceAll(p, []byte(`"SPACED"`), []byte(unknownNote))
	w.copy.Write(line)
	if _, err := w.out.Write(line); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *teeWriter) Close() error { return nil }

// runUnknownUpstream is a stdio MCP server of the 2025-11-25 generation
// with two vendor methods: x-vendor/echo answers with its params and a
// fixed note, and x-vendor/run runs the tool its params name (the way an
// extension could go around the gate). Its tool "poke" changes its prompt
// and resource lists and writes a vendor notification.
func runUnknownUpstream() int {
	cp, err := os.OpenFile(os.Getenv(unknownOutEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return 1
	}
	out := &teeWriter{out: os.Stdout, copy: cp}
	in, err := os.OpenFile(os.Getenv(unknownInEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return 1
	}
	ran := func(tool string) {
		f, err := os.OpenFile(os.Getenv(unknownRanEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			f.WriteString(tool + "\n")
			f.Close()
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "unknown-upstream"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	done := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran("echo")
			return done, nil
		})
	srv.AddTool(&mcp.Tool{Name: "delete_thing", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran("delete_thing")
			return done, nil
		})
	srv.AddTool(&mcp.Tool{Name: "noop", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return done, nil })
	n := 0
	srv.AddTool(&mcp.Tool{Name: "poke", InputSchema: objectSchema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n++
			srv.AddPrompt(&mcp.Prompt{Name: "p" + string(rune('0'+n))}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil })
			srv.AddResource(&mcp.Resource{URI: "test://r" + string(rune('0'+n)), Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
			out.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/x-vendor/hello","params":{"n": 1}}` + "\n"))
			return done, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "p0"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil })
	srv.AddResource(&mcp.Resource{URI: "test://r0", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) { return nil, nil })
	mcp.AddReceivingCustomMethod(srv, "x-vendor/echo", func(_ context.Context, _ *mcp.ServerSession, p *rawParams) (*rawResult, error) {
		return &rawResult{raw: json.RawMessage(`{"params":` + string(p.raw) + `,"note":"SPACED"}`)}, nil
	})
	mcp.AddReceivingCustomMethod(srv, "x-vendor/run", func(_ context.Context, _ *mcp.ServerSession, p *rawParams) (*rawResult, error) {
		var call struct {
			Tool string `json:"tool"`
		}
		json.Unmarshal(p.raw, &call)
		ran(call.Tool)
		return &rawResult{raw: json.RawMessage(`{"ran":true}`)}, nil
	})
	t := &mcp.IOTransport{Reader: io.NopCloser(io.TeeReader(os.Stdin, in)), Writer: out}
	if err := srv.Run(context.Background(), t); err != nil {
		return 1
	}
	return 0
}

// lineSession is a client writing JSON-RPC lines to the proxy on stdio,
// and reading every line the proxy writes back.
type lineSession struct {
	t     *testing.T
	in    io.Writer
	lines chan []byte
}

// upstreamFiles name the upstream's copies of what it wrote and read,
// and its record of the tools it ran.
type upstreamFiles struct{ out, in, ran string }

func startUnknown(t *testing.T, policy string) (*lineSession, upstreamFiles) {
	t.Helper()
	dir := t.TempDir()
	f := upstreamFiles{out: filepath.Join(dir, "upstream-out"), in: filepath.Join(dir, "upstream-in"), ran: filepath.Join(dir, "ran")}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), unknownUpstreamEnv+"=1", unknownOutEnv+"="+f.out, unknownInEnv+"="+f.in, unknownRanEnv+"="+f.ran)
	pipe, err := StartUpstream(cmd)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(context.Background(), Config{Upstream: pipe, Policy: mustPolicy(t, policy), Gate: stores(t, serverconfFor(filepath.Join(dir, "j.jsonl")))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	go s.ServeStdio(ctx, inR, outW)
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	ls := &lineSession{t: t, in: inW, lines: make(chan []byte, 100)}
	go func() {
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				close(ls.lines)
				return
			}
			ls.lines <- line
		}
	}()
	ls.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	ls.await(`"id":0`)
	ls.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return ls, f
}

func (l *lineSession) send(line string) {
	l.t.Helper()
	if _, err := io.WriteString(l.in, line+"\n"); err != nil {
		l.t.Fatal(err)
	}
}

// await returns the first line containing want, skipping others.
func (l *lineSession) await(want string) []byte {
	l.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-l.lines:
			if !ok {
				l.t.Fatalf("the proxy closed its output before a line with %s", want)
			}
			if bytes.Contains(line, []byte(want)) {
				return line
			}
		case <-timeout:
			l.t.Fatalf("no line with %s", want)
		}
	}
}

// awaitAll reads lines until each of wants was in one, in any order.
func (l *lineSession) awaitAll(wants ...string) {
	l.t.Helper()
	left := map[string]bool{}
	for _, w := range wants {
		left[w] = true
	}
	timeout := time.After(20 * time.Second)
	for len(left) > 0 {
		select {
		case line, ok := <-l.lines:
			if !ok {
				l.t.Fatalf("the proxy closed its output before lines with %v", left)
			}
			for w := range left {
				if bytes.Contains(line, []byte(w)) {
					delete(left, w)
				}
			}
		case <-timeout:
			l.t.Fatalf("no lines with %v", left)
		}
	}
}

func readUpstreamFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// upstreamLine finds the line the upstream wrote that contains want.
func upstreamLine(t *testing.T, path, want string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.Lines(b) {
		if bytes.Contains(line, []byte(want)) {
			return line
		}
	}
	t.Fatalf("the upstream wrote no line with %s", want)
	return nil
}

// With unknown_methods: relay, a method the proxy does not know reaches
// the upstream as the client's line, and its result comes back as the
// upstream's line, byte for byte; the upstream's own unknown notification
// reaches the client the same way.
func TestUnknownMethodRelayedRaw(t *testing.T) {
	ls, f := startUnknown(t, "unknown_methods: relay\n")
	request := `{"jsonrpc":"2.0","id":"v1","method":"x-vendor/echo","params":{"q":  "hi", "_meta":{"k":1}}}`
	ls.send(request)
	got := ls.await(`"id":"v1"`)
	want := upstreamLine(t, f.out, `"id":"v1"`)
	if !bytes.Equal(got, want) {
		t.Fatalf("the client got\n%s\nthe upstream wrote\n%s", got, want)
	}
	if !bytes.Contains(got, []byte(unknownNote)) {
		t.Fatalf("the upstream's result was changed on the way: %s", got)
	}
	if in := upstreamLine(t, f.in, `"id":"v1"`); string(in) != request+"\n" {
		t.Fatalf("the upstream read\n%s\nthe client sent\n%s", in, request)
	}
	ls.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"poke","arguments":{}}}`)
	note := ls.await(`notifications/x-vendor/hello`)
	if want := upstreamLine(t, f.out, `notifications/x-vendor/hello`); !bytes.Equal(note, want) {
		t.Fatalf("the client got\n%s\nthe upstream wrote\n%s", note, want)
	}
}

// Refused unknown methods, each with its legitimate twin relayed: the
// default policy refuses them all; with the relay on, a vendor method
// that would run a gated tool never reaches the upstream, however the
// tool's name is hidden in its params, and neither do methods in the
// tools/ namespace or case variants of known methods.
func TestUnknownMethodRefused(t *testing.T) {
	for _, c := range []struct {
		name, policy, line string
		relayed            bool
		ran                string
	}{
		{"control: a harmless method, relay on", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/echo","params":{"q":"delete"}}`, true, ""},
		{"control: a pass-through tool by another method", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","params":{"tool":"echo"}}`, true, "echo"},
		{"default policy: a harmless method", "", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/echo","params":{"q":"hi"}}`, false, ""},
		{"refuse policy: a harmless method", "unknown_methods: refuse\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/echo","params":{"q":"hi"}}`, false, ""},
		{"a method named after a gated tool", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/Delete_Thing","params":{}}`, false, ""},
		{"a gated tool by another method", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","params":{"tool":"delete_thing"}}`, false, ""},
		{"the gated tool's name in another case", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","params":{"tool":"DELETE_Thing"}}`, false, ""},
		{"tools/call with a long s (U+017F folds to s, as encoding/json matches)", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/wrap","params":{"inner":{"method":"toolſ/call","params":{"name":"echo"}}}}`, false, ""},
		{"the name escaped", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","params":{"tool":"delete\u005fthing"}}`, false, ""},
		{"the name nested in an array", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","params":{"tool":"echo","then":[{"x":["delete_thing"]}]}}`, false, ""},
		{"the name as a key", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","params":{"tool":"echo","delete_thing":{}}}`, false, ""},
		{"a wrapped tools/call", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"tasks/create","params":{"request":{"method":"tools/call","params":{"name":"echo"}}}}`, false, ""},
		{"the tools/ namespace", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"tools/batch","params":{"calls":[]}}`, false, ""},
		{"a case variant of tools/call", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"Tools/Call","params":{"name":"delete_thing","arguments":{}}}`, false, ""},
		{"a case variant of a known method", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"Resources/Read","params":{"uri":"test://r0"}}`, false, ""},
		{"params under a member equal to params only under folding", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","Params":{"tool":"delete_thing"}}`, false, ""},
		{"params under a long s (U+017F)", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","paramſ":{"tool":"delete_thing"}}`, false, ""},
		{"a member JSON-RPC does not have", "unknown_methods: relay\n", `{"jsonrpc":"2.0","id":9,"method":"x-vendor/run","params":{"tool":"echo"},"extra":1}`, false, ""},
		{"a notification naming a gated tool", "unknown_methods: relay\n", `{"jsonrpc":"2.0","method":"x-vendor/run","params":{"tool":"delete_thing"}}`, false, ""},
		{"control: a harmless notification", "unknown_methods: relay\n", `{"jsonrpc":"2.0","method":"x-vendor/run","params":{"tool":"echo"}}`, true, ""},
		{"default policy: a notification", "", `{"jsonrpc":"2.0","method":"x-vendor/run","params":{"tool":"echo"}}`, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ls, f := startUnknown(t, c.policy)
			ls.send(c.line)
			if strings.Contains(c.line, `"id":9`) {
				res := ls.await(`"id":9`)
				var m struct {
					Result json.RawMessage
					Error  *struct {
						Code    int
						Message string
					}
				}
				if err := json.Unmarshal(res, &m); err != nil {
					t.Fatal(err)
				}
				if relayed := m.Error == nil; relayed != c.relayed {
					t.Fatalf("relayed = %v, want %v: %s", relayed, c.relayed, res)
				}
				if !c.relayed && (m.Error.Code != -32601 || !strings.Contains(m.Error.Message, "mcpsafe proxy")) {
					t.Fatalf("refusal: %s", res)
				}
			} else {
				// A notification has no answer: a call the upstream
				// answers after it has read the notification, if relayed.
				// (The upstream's SDK server ignores a notification of a
				// method it takes as a request; what counts is what it read.)
				ls.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"noop","arguments":{}}}`)
				ls.await(`"id":10`)
			}
			if got := strings.TrimSpace(readUpstreamFile(t, f.ran)); got != c.ran {
				t.Fatalf("the upstream ran %q, want %q", got, c.ran)
			}
			if got := strings.Contains(readUpstreamFile(t, f.in), c.line+"\n"); got != c.relayed {
				t.Fatalf("the upstream read the line: %v, want %v", got, c.relayed)
			}
		})
	}
}

// The upstream's prompt and resource list changes reach the client, over
// stdio and through an SDK client in memory alike.
func TestListChangedRelayed(t *testing.T) {
	t.Run("stdio", func(t *testing.T) {
		ls, _ := startUnknown(t, "")
		ls.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"poke","arguments":{}}}`)
		ls.awaitAll(`notifications/prompts/list_changed`, `notifications/resources/list_changed`)
		// The client heard of the change after the proxy's upstream
		// session did (which drops its cached lists then).
		ls.send(`{"jsonrpc":"2.0","id":7,"method":"prompts/list"}`)
		if l := ls.await(`"id":7`); !bytes.Contains(l, []byte(`"p1"`)) || bytes.Contains(l, []byte(changedPrompt)) {
			t.Fatalf("prompts after the change: %s", l)
		}
	})
	t.Run("in memory", func(t *testing.T) {
		u, up := newGoUpstream(t)
		s := newProxy(t, up, nil)
		prompts, resources := make(chan struct{}, 10), make(chan struct{}, 10)
		cs := connect(t, s, &mcp.ClientOptions{
			PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { prompts <- struct{}{} },
			ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { resources <- struct{}{} },
		})
		caps := cs.InitializeResult().Capabilities
		if !caps.Prompts.ListChanged || !caps.Resources.ListChanged {
			t.Fatalf("list changes not advertised: %+v %+v", caps.Prompts, caps.Resources)
		}
		u.srv.AddPrompt(&mcp.Prompt{Name: "new"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) { return nil, nil })
		u.srv.RemoveResources("test://r1")
		for what, ch := range map[string]chan struct{}{"prompts": prompts, "resources": resources} {
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Fatalf("no %s/list_changed reached the client", what)
			}
		}
		res, err := cs.ListResources(testCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Resources) != 0 {
			t.Fatalf("resources after the change: %+v", res.Resources)
		}
	})
}
