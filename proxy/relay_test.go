package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsafe/mcpsafe/proxy/policy"
)

// askingUpstream is a real SDK server (2026-07-28, in memory) whose tools
// ask the client for input through input_required results and record the
// request state every call brought.
type askingUpstream struct {
	mu     sync.Mutex
	states []string          // request state of every call, in order
	args   []json.RawMessage // arguments of every call, in order
	runs   int               // calls that completed
}

func (u *askingUpstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.states...)
}

const upstreamState = "upstream-own-state-v1"

func newAskingUpstream(t *testing.T) (*askingUpstream, mcp.Transport) {
	t.Helper()
	u := &askingUpstream{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "asking-upstream"}, nil)
	ask := func(kind string) mcp.ToolHandler {
		return func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.states = append(u.states, req.Params.RequestState)
			u.args = append(u.args, req.Params.Arguments)
			if len(req.Params.InputResponses) == 0 {
				var in mcp.InputRequest
				switch kind {
				case "roots":
					in = &mcp.ListRootsParams{}
				default:
					in = &mcp.ElicitParams{Message: "upstream asks: which colour?", RequestedSchema: map[string]any{
						"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string"}},
					}}
				}
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": in}, RequestState: upstreamState}, nil
			}
			if req.Params.RequestState != upstreamState {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "upstream: not my state"}
			}
			u.runs++
			b, _ := json.Marshal(req.Params.InputResponses["q"])
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done with " + string(b)}}}, nil
		}
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number"}}}
	srv.AddTool(&mcp.Tool{Name: "paint", InputSchema: schema}, ask("elicit"))
	srv.AddTool(&mcp.Tool{Name: "peek", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, ask("elicit"))
	srv.AddTool(&mcp.Tool{Name: "where", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, ask("roots"))
	// stamp takes its own approval_token, as a tool behind its own
	// mcpsafe gate does.
	srv.AddTool(&mcp.Tool{Name: "stamp", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"x": map[string]any{"type": "number"}, "approval_token": map[string]any{"type": "string"},
	}}}, ask("elicit"))
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return u, ct
}

// mrtrClient is a 2026-07-28 client that handles input_required results
// itself, so that the test sees and can tamper with every retry.
func mrtrClient(t *testing.T, s *Server) *mcp.ClientSession {
	t.Helper()
	return connect(t, s, &mcp.ClientOptions{
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: answer("accept", true),
		Capabilities:       &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
	})
}

func retry(cs *mcp.ClientSession, tool string, args any, state string) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: tool, Arguments: args, RequestState: state,
		InputResponses: mcp.InputResponseMap{"q": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "blue"}}},
	})
}

// An ungated tool's input requests and request state pass through as they
// are, both ways.
func TestUpstreamInputRequestsPassThrough(t *testing.T) {
	u, up := newAskingUpstream(t)
	cs := mrtrClient(t, newProxy(t, up, nil))
	first := call(t, cs, "peek", map[string]any{"x": 1})
	if !first.NeedsInput() || first.RequestState != upstreamState || first.InputRequests["q"] == nil {
		t.Fatalf("first call: %s", text(first))
	}
	res, err := retry(cs, "peek", map[string]any{"x": 1}, first.RequestState)
	if err != nil || res.NeedsInput() || !strings.Contains(text(res), "blue") {
		t.Fatalf("retry: %v %s", err, text(res))
	}
	if got := u.seen(); len(got) != 2 || got[1] != upstreamState {
		t.Fatalf("upstream saw states %q", got)
	}
}

// A gated, approved call whose upstream asks for input: the client gets a
// continuation, never the upstream's state; only the exact same call, once,
// reaches upstream with it.
func TestGatedContinuation(t *testing.T) {
	u, up := newAskingUpstream(t)
	s := newProxy(t, up, mustPolicy(t, "tools:\n  paint: {auto_approve: ['true']}\n"))
	cs := mrtrClient(t, s)
	args := map[string]any{"x": 1}
	first := call(t, cs, "paint", args)
	if !first.NeedsInput() || !isContinuation(first.RequestState) || strings.Contains(first.RequestState, upstreamState) {
		t.Fatalf("first call: %s", text(first))
	}
	cont := first.RequestState

	attacks := []struct {
		name  string
		tool  string
		args  any
		state string
		want  string
	}{
		{"other arguments", "paint", map[string]any{"x": 2}, cont, "arguments_changed"},
		{"tampered", "paint", args, cont[:len(cont)-4] + "AAAA", "token_invalid"},
		{"the upstream's raw state", "paint", args, contPrefix + upstreamState, "token_invalid"},
	}
	for _, a := range attacks {
		_, err := retry(cs, a.tool, a.args, a.state)
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || !strings.Contains(werr.Message, a.want) {
			t.Errorf("%s: got %v, want a protocol error %s", a.name, err, a.want)
		}
	}
	if got := u.seen(); len(got) != 1 {
		t.Fatalf("a refused retry reached upstream: states %q", got)
	}

	// Control: the same call with its continuation completes, and upstream
	// gets back its own state, untouched.
	res, err := retry(cs, "paint", args, cont)
	if err != nil || res.NeedsInput() || !strings.Contains(text(res), "blue") {
		t.Fatalf("genuine retry: %v %s", err, text(res))
	}
	if got := u.seen(); len(got) != 2 || got[1] != upstreamState {
		t.Fatalf("upstream saw states %q", got)
	}
	// Single use.
	if _, err := retry(cs, "paint", args, cont); err == nil || !strings.Contains(err.Error(), "token_spent") {
		t.Fatalf("replayed continuation: %v", err)
	}
	if u.runs != 1 {
		t.Fatalf("upstream completed %d runs, want 1", u.runs)
	}
}

