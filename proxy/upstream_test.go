package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Go upstream server, in process, for the edge cases the npm server
// cannot produce on demand.
type goUpstream struct {
	srv       *mcp.Server
	mu        sync.Mutex
	calls     map[string]int
	lastArgs  map[string]string
	started   chan string
	cancelled chan string
}

var objectSchema = json.RawMessage(`{"type":"object"}`)

func boolp(b bool) *bool { return &b }

func newGoUpstream(t testing.TB) (*goUpstream, mcp.Transport) {
	t.Helper()
	u := &goUpstream{
		srv:       mcp.NewServer(&mcp.Implementation{Name: "go-upstream"}, nil),
		calls:     map[string]int{},
		lastArgs:  map[string]string{},
		started:   make(chan string, 10),
		cancelled: make(chan string, 10),
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	u.add("echo", ro, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo " + string(req.Params.Arguments)}}}, nil
	})
	u.add("fail_result", ro, failResult)
	u.add("proto_error", ro, protoError)
	u.add("slow", ro, u.slow)
	u.add("progress", ro, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		for i := 1; i <= 2; i++ {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 2, Message: fmt.Sprintf("step %d", i),
			}); err != nil {
				return nil, err
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	done := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	}
	u.add("delete_thing", nil, done)                                             // no annotations: gated, irreversible
	u.add("set_flag", &mcp.ToolAnnotations{DestructiveHint: boolp(false)}, done) // gated, reversible
	u.add("gated_fail", nil, failResult)
	u.add("gated_proto", nil, protoError)
	u.add("gated_slow", nil, u.slow)
	u.srv.AddResource(&mcp.Resource{URI: "test://r1", Name: "r1", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "resource body"}}}, nil
		})
	u.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "test://items/{id}", Name: "items"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "item " + req.Params.URI}}}, nil
		})
	u.srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
		})
	return u, u.transport(t)
}

// transport connects one more client transport to the upstream server.
func (u *goUpstream) transport(t testing.TB) mcp.Transport {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := u.srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return ct
}

func (u *goUpstream) add(name string, ann *mcp.ToolAnnotations, h mcp.ToolHandler) {
	u.srv.AddTool(&mcp.Tool{Name: name, InputSchema: objectSchema, Annotations: ann},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.mu.Lock()
			u.calls[name]++
			u.lastArgs[name] = string(req.Params.Arguments)
			u.mu.Unlock()
			return h(ctx, req)
		})
}

func (u *goUpstream) count(name string) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls[name]
}

func (u *goUpstream) slow(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	u.started <- req.Params.Name
	select {
	case <-ctx.Done():
		u.cancelled <- req.Params.Name
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "not cancelled"}}}, nil
	}
}

func failResult(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{&mcp.TextContent{Text: "upstream says no"}},
		StructuredContent: map[string]any{"code": "E_UPSTREAM", "detail": "kept as is"},
	}, nil
}

func protoError(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return nil, &jsonrpc.Error{Code: -32042, Message: "upstream protocol error"}
}

func hasToken(t *mcp.Tool) bool {
	props, _ := t.InputSchema.(map[string]any)["properties"].(map[string]any)
	_, ok := props[mcpsafe.TokenField]
	return ok
}

func listTools(t testing.TB, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tl, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tl.Name] = tl
	}
	return out
}

// The default policy: not read-only means gated; no destructiveHint means
// irreversible; destructiveHint:false means reversible.
func TestDefaultPolicy(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, nil)
	cs := connect(t, s, nil) // cannot elicit
	tools := listTools(t, cs)
	for name, want := range map[string]bool{"echo": false, "delete_thing": true, "set_flag": true, "slow": false} {
		if hasToken(tools[name]) != want {
			t.Errorf("%s gated=%v, want %v", name, hasToken(tools[name]), want)
		}
	}
	if a := tools["delete_thing"].Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint || a.ReadOnlyHint {
		t.Errorf("delete_thing must be advertised destructive, got %+v", a)
	}
	res := call(t, cs, "delete_thing", map[string]any{"x": 1})
	if reasonOf(t, res) != mcpsafe.ReasonElicitationUnsupported || u.count("delete_thing") != 0 {
		t.Fatalf("irreversible without elicitation: %s (upstream calls %d)", text(res), u.count("delete_thing"))
	}
	args := map[string]any{"x": 1}
	args[mcpsafe.TokenField] = tokenOf(t, call(t, cs, "set_flag", args))
	if u.count("set_flag") != 0 {
		t.Fatal("set_flag ran before approval")
	}
	if res := call(t, cs, "set_flag", args); res.IsError || u.count("set_flag") != 1 {
		t.Fatalf("token redeem: %s", text(res))
	}
	// The gate forwards the canonical arguments without the token.
	if got := u.lastArgs["set_flag"]; got != `{"x":1}` {
		t.Fatalf("upstream received %s", got)
	}
	if res := call(t, cs, "echo", map[string]any{"b": 2, "a": 1}); res.IsError || u.count("echo") != 1 {
		t.Fatalf("read-only: %s", text(res))
	}
}

