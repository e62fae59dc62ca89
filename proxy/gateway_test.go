package proxy

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/seal"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two real upstreams behind one gateway: every tool and prompt is served
// under its server's prefix, only there, and each call reaches its own
// server; plans and journal records name the server.
func TestGatewayNamespacing(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "hello.txt"), "hi there")
	gs := newGoServer(t)
	g, journalPath := newGateway(t, "servers:\n"+fsServerYAML(t, "fs", dir, "")+gs.yaml(t, "go", ""))
	var asked []string
	cs := connectGateway(t, g, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}})

	names := toolNames(t, cs)
	for _, want := range []string{"fs__read_text_file", "fs__write_file", "go__echo", "go__note", "go__wipe"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "fs__") && !strings.HasPrefix(n, "go__") {
			t.Errorf("tool %q is served without its server's prefix", n)
		}
	}
	// Attack: the upstream's own name is not served.
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Fatalf("a bare upstream name was served: %s", text(res))
	}
	// Control: each prefixed call reaches its own server.
	if res := call(t, cs, "go__echo", map[string]any{"x": 1}); res.IsError || !strings.Contains(text(res), `echo {\"x\":1}`) {
		t.Fatalf("go__echo: %s", text(res))
	}
	if res := call(t, cs, "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "hello.txt")}); res.IsError || !strings.Contains(text(res), "hi there") {
		t.Fatalf("fs__read_text_file: %s", text(res))
	}
	// A gated call: the plan names the gateway server, the journal the tool
	// with its prefix.
	if res := call(t, cs, "go__note", map[string]any{"msg": "one"}); res.IsError {
		t.Fatalf("go__note: %s", text(res))
	}
	if gs.calls() != "note {\"msg\":\"one\"}\n" {
		t.Fatalf("upstream calls: %q", gs.calls())
	}
	if len(asked) != 1 || !strings.Contains(asked[0], `gateway server "go"`) {
		t.Fatalf("the plan does not name the server: %q", asked)
	}
	var seen bool
	for _, l := range lines(readFile(t, journalPath)) {
		var r journal.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Decision == journal.Executed {
			seen = r.Tool == "go__note"
		}
	}
	if !seen {
		t.Fatalf("no executed record for go__note in %s", readFile(t, journalPath))
	}
	// Prompts are namespaced the same way.
	pl, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var pnames []string
	for _, p := range pl.Prompts {
		pnames = append(pnames, p.Name)
	}
	if !slices.Contains(pnames, "go__greet") || slices.Contains(pnames, "greet") {
		t.Fatalf("prompts: %v", pnames)
	}
	gp, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "go__greet"})
	if err != nil || len(gp.Messages) != 1 {
		t.Fatalf("go__greet: %v %v", gp, err)
	}
	if _, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "fs__greet"}); err == nil {
		t.Fatal("a prompt was served under another server's prefix")
	}
}

// Two servers that would serve the same name: a startup error, never a
// silent shadow. Control: the same two servers with their prefixes start.
func TestGatewayCollisionRefused(t *testing.T) {
	a, b := newGoServer(t), newGoServer(t)
	dir := t.TempDir()
	_, f := gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", "    prefix: false\n")+b.yaml(t, "b", "    prefix: false\n"))
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), GatewayOptions{})
	if err == nil {
		g.Close()
		t.Fatal("two bare servers with the same tools started")
	}
	if !strings.Contains(err.Error(), "already serves") {
		t.Fatalf("error does not say why: %v", err)
	}
	gw, _ := newGateway(t, "servers:\n"+a.yaml(t, "a", "")+b.yaml(t, "b", "    prefix: false\n"))
	cs := connectGateway(t, gw, nil)
	if !hasTool(t, cs, "a__echo") || !hasTool(t, cs, "echo") {
		t.Fatalf("control: %v", toolNames(t, cs))
	}
}

// Each server's policy applies to its own tools only.
func TestGatewayPerServerPolicy(t *testing.T) {
	a, b := newGoServer(t), newGoServer(t)
	g, _ := newGateway(t, "servers:\n"+
		a.yaml(t, "a", "    policy:\n      tools:\n        note:\n          auto_approve: ['true']\n")+
		b.yaml(t, "b", "    policy:\n      mode: token\n      allow_token_for: [note, wipe]\n      tools:\n        wipe:\n          deny: ['true']\n"))
	cs := connectGateway(t, g, nil)
	if res := call(t, cs, "a__note", map[string]any{"n": 1}); res.IsError || a.calls() == "" {
		t.Fatalf("a__note, auto-approved by a's policy: %s", text(res))
	}
	res := call(t, cs, "b__note", map[string]any{"n": 1})
	tok := tokenOf(t, res) // b's policy: a token, not a's auto-approval
	if b.calls() != "" {
		t.Fatalf("b__note ran before approval: %q", b.calls())
	}
	if res := call(t, cs, "b__note", map[string]any{"n": 1, mcpsafe.TokenField: tok}); res.IsError || b.calls() == "" {
		t.Fatalf("b__note with its token: %s", text(res))
	}
	if res := call(t, cs, "b__wipe", map[string]any{}); reasonOf(t, res) != mcpsafe.ReasonPolicyDenied {
		t.Fatalf("b__wipe, denied by b's policy: %s", text(res))
	}
	// Attack: a token of one server is not good at another, even for a tool
	// of the same upstream name and arguments (audience and name differ).
	tokB := tokenOf(t, call(t, cs, "b__note", map[string]any{"n": 2}))
	before := a.calls()
	if res := call(t, cs, "a__wipe", map[string]any{"n": 2, mcpsafe.TokenField: tokB}); !res.IsError || a.calls() != before {
		t.Fatalf("b's token ran a tool of a: %s", text(res))
	}
	// Audiences differ per server by default.
	if g.Server("a").Audience == g.Server("b").Audience {
		t.Fatalf("servers share an audience: %s", g.Server("a").Audience)
	}
}