// For a tool whose approval_token is its own argument, the continuation
// binds the arguments as the gate approved and ran them, token included:
// a retry with another token is refused, and the genuine retry sends
// upstream the same arguments as the first call.
func TestGatedContinuationKeepsOwnedToken(t *testing.T) {
	u, up := newAskingUpstream(t)
	s := newProxy(t, up, mustPolicy(t, "tools:\n  stamp: {auto_approve: ['true']}\n"))
	cs := mrtrClient(t, s)
	args := map[string]any{"x": 1, "approval_token": "upstream-token-1"}
	first := call(t, cs, "stamp", args)
	if !first.NeedsInput() || !isContinuation(first.RequestState) {
		t.Fatalf("first call: %s", text(first))
	}
	other := map[string]any{"x": 1, "approval_token": "upstream-token-2"}
	var werr *jsonrpc.Error
	if _, err := retry(cs, "stamp", other, first.RequestState); !errors.As(err, &werr) || !strings.Contains(werr.Message, "arguments_changed") {
		t.Fatalf("retry with another token: %v, want arguments_changed", err)
	}
	res, err := retry(cs, "stamp", args, first.RequestState)
	if err != nil || !strings.Contains(text(res), "blue") {
		t.Fatalf("genuine retry: %v %s", err, text(res))
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.args) != 2 || string(u.args[0]) != string(u.args[1]) || !strings.Contains(string(u.args[1]), "upstream-token-1") {
		t.Fatalf("upstream got arguments %s", u.args)
	}
}

// When the gate asks first, its sealed state stays between gate and client:
// upstream never sees it, and the gate never sees the upstream's.
func TestGateStateNeverReachesUpstream(t *testing.T) {
	u, up := newAskingUpstream(t)
	s := newProxy(t, up, mustPolicy(t, "mode: elicit\n"))
	cs := mrtrClient(t, s)
	args := map[string]any{"x": 1}
	gate := call(t, cs, "paint", args)
	if !gate.NeedsInput() || gate.InputRequests["mcpsafe_approval"] == nil {
		t.Fatalf("gate's ask: %s", text(gate))
	}
	approved, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "paint", Arguments: args, RequestState: gate.RequestState,
		InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
	})
	if err != nil || !approved.NeedsInput() || !isContinuation(approved.RequestState) || approved.InputRequests["q"] == nil {
		t.Fatalf("after approval, the upstream's ask: %v %s", err, text(approved))
	}
	res, err := retry(cs, "paint", args, approved.RequestState)
	if err != nil || !strings.Contains(text(res), "blue") {
		t.Fatalf("upstream's answer: %v %s", err, text(res))
	}
	for _, st := range u.seen() {
		if st != "" && st != upstreamState {
			t.Fatalf("upstream received a state it did not issue: %q", st)
		}
	}
	// The gate's own state is spent: presenting it again does not run anything.
	again, err := cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: "paint", Arguments: args, RequestState: gate.RequestState,
		InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
	})
	if err != nil || reasonOf(t, again) != "token_spent" || u.runs != 1 {
		t.Fatalf("replayed gate state: %v %s (runs %d)", err, text(again), u.runs)
	}
}

