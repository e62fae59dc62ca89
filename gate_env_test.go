package mcpsafe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// waitFor polls cond until it holds and fails with what when it has not
// after 30 seconds: for what a ledger server or a gate's background sweep
// does on the real clock, which the test cannot wait on as an event.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("never happened: " + what)
		}
	}
}

// notes is a tiny real store the test tools act on: the assertions look at
// what is actually left in it, not only at results.
type notes struct {
	mu    sync.Mutex
	m     map[string]string
	execs int
}

func newNotes(names ...string) *notes {
	n := &notes{m: map[string]string{}}
	for _, name := range names {
		n.m[name] = "contents of " + name
	}
	return n
}

func (n *notes) has(name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.m[name]
	return ok
}

func (n *notes) set(name, v string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.m[name] = v
}

func (n *notes) executions() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.execs
}

type pathArgs struct {
	Path string `json:"path"`
}

var pathSchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"path": map[string]any{"type": "string"}},
	"required":             []string{"path"},
	"additionalProperties": false,
}

// deleteTool deletes a note: irreversible, with a resolver that binds the
// note's current contents.
func (n *notes) deleteTool() mcpsafe.Tool {
	return mcpsafe.Tool{
		Name:         "delete_note",
		Description:  "Delete a note.",
		InputSchema:  pathSchema,
		Irreversible: true,
		Resolve: func(ctx context.Context, c mcpsafe.Call) (mcpsafe.Resolved, error) {
			var a pathArgs
			if err := c.Decode(&a); err != nil {
				return nil, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			v, ok := n.m[a.Path]
			if !ok {
				return nil, mcpsafe.Refuse("not_found", "no note %q", a.Path)
			}
			return mcpsafe.Resolved{"path": a.Path, "contents": v}, nil
		},
		Preview: func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{
				Summary: fmt.Sprintf("Delete note %q", r["path"]),
				Details: []string{fmt.Sprintf("%d bytes", len(r["contents"].(string)))},
				Targets: []mcpsafe.Target{{Name: r["path"].(string)}},
			}, nil
		},
		Execute: func(ctx context.Context, c mcpsafe.Call, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			var args pathArgs
			if err := c.Decode(&args); err != nil {
				return nil, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			n.execs++
			delete(n.m, args.Path)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + args.Path + " (" + a.Decision + ")"}}}, nil
		},
	}
}

// renameTool is reversible.
func (n *notes) renameTool() mcpsafe.Tool {
	return mcpsafe.Tool{
		Name: "rename_note",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"from": map[string]any{"type": "string"},
				"to":   map[string]any{"type": "string"},
			},
			"required": []string{"from", "to"},
		},
		Preview: func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
			var a struct{ From, To string }
			if err := c.Decode(&a); err != nil {
				return mcpsafe.Plan{}, err
			}
			return mcpsafe.Plan{Summary: fmt.Sprintf("Rename %q to %q", a.From, a.To)}, nil
		},
		Execute: func(ctx context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			var a struct{ From, To string }
			if err := c.Decode(&a); err != nil {
				return nil, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			n.execs++
			n.m[a.To] = n.m[a.From]
			delete(n.m, a.From)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "renamed"}}}, nil
		},
	}
}

// recorder is a Journal that keeps records in memory so tests can read the
// decisions back; journal_test.go covers the real file journal.
type recorder struct {
	mu   sync.Mutex
	recs []journal.Record
	fail error
	// spare names decisions still written while fail is set.
	spare map[string]bool
}

func (r *recorder) Append(_ context.Context, rec journal.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil && !r.spare[rec.Decision] {
		return r.fail
	}
	r.recs = append(r.recs, rec)
	return nil
}

func (r *recorder) decisions() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.recs {
		d := rec.Decision
		if rec.Reason != "" {
			d += ":" + rec.Reason
		}
		out = append(out, d)
	}
	return out
}

// clock is an injectable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

type env struct {
	t       *testing.T
	gate    *mcpsafe.Gate
	server  *mcp.Server
	notes   *notes
	journal *recorder
	clock   *clock
	touched *notes // cardEnv's touch_note
}

// newEnv builds a real SDK server with the gate and the two note tools.
// adjust may change the options and the tools before registration.
func newEnv(t *testing.T, adjust func(*mcpsafe.Options, *[]mcpsafe.Tool)) *env {
	t.Helper()
	e := &env{t: t, notes: newNotes("cache.txt", "thesis.txt", "todo.txt"), journal: &recorder{}}
	e.clock = &clock{now: time.Now()}
	opts := mcpsafe.Options{Audience: "test-server", Journal: e.journal, Clock: e.clock.Now}
	tools := []mcpsafe.Tool{e.notes.deleteTool(), e.notes.renameTool()}
	if adjust != nil {
		adjust(&opts, &tools)
	}
	g, err := mcpsafe.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.gate = g
	e.server = mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1"}, nil)
	for _, tool := range tools {
		if err := g.Register(e.server, tool); err != nil {
			t.Fatalf("Register %s: %v", tool.Name, err)
		}
	}
	return e
}

// client describes the MCP client a test connects with.
type client struct {
	name     string // client name; the principal in tests that bind it
	protocol string // "" for the latest (MRTR); "2025-11-25" for a legacy client
	elicit   func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
	manual   bool // disable the SDK's automatic MRTR retry
}

func (e *env) connect(c client) *mcp.ClientSession {
	e.t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := e.server.Connect(ctx, st, nil)
	if err != nil {
		e.t.Fatalf("server connect: %v", err)
	}
	e.t.Cleanup(func() { ss.Close() })
	name := c.name
	if name == "" {
		name = "test-client"
	}
	opts := &mcp.ClientOptions{ElicitationHandler: c.elicit}
	if c.manual {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, opts)
	cs, err := cl.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: c.protocol})
	if err != nil {
		e.t.Fatalf("client connect: %v", err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

// structured decodes a result's structured content into a map.
func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return m
}

// wantRefused asserts that res is a refusal with the given reason.
func wantRefused(t *testing.T, res *mcp.CallToolResult, reason string) {
	t.Helper()
	m := structured(t, res)
	if !res.IsError || m["status"] != "refused" || m["reason"] != reason {
		t.Fatalf("want refused/%s, got isError=%v %v (content %v)", reason, res.IsError, m, text(res))
	}
}

// token asserts an approval_required result and returns its token.
func token(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	m := structured(t, res)
	if res.IsError || m["status"] != "approval_required" {
		t.Fatalf("want approval_required, got %v %v", m, text(res))
	}
	tok, _ := m["approval_token"].(string)
	if tok == "" {
		t.Fatalf("no token in %v", m)
	}
	return tok
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func wantExecuted(t *testing.T, res *mcp.CallToolResult) {
	t.Helper()
	if res.IsError || res.StructuredContent != nil && structured(t, res)["status"] != nil {
		t.Fatalf("want the tool's own result, got isError=%v %v", res.IsError, text(res))
	}
}

// accept answers every elicitation with an exact approval.
func accept(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
}

func answer(action string, content map[string]any) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: action, Content: content}, nil
	}
}

var errClientBroke = errors.New("client handler broke")

func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