func TestToolListChanges(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, "tools:\n  delete_thing:\n    preview: 'Delete {{.x}}'\n"))
	changed := make(chan struct{}, 10)
	var notified atomic.Int32
	cs := connect(t, s, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		notified.Add(1)
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	waitFor := func(what string, ok func(map[string]*mcp.Tool) bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok(listTools(t, cs)) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for: %s", what)
			}
			select {
			case <-changed:
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	u.add("added_ro", &mcp.ToolAnnotations{ReadOnlyHint: true}, failResult)
	u.add("added_rw", nil, failResult)
	waitFor("new tools mirrored", func(m map[string]*mcp.Tool) bool {
		return m["added_ro"] != nil && !hasToken(m["added_ro"]) && m["added_rw"] != nil && hasToken(m["added_rw"])
	})
	// The SDK client handles notifications in a queue of their own, so the
	// list may show the new tools before the handler ran.
	for deadline := time.Now().Add(10 * time.Second); notified.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no tools/list_changed reached the downstream client")
		}
	}
	// echo loses readOnlyHint upstream: from now on it is gated.
	u.add("echo", nil, failResult)
	waitFor("echo gated", func(m map[string]*mcp.Tool) bool { return m["echo"] != nil && hasToken(m["echo"]) })
	if r := reasonOf(t, call(t, cs, "echo", map[string]any{})); r != mcpsafe.ReasonElicitationUnsupported {
		t.Fatalf("echo after losing readOnlyHint: reason %q", r)
	}
	u.srv.RemoveTools("delete_thing", "added_ro")
	waitFor("tools removed", func(m map[string]*mcp.Tool) bool { return m["delete_thing"] == nil && m["added_ro"] == nil })
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_thing", Arguments: map[string]any{}}); err == nil {
		t.Fatal("a removed tool is still callable")
	}
	// A policy-named tool that comes back is gated with its policy again.
	u.add("delete_thing", &mcp.ToolAnnotations{ReadOnlyHint: true}, failResult)
	waitFor("delete_thing back, gated by its policy entry", func(m map[string]*mcp.Tool) bool {
		return m["delete_thing"] != nil && hasToken(m["delete_thing"])
	})
}

func TestUpstreamErrorsPassedBack(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `
tools:
  gated_fail: {auto_approve: ["true"]}
  gated_proto: {auto_approve: ["true"]}
`))
	cs := connect(t, s, nil)
	direct, err := s.Upstream.CallTool(context.Background(), &mcp.CallToolParams{Name: "fail_result", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fail_result", "gated_fail"} {
		got := call(t, cs, name, map[string]any{})
		if payload(got) != payload(direct) {
			t.Errorf("%s: got %s, want upstream's %s", name, payload(got), payload(direct))
		}
	}
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "proto_error", Arguments: map[string]any{}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != -32042 || !strings.Contains(werr.Message, "upstream protocol error") {
		t.Fatalf("pass-through protocol error: got %v", err)
	}
	// Behind the gate too, the client gets the upstream's protocol error
	// itself (a transparent gateway keeps codes such as -32021, missing
	// client capability); the gate journals the call as failed.
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "gated_proto", Arguments: map[string]any{}})
	if !errors.As(err, &werr) || werr.Code != -32042 || !strings.Contains(werr.Message, "upstream protocol error") || u.count("gated_proto") != 1 {
		t.Fatalf("gated protocol error: got %v", err)
	}
	if b := readFile(t, s.JournalPath); !strings.Contains(b, journal.Failed) {
		t.Fatalf("journal has no failed outcome:\n%s", b)
	}
}