// upstream_requests: roots are refused by default, relayed when the policy
// says so.
func TestUpstreamRequestsPolicy(t *testing.T) {
	for _, c := range []struct {
		policy string
		relay  bool
	}{
		{"", false},
		{"upstream_requests: {roots: refuse}\n", false},
		{"upstream_requests: {roots: relay}\n", true},
	} {
		_, up := newAskingUpstream(t)
		cs := mrtrClient(t, newProxy(t, up, mustPolicy(t, c.policy)))
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "where", Arguments: map[string]any{"x": 1}})
		if c.relay {
			if err != nil || !res.NeedsInput() {
				t.Errorf("%q: roots request not relayed: %v", c.policy, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "roots") {
			t.Errorf("%q: roots request reached the client: %v %v", c.policy, err, res)
		}
	}
	for _, bad := range []string{"upstream_requests: {roots: yes}\n", "upstream_requests: {telepathy: relay}\n"} {
		if _, err := policy.Parse("p.yaml", []byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// legacyUpstream is a real SDK server whose tool asks the client in-call,
// as servers of the 2025-11-25 generation do, and whose slow tool waits
// for release.
func legacyUpstream(t *testing.T, release chan struct{}) (up, legacy mcp.Transport) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "legacy-upstream"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	schema := map[string]any{"type": "object"}
	askInline := func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "upstream asks", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string"}},
		}})
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("answer %v", res.Content["colour"])}}}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "ask_inline", InputSchema: schema, Annotations: ro}, askInline)
	srv.AddTool(&mcp.Tool{Name: "ask_gated", InputSchema: schema}, askInline)
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: schema, Annotations: ro}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil
	})
	pair := func() mcp.Transport {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		return ct
	}
	return pair(), pair()
}

func legacyClient(t *testing.T, s *Server, name string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.MCP.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name}, opts).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// An upstream's in-call elicitation reaches the one client whose call is in
// flight; with calls of two clients in flight it reaches neither, and a
// client that did not declare elicitation is never asked.
func TestInCallRequestsRouting(t *testing.T) {
	release := make(chan struct{})
	up, legacy := legacyUpstream(t, release)
	s, err := NewServer(context.Background(), Config{Upstream: up, LegacyUpstream: legacy,
		Gate: stores(t, serverconfFor(filepath.Join(t.TempDir(), "j.jsonl")))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var asked sync.Map
	asking := func(name string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Store(name, true)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": name}}, nil
		}}
	}
	alice := legacyClient(t, s, "alice", asking("alice"))
	bob := legacyClient(t, s, "bob", asking("bob"))
	mute := legacyClient(t, s, "mute", nil)

	// Control: alice alone gets the upstream's question and her answer goes back.
	if got := text(call(t, alice, "ask_inline", map[string]any{})); !strings.Contains(got, "answer alice") {
		t.Fatalf("alice alone: %s", got)
	}
	asked.Delete("alice")

	// Attack: bob's call is in flight when alice's call asks; the proxy
	// cannot tell whose question it is and asks no one.
	done := make(chan error, 1)
	go func() {
		_, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
		done <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.relay.callsMu.Lock()
		n := len(s.relay.calls)
		s.relay.callsMu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("bob's call never got in flight")
		}
		time.Sleep(5 * time.Millisecond)
	}
	res, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_inline", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "cannot be matched to one downstream client") {
		t.Fatalf("an ambiguous upstream request: %v %v", err, res)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"alice", "bob"} {
		if _, ok := asked.Load(who); ok {
			t.Errorf("%s was asked an ambiguous upstream question", who)
		}
	}

	// A client without the elicitation capability is never asked.
	res, err = mute.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask_inline", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "did not declare the elicitation capability") {
		t.Fatalf("a client without elicitation: %v %v", err, res)
	}
}

// A gated call of a 2025-11-25 client whose upstream asks in-call: the
// gate's approval comes first, then the upstream's own question, each
// answered by the client; a declined approval asks the upstream nothing.
func TestGatedInCallComposition(t *testing.T) {
	up, legacy := legacyUpstream(t, make(chan struct{}))
	s, err := NewServer(context.Background(), Config{Upstream: up, LegacyUpstream: legacy,
		Policy: mustPolicy(t, "mode: elicit\n"), Gate: stores(t, serverconfFor(filepath.Join(t.TempDir(), "j.jsonl")))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var mu sync.Mutex
	var asked []string
	approve := true
	cs := legacyClient(t, s, "client", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(req.Params.Message, "upstream asks") {
			asked = append(asked, "upstream")
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"colour": "green"}}, nil
		}
		asked = append(asked, "gate")
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": approve}}, nil
	}})
	res := call(t, cs, "ask_gated", map[string]any{})
	if res.IsError || !strings.Contains(text(res), "answer green") || strings.Join(asked, ",") != "gate,upstream" {
		t.Fatalf("approved: %s, asked %v", text(res), asked)
	}
	mu.Lock()
	asked, approve = nil, false
	mu.Unlock()
	res = call(t, cs, "ask_gated", map[string]any{})
	if reasonOf(t, res) != "declined" || strings.Join(asked, ",") != "gate" {
		t.Fatalf("declined: %s, asked %v", text(res), asked)
	}
}