// A crashed stdio upstream: its tools leave tools/list (with
// list_changed), calls to them are refused as server_unavailable and reach
// no other server; it is restarted with backoff and its tools come back.
func TestGatewayCrashRestart(t *testing.T) {
	gs, other := newGoServer(t), newGoServer(t)
	g, _ := newGateway(t, "servers:\n"+gs.yaml(t, "go", "")+other.yaml(t, "other", "    prefix: false\n"))
	changed := make(chan struct{}, 16)
	cs := connectGateway(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	pid, err := strconv.Atoi(strings.TrimSpace(call(t, cs, "go__pid", map[string]any{}).Content[0].(*mcp.TextContent).Text))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, gs.Block, "") // keep it down until the checks are done
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
	eventually(t, "go's tools withdrawn", func() bool { return !hasTool(t, cs, "go__note") })
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no tools/list_changed when the server went down")
	}
	if !hasTool(t, cs, "note") {
		t.Fatal("the other server's tools went too")
	}
	for _, name := range []string{"go__note", "go__echo"} {
		res := call(t, cs, name, map[string]any{})
		if reasonOf(t, res) != ReasonServerUnavailable || !strings.Contains(text(res), `\"go\"`) {
			t.Fatalf("%s while down: %s", name, text(res))
		}
	}
	if other.calls() != "" || gs.calls() != "" {
		t.Fatalf("a call was routed while its server was down: %q %q", other.calls(), gs.calls())
	}
	// Control: the other server still serves.
	if res := call(t, cs, "echo", map[string]any{}); res.IsError {
		t.Fatalf("other server: %s", text(res))
	}
	os.Remove(gs.Block)
	eventually(t, "go restarted", func() bool { return hasTool(t, cs, "go__note") })
	res := call(t, cs, "go__pid", map[string]any{})
	if res.IsError || res.Content[0].(*mcp.TextContent).Text == strconv.Itoa(pid) {
		t.Fatalf("after restart: %s", text(res))
	}
}

// With a ledger other processes share, every server needs an explicit
// audience (at start and on reload); control: with audiences it starts.
func TestGatewaySharedLedgerNeedsAudiences(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := seal.WriteKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	a, b := newGoServer(t), newGoServer(t)
	dir := t.TempDir()
	gc := serverconfFor(filepath.Join(dir, "j.jsonl"))
	gc.LedgerURL, gc.KeyFile = "file:"+filepath.Join(dir, "l.db"), keyFile
	shared := stores(t, gc)
	_, f := gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", "    audience: team/a\n")+b.yaml(t, "b", ""))
	if g, err := NewGateway(context.Background(), f, shared, GatewayOptions{SharedLedger: serverconf.SharedLedger(gc.LedgerURL)}); err == nil {
		g.Close()
		t.Fatal("a server without an audience started on a shared ledger")
	} else if !strings.Contains(err.Error(), "servers.b.audience is required") {
		t.Fatalf("error: %v", err)
	}
	_, f = gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", "    audience: team/a\n")+b.yaml(t, "b", "    audience: team/b\n"))
	g, err := NewGateway(context.Background(), f, shared, GatewayOptions{SharedLedger: serverconf.SharedLedger(gc.LedgerURL)})
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	defer g.Close()
	if g.Server("a").Audience != "team/a" || g.Server("b").Audience != "team/b" {
		t.Fatalf("audiences: %s %s", g.Server("a").Audience, g.Server("b").Audience)
	}
	_, f = gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", "    audience: team/a\n")+b.yaml(t, "c", ""))
	if err := g.Reload(context.Background(), f); err == nil || !strings.Contains(err.Error(), "servers.c.audience") {
		t.Fatalf("reload adding a server without an audience: %v", err)
	}
	if g.Server("b") == nil {
		t.Fatal("the refused reload stopped a server")
	}
}