func TestCancellationForwarded(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, "tools:\n  gated_slow: {auto_approve: ['true']}\n"))
	cs := connect(t, s, nil)
	for _, name := range []string{"slow", "gated_slow"} {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
			errc <- err
		}()
		select {
		case got := <-u.started:
			if got != name {
				t.Fatalf("started %s", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never reached upstream", name)
		}
		cancel()
		select {
		case got := <-u.cancelled:
			if got != name {
				t.Fatalf("cancelled %s", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the downstream cancellation did not reach upstream", name)
		}
		if err := <-errc; err == nil {
			t.Fatalf("%s: cancelled call returned no error", name)
		}
	}
}

func TestProgressRelayed(t *testing.T) {
	_, up := newGoUpstream(t)
	s := newProxy(t, up, nil)
	var mu sync.Mutex
	var got []string
	cs := connect(t, s, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%v:%v/%v:%s", r.Params.ProgressToken, r.Params.Progress, r.Params.Total, r.Params.Message))
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	params.SetProgressToken("client-token-7")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	want := "client-token-7:1/2:step 1,client-token-7:2/2:step 2"
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		g := strings.Join(got, ",")
		mu.Unlock()
		if g == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress: got %q, want %q", g, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestResourcesAndPromptsPassThrough(t *testing.T) {
	_, up := newGoUpstream(t)
	s := newProxy(t, up, nil)
	cs := connect(t, s, nil)
	ctx := context.Background()
	same := func(what string, got, want any, gerr, werr error) {
		t.Helper()
		if gerr != nil || werr != nil {
			t.Fatalf("%s: %v / %v", what, gerr, werr)
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		// Downstream sessions add their own _meta; compare without it.
		strip := func(raw []byte) string {
			var m map[string]any
			json.Unmarshal(raw, &m)
			delete(m, "_meta")
			delete(m, "resultType")
			out, _ := json.Marshal(m)
			return string(out)
		}
		if strip(a) != strip(b) {
			t.Fatalf("%s:\n got %s\nwant %s", what, a, b)
		}
	}
	g1, e1 := cs.ListResources(ctx, nil)
	w1, f1 := s.Upstream.ListResources(ctx, nil)
	same("resources/list", g1, w1, e1, f1)
	g2, e2 := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://items/42"})
	w2, f2 := s.Upstream.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://items/42"})
	same("resources/read", g2, w2, e2, f2)
	g3, e3 := cs.ListResourceTemplates(ctx, nil)
	w3, f3 := s.Upstream.ListResourceTemplates(ctx, nil)
	same("resources/templates/list", g3, w3, e3, f3)
	g4, e4 := cs.ListPrompts(ctx, nil)
	w4, f4 := s.Upstream.ListPrompts(ctx, nil)
	same("prompts/list", g4, w4, e4, f4)
	g5, e5 := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "ann"}})
	w5, f5 := s.Upstream.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "ann"}})
	same("prompts/get", g5, w5, e5, f5)
	if len(g1.Resources) != 1 || len(g4.Prompts) != 1 {
		t.Fatalf("lists: %d resources, %d prompts", len(g1.Resources), len(g4.Prompts))
	}
}

// Auto-approve fires only on the CEL bool true: "true", 1, a missing key
// (an evaluation error) all ask a human, here a client that cannot answer.
func TestAutoApproveExactTrue(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `
tools:
  delete_thing:
    auto_approve:
      - name: flagged
        expr: args.flag
`))
	cs := connect(t, s, nil)
	for _, c := range []struct {
		flag any
		ran  bool
	}{
		{"true", false}, {1, false}, {1.0, false}, {[]any{true}, false}, {map[string]any{"x": true}, false},
		{nil, false}, {false, false},
		{true, true}, // control
	} {
		before := u.count("delete_thing")
		res := call(t, cs, "delete_thing", map[string]any{"flag": c.flag})
		ran := u.count("delete_thing") > before
		if ran != c.ran || res.IsError == c.ran {
			t.Errorf("flag %#v: ran=%v, want %v (%s)", c.flag, ran, c.ran, text(res))
		}
	}
	before := u.count("delete_thing")
	if res := call(t, cs, "delete_thing", map[string]any{}); !res.IsError || u.count("delete_thing") != before {
		t.Fatalf("missing key auto-approved: %s", text(res))
	}
}

// Deny and allow rules run before any approval; a rule that errors denies.
func TestDenyAllowRules(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `
tools:
  delete_thing:
    deny:
      - name: protected
        expr: 'args.path.startsWith("/protected/")'
    allow:
      - 'args.path.startsWith("/")'
    auto_approve: ['true']
`))
	cs := connect(t, s, nil)
	for _, c := range []struct {
		args   map[string]any
		reason string
	}{
		{map[string]any{"path": "/protected/x"}, mcpsafe.ReasonPolicyDenied},
		{map[string]any{"path": "relative"}, mcpsafe.ReasonPolicyDenied},
		{map[string]any{"other": 1}, mcpsafe.ReasonPolicyDenied}, // the deny rule errors: denied
		{map[string]any{"path": 7}, mcpsafe.ReasonPolicyDenied},
		{map[string]any{"path": "/ok"}, ""}, // control
	} {
		before := u.count("delete_thing")
		res := call(t, cs, "delete_thing", c.args)
		if got := reasonOf(t, res); got != c.reason {
			t.Errorf("%v: reason %q, want %q (%s)", c.args, got, c.reason, text(res))
		}
		if ran := u.count("delete_thing") > before; ran != (c.reason == "") {
			t.Errorf("%v: ran=%v", c.args, ran)
		}
	}
}