// Close does not wait out the backoff of a server that is down.
func TestGatewayCloseWhileRestarting(t *testing.T) {
	gs := newGoServer(t)
	dir := t.TempDir()
	_, f := gatewayFile(t, dir, "servers:\n"+gs.yaml(t, "go", ""))
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), GatewayOptions{RestartMin: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cs := connectGateway(t, g, nil)
	pid, err := strconv.Atoi(strings.TrimSpace(call(t, cs, "go__pid", map[string]any{}).Content[0].(*mcp.TextContent).Text))
	if err != nil {
		t.Fatal(err)
	}
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
	eventually(t, "go's tools withdrawn", func() bool { return !hasTool(t, cs, "go__pid") })
	done := make(chan error, 1)
	go func() { done <- g.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close waited for the restart backoff")
	}
}

// An upstream that later announces a tool another server already serves
// (both bare) gets it withheld: calls keep reaching the first server.
// Control: a new tool that collides with nothing appears.
func TestGatewayLaterCollisionWithheld(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	up := mcp.NewServer(&mcp.Implementation{Name: "late"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	answer := func(s string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil
		}
	}
	up.AddTool(&mcp.Tool{Name: "look", InputSchema: objectSchema, Annotations: ro}, answer("looked"))
	hs := &http.Server{Handler: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil)}
	l2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go hs.Serve(l2)
	t.Cleanup(func() { hs.Close() })
	gs := newGoServer(t)
	g, _ := newGateway(t, "servers:\n"+gs.yaml(t, "go", "    prefix: false\n")+"  late:\n    url: http://"+addr+"/\n    prefix: false\n")
	cs := connectGateway(t, g, nil)
	up.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema, Annotations: ro}, answer("shadowed!"))
	up.AddTool(&mcp.Tool{Name: "look2", InputSchema: objectSchema, Annotations: ro}, answer("looked again"))
	eventually(t, "look2 announced", func() bool { return hasTool(t, cs, "look2") })
	if res := call(t, cs, "echo", map[string]any{}); res.IsError || !strings.Contains(text(res), "echo {}") {
		t.Fatalf("echo after another server announced it: %s", text(res))
	}
	if res := call(t, cs, "look2", map[string]any{}); res.IsError || !strings.Contains(text(res), "looked again") {
		t.Fatalf("control: %s", text(res))
	}
	// While the first server is down its names stay its own: the other
	// server's re-announcement does not take them over.
	pid, err := strconv.Atoi(strings.TrimSpace(call(t, cs, "pid", map[string]any{}).Content[0].(*mcp.TextContent).Text))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, gs.Block, "")
	if err := killPID(pid); err != nil {
		t.Fatal(err)
	}
	eventually(t, "go's tools withdrawn", func() bool { return !hasTool(t, cs, "pid") })
	up.AddTool(&mcp.Tool{Name: "look3", InputSchema: objectSchema, Annotations: ro}, answer("again")) // makes it re-announce
	eventually(t, "look3 announced", func() bool { return hasTool(t, cs, "look3") })
	if res := call(t, cs, "echo", map[string]any{}); reasonOf(t, res) != ReasonServerUnavailable {
		t.Fatalf("echo while its server is down: %s", text(res))
	}
	os.Remove(gs.Block)
	eventually(t, "go back", func() bool { return hasTool(t, cs, "pid") })
	// The restarted server lists its tools a moment before the gateway
	// routes to it again (calls in that window are refused, never sent
	// elsewhere), so the call is retried until the server is back.
	var res *mcp.CallToolResult
	eventually(t, "echo answered by its own server again", func() bool {
		res = call(t, cs, "echo", map[string]any{})
		if res.IsError && reasonOf(t, res) != ReasonServerUnavailable {
			t.Fatalf("echo after its server came back: %s", text(res))
		}
		return !res.IsError
	})
	if !strings.Contains(text(res), "echo {}") {
		t.Fatalf("echo after its server came back: %s", text(res))
	}
}

// Every journal record names the server: by the prefixed tool name, and
// for a bare server by its summary, even under a preview template.
func TestGatewayJournalNamesServer(t *testing.T) {
	a, b := newGoServer(t), newGoServer(t)
	g, journalPath := newGateway(t, "servers:\n"+a.yaml(t, "a", "")+
		b.yaml(t, "b", "    prefix: false\n    policy:\n      tools:\n        note:\n          preview: 'Write a note'\n"))
	cs := connectGateway(t, g, &mcp.ClientOptions{ElicitationHandler: answer("accept", true)})
	for _, name := range []string{"a__note", "note"} {
		if res := call(t, cs, name, map[string]any{"n": 1}); res.IsError {
			t.Fatalf("%s: %s", name, text(res))
		}
	}
	var named []string
	for _, l := range lines(readFile(t, journalPath)) {
		var r journal.Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		switch {
		case r.Tool == "a__note":
			named = append(named, "a")
		case r.Tool == "note" && strings.Contains(r.Summary, `(gateway server "b")`):
			named = append(named, "b")
		default:
			t.Errorf("a record that does not name its server: %+v", r)
		}
	}
	if !slices.Contains(named, "a") || !slices.Contains(named, "b") {
		t.Fatalf("records: %v", named)
	}
}

// killPID kills a process hard: SIGKILL on Unix, TerminateProcess on
// Windows (so this file compiles for every platform).
func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