// The preview template renders every value with prompt.Quote, so an
// argument cannot forge lines or hide characters in the approval prompt.
func TestPreviewQuoting(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `
tools:
  delete_thing:
    preview: |
      Delete {{.name}}
      now
  gated_fail:
    preview: "Break {{.missing}}"
`))
	var msg atomic.Value
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg.Store(r.Params.Message)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	call(t, cs, "delete_thing", map[string]any{"name": "a.txt\nApproved: yes \u202eexe.txt"})
	m, _ := msg.Load().(string)
	if want := `Delete "a.txt\nApproved: yes \u202eexe.txt" now`; !strings.Contains(m, want) {
		t.Fatalf("prompt %q does not contain %q", m, want)
	}
	if strings.Contains(m, "\nApproved") || strings.Contains(m, "\u202e") {
		t.Fatalf("raw control characters reached the prompt: %q", m)
	}
	// A template naming an argument the call lacks: refused, never asked.
	msg.Store("")
	res := call(t, cs, "gated_fail", map[string]any{})
	if reasonOf(t, res) != mcpsafe.ReasonPreviewFailed || msg.Load() != "" || u.count("gated_fail") != 0 {
		t.Fatalf("broken template: %s", text(res))
	}
}

// A read-only tool gated on purpose; auto_approve is ignored in elicit mode.
func TestGateReadOnlyAndElicitMode(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `
tools:
  echo: {gate: true}
  set_flag: {mode: elicit, auto_approve: ['true']}
`))
	cs := connect(t, s, nil)
	if r := reasonOf(t, call(t, cs, "echo", map[string]any{})); r == "" || u.count("echo") != 0 {
		t.Fatalf("gated read-only tool ran without approval (reason %q)", r)
	}
	if r := reasonOf(t, call(t, cs, "set_flag", map[string]any{})); r != mcpsafe.ReasonElicitationUnsupported || u.count("set_flag") != 0 {
		t.Fatalf("elicit mode auto-approved: reason %q", r)
	}
}

// Upstream dies in the middle of a gated call: the call fails, is journaled
// as failed, and is not retried (the upstream saw it exactly once).
func TestUpstreamCrashMidCall(t *testing.T) {
	count := filepath.Join(t.TempDir(), "invocations")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"=1", "MCPSAFE_PROXY_TEST_COUNT="+count)
	if testing.Verbose() {
		cmd.Stderr = os.Stderr
	}
	s := newProxy(t, &mcp.CommandTransport{Command: cmd}, nil)
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: answer("accept", true)})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash_write", Arguments: map[string]any{"x": 1}})
	if err == nil && !res.IsError {
		t.Fatalf("a call whose upstream died succeeded: %s", text(res))
	}
	if n := strings.Count(readFile(t, count), "\n"); n != 1 {
		t.Fatalf("upstream saw the call %d times, want exactly 1", n)
	}
	if b := readFile(t, s.JournalPath); !strings.Contains(b, journal.Failed) {
		t.Fatalf("journal has no failed outcome:\n%s", b)
	}
	// Later calls fail fast, and nothing is replayed.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash_write", Arguments: map[string]any{"x": 1}}); err == nil && !res.IsError {
		t.Fatalf("a call after the upstream died succeeded: %s", text(res))
	}
	if n := strings.Count(readFile(t, count), "\n"); n != 1 {
		t.Fatalf("upstream saw %d invocations after the crash, want 1", n)
	}
}

const crashEnv = "MCPSAFE_PROXY_TEST_CRASH_UPSTREAM"

func TestMain(m *testing.M) {
	if os.Getenv(gwUpstreamEnv) == "1" { // before the gateway: its children inherit its environment
		os.Exit(runGatewayUpstream())
	}
	if c := os.Getenv(gatewayBenchEnv); c != "" {
		os.Exit(serveGateway(c))
	}
	if os.Getenv(crashEnv) == "1" {
		os.Exit(runCrashUpstream())
	}
	if os.Getenv(serveEnv) == "1" {
		os.Exit(serveProxy())
	}
	if os.Getenv(unknownUpstreamEnv) == "1" {
		os.Exit(runUnknownUpstream())
	}
	if os.Getenv(progressUpstreamEnv) == "1" {
		os.Exit(runProgressUpstream())
	}
	if mode := os.Getenv(benchModeEnv); mode != "" {
		os.Exit(runBenchProcess(mode))
	}
	os.Exit(m.Run())
}

// runCrashUpstream is a stdio MCP server whose one tool records the call
// and kills the process before answering.
func runCrashUpstream() int {
	srv := mcp.NewServer(&mcp.Implementation{Name: "crash-upstream"}, nil)
	srv.AddTool(&mcp.Tool{Name: "crash_write", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			f, err := os.OpenFile(os.Getenv("MCPSAFE_PROXY_TEST_COUNT"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				f.WriteString("called\n")
				f.Sync()
				f.Close()
			}
			os.Exit(3)
			return nil, nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// A resolver whose tool upstream stops calling read-only is never called
// again: the gated call is refused instead.
func TestResolverMustStayReadOnly(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `
tools:
  delete_thing:
    auto_approve: ['true']
    resolver:
      tool: echo
      args: {path: args.path}
`))
	cs := connect(t, s, nil)
	if res := call(t, cs, "delete_thing", map[string]any{"path": "/x"}); res.IsError || u.count("echo") != 2 || u.count("delete_thing") != 1 {
		t.Fatalf("control: %s (echo %d, delete %d)", text(res), u.count("echo"), u.count("delete_thing"))
	}
	if got := u.lastArgs["echo"]; got != `{"path":"/x"}` {
		t.Fatalf("resolver arguments: %s", got)
	}
	u.add("echo", nil, failResult) // no longer read-only
	deadline := time.Now().Add(10 * time.Second)
	for s.passesThrough("echo") {
		if time.Now().After(deadline) {
			t.Fatal("the list change never arrived")
		}
		time.Sleep(10 * time.Millisecond)
	}
	res := call(t, cs, "delete_thing", map[string]any{"path": "/x"})
	if reasonOf(t, res) != mcpsafe.ReasonResolverFailed || u.count("echo") != 2 || u.count("delete_thing") != 1 {
		t.Fatalf("resolver on a non-read-only tool: %s (echo %d, delete %d)", text(res), u.count("echo"), u.count("delete_thing"))
	}
}

// Rules see the resolver's answer; a resolver that finds nothing, errors,
// or cannot build its arguments refuses the call before anyone is asked.
func TestResolverAnswers(t *testing.T) {
	u, up := newGoUpstream(t)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	u.add("lookup", ro, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a struct{ Name string }
		json.Unmarshal(req.Params.Arguments, &a)
		switch a.Name {
		case "empty":
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "  "}}}, nil
		case "error":
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such thing"}}}, nil
		case "proto":
			return nil, &jsonrpc.Error{Code: -32000, Message: "lookup broke"}
		}
		return &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "owner: " + a.Name}},
			StructuredContent: map[string]any{"owner": a.Name},
		}, nil
	})
	s := newProxy(t, up, mustPolicy(t, `
tools:
  delete_thing:
    resolver:
      tool: lookup
      args:
        name: args.name + ""
    deny:
      - name: protected
        expr: 'resolved.structured.owner == "root"'
    auto_approve:
      - 'resolved.text.startsWith("owner: ")'
`))
	cs := connect(t, s, nil)
	for _, c := range []struct {
		args   map[string]any
		reason string
	}{
		{map[string]any{"name": "root"}, mcpsafe.ReasonPolicyDenied},
		{map[string]any{"name": "empty"}, mcpsafe.ReasonResolverFailed},
		{map[string]any{"name": "error"}, mcpsafe.ReasonResolverFailed},
		{map[string]any{"name": "proto"}, mcpsafe.ReasonResolverFailed},
		{map[string]any{"name": 7}, mcpsafe.ReasonResolverFailed}, // int + "": no such overload
		{map[string]any{}, mcpsafe.ReasonResolverFailed},          // no such key
		{map[string]any{"name": "ann"}, ""},                       // control: auto-approved on the resolved text
	} {
		before := u.count("delete_thing")
		res := call(t, cs, "delete_thing", c.args)
		if got := reasonOf(t, res); got != c.reason {
			t.Errorf("%v: reason %q, want %q (%s)", c.args, got, c.reason, text(res))
		}
		if ran := u.count("delete_thing") > before; ran != (c.reason == "") {
			t.Errorf("%v: ran=%v", c.args, ran)
		}
	}
}
