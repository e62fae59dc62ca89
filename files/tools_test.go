package files_test

// In-process tests of the file tools over the SDK's in-memory transport,
// against real files in a temporary root (cmd/mcpsafe runs the same tools
// end to end over stdio and HTTP in a child process, which coverage does
// not see). Every refusal case checks the file system afterwards.

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type fixture struct {
	root, outside string
	srv           *files.Server
	cs            *mcp.ClientSession
	asked         atomic.Int32
	lastAsk       atomic.Value // the last elicitation's message
}

// newFixture starts a files server on a fresh root; answer is the human's
// reply to every elicitation.
func newFixture(t *testing.T, answer string) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), outside: t.TempDir()}
	write := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(f.root, "cache.txt", "cache")
	write(f.root, "thesis.txt", "thesis")
	write(f.outside, "secret.txt", "secret")
	if err := os.Mkdir(filepath.Join(f.root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	must(t, os.Symlink(filepath.Join(f.root, "thesis.txt"), filepath.Join(f.root, "link-in")))
	must(t, os.Symlink(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.root, "link-out")))
	must(t, os.Link(filepath.Join(f.root, "thesis.txt"), filepath.Join(f.root, "thesis-hardlink.txt")))

	var err error
	gate, path := journaled(t)
	f.srv, err = files.NewServer(context.Background(), files.Config{Roots: []string{f.root}, Gate: gate, JournalPath: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.srv.Close() })
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.srv.MCP.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cl := mcp.NewClient(&mcp.Implementation{Name: "files-test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			f.asked.Add(1)
			f.lastAsk.Store(r.Params.Message)
			return &mcp.ElicitResult{Action: answer, Content: map[string]any{"approve": answer == "accept"}}, nil
		},
	})
	f.cs, err = cl.Connect(ctx, ct, &mcp.ClientSessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cs.Close() })
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) call(t *testing.T, name string, args any) (*mcp.CallToolResult, map[string]any) {
	t.Helper()
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var m map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &m)
	}
	return res, m
}

func (f *fixture) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(f.root, name))
	return err == nil
}

func resultText(res *mcp.CallToolResult) string {
	var s []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s = append(s, tc.Text)
		}
	}
	return strings.Join(s, "\n")
}

func TestDeleteRefusals(t *testing.T) {
	f := newFixture(t, "accept")
	for _, tc := range []struct {
		path, reason string
	}{
		{"missing.txt", files.ReasonNotFound},
		{"dir", files.ReasonNotARegularFile},
		{"link-in", files.ReasonNotARegularFile},
		{"link-out", files.ReasonOutsideRoots},
		{"../outside.txt", files.ReasonOutsideRoots},
		{"/etc/passwd", files.ReasonOutsideRoots},
		{"a\x00b", files.ReasonInvalidPath},
	} {
		res, m := f.call(t, files.DeleteFile, map[string]any{"path": tc.path})
		if !res.IsError || m["reason"] != tc.reason {
			t.Errorf("delete %q: want %s, got %v %s", tc.path, tc.reason, m, resultText(res))
		}
	}
	if f.asked.Load() != 0 {
		t.Fatal("a refused call reached the human")
	}
	if !f.exists("link-in") || !f.exists("link-out") || !f.exists("thesis.txt") || !f.exists("dir") {
		t.Fatal("a refused delete removed something")
	}
	if _, err := os.Stat(filepath.Join(f.outside, "secret.txt")); err != nil {
		t.Fatal("the file outside the root is gone")
	}
}

// Arguments that do not fit the tool's types are refused before anything
// resolves them, rather than acted on as zero values (an empty path would
// name the root); the same calls spelt right run.
func TestUndecodableArgumentsRefused(t *testing.T) {
	f := newFixture(t, "accept")
	for _, tc := range []struct {
		tool    string
		bad, ok map[string]any
	}{
		{files.DeleteFile, map[string]any{"path": 5}, map[string]any{"path": "cache.txt"}},
		{files.MoveFile, map[string]any{"source": []string{"thesis.txt"}, "destination": "moved.txt"}, map[string]any{"source": "thesis.txt", "destination": "moved.txt"}},
	} {
		res, m := f.call(t, tc.tool, tc.bad)
		if !res.IsError || m["reason"] != mcpsafe.ReasonArgumentsInvalid {
			t.Errorf("%s %v: want %s, got %v %s", tc.tool, tc.bad, mcpsafe.ReasonArgumentsInvalid, m, resultText(res))
		}
		if f.asked.Load() != 0 {
			t.Fatalf("%s %v reached the human", tc.tool, tc.bad)
		}
		if res, _ := f.call(t, tc.tool, tc.ok); res.IsError {
			t.Errorf("control %s %v: %s", tc.tool, tc.ok, resultText(res))
		}
		f.asked.Store(0)
	}
	if f.exists("cache.txt") || f.exists("thesis.txt") || !f.exists("moved.txt") {
		t.Fatal("the controls did not run")
	}
}

func TestDeleteApprovedAndDeclined(t *testing.T) {
	f := newFixture(t, "decline")
	res, m := f.call(t, files.DeleteFile, map[string]any{"path": "cache.txt"})
	if !res.IsError || m["reason"] != mcpsafe.ReasonDeclined || !f.exists("cache.txt") {
		t.Fatalf("declined delete: %v %s", m, resultText(res))
	}
	f = newFixture(t, "accept")
	res, _ = f.call(t, files.DeleteFile, map[string]any{"path": "cache.txt"})
	if res.IsError || f.exists("cache.txt") || !strings.Contains(resultText(res), "Deleted") {
		t.Fatalf("approved delete: %s", resultText(res))
	}
	// A file with another hard link: the plan says so, and the delete runs.
	res, _ = f.call(t, files.DeleteFile, map[string]any{"path": "thesis-hardlink.txt"})
	if res.IsError || f.exists("thesis-hardlink.txt") || !f.exists("thesis.txt") {
		t.Fatalf("hard-linked delete: %s", resultText(res))
	}
}

// The file changes between the approval and the retry: nothing is deleted.
func TestDeleteTargetChanged(t *testing.T) {
	f := newFixture(t, "accept")
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.srv.MCP.Connect(ctx, st, nil)
	must(t, err)
	defer ss.Close()
	cl := mcp.NewClient(&mcp.Implementation{Name: "manual", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil },
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	})
	cs, err := cl.Connect(ctx, ct, &mcp.ClientSessionOptions{})
	must(t, err)
	defer cs.Close()
	for _, change := range []func(){
		func() { must(t, os.WriteFile(filepath.Join(f.root, "cache.txt"), []byte("other content"), 0o644)) },
		func() { must(t, os.Remove(filepath.Join(f.root, "cache.txt"))) },
	} {
		must(t, os.WriteFile(filepath.Join(f.root, "cache.txt"), []byte("cache"), 0o644))
		first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: files.DeleteFile, Arguments: map[string]any{"path": "cache.txt"}})
		must(t, err)
		if first.RequestState == "" {
			t.Fatalf("no approval request: %s", resultText(first))
		}
		change()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{
			Name: files.DeleteFile, Arguments: map[string]any{"path": "cache.txt"}, RequestState: first.RequestState,
			InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
		})
		must(t, err)
		b, _ := json.Marshal(res.StructuredContent)
		if !res.IsError || !strings.Contains(string(b), mcpsafe.ReasonTargetChanged) {
			t.Fatalf("changed target: %s", b)
		}
	}
}

func TestMove(t *testing.T) {
	f := newFixture(t, "accept")
	res, m := f.call(t, files.MoveFile, map[string]any{"source": "cache.txt", "destination": "thesis.txt"})
	if !res.IsError || m["reason"] != files.ReasonDestinationExists || !f.exists("cache.txt") {
		t.Fatalf("move onto an existing file: %v %s", m, resultText(res))
	}
	res, m = f.call(t, files.MoveFile, map[string]any{"source": "cache.txt", "destination": "../x.txt"})
	if !res.IsError || m["reason"] != files.ReasonOutsideRoots {
		t.Fatalf("move outside: %v", m)
	}
	res, m = f.call(t, files.MoveFile, map[string]any{"source": "missing.txt", "destination": "y.txt"})
	if !res.IsError || m["reason"] != files.ReasonNotFound {
		t.Fatalf("move a missing file: %v", m)
	}
	res, _ = f.call(t, files.MoveFile, map[string]any{"source": "cache.txt", "destination": "dir/cache.txt"})
	if res.IsError || f.exists("cache.txt") || !f.exists("dir/cache.txt") {
		t.Fatalf("approved move: %s", resultText(res))
	}
}

func TestReadOnlyTools(t *testing.T) {
	f := newFixture(t, "accept")
	res, m := f.call(t, files.ListDirectory, map[string]any{"path": "."})
	if res.IsError || len(m["entries"].([]any)) < 5 {
		t.Fatalf("list: %v %s", m, resultText(res))
	}
	res, m = f.call(t, files.FileInfo, map[string]any{"path": "thesis.txt"})
	if res.IsError || m["type"] != "file" || m["hard_links"].(float64) != 2 {
		t.Fatalf("info: %v %s", m, resultText(res))
	}
	for _, tc := range []struct {
		tool   string
		args   any
		reason string
	}{
		{files.ListDirectory, map[string]any{"path": "../"}, files.ReasonOutsideRoots},
		{files.ListDirectory, map[string]any{"path": "cache.txt"}, files.ReasonNotARegularFile},
		{files.FileInfo, map[string]any{"path": "missing"}, files.ReasonNotFound},
		{files.FileInfo, map[string]any{"path": "link-out/x"}, files.ReasonOutsideRoots},
		{files.FileInfo, json.RawMessage(`{"path":"a","extra":1}`), mcpsafe.ReasonArgumentsInvalid},
	} {
		res, m := f.call(t, tc.tool, tc.args)
		if !res.IsError || m["reason"] != tc.reason {
			t.Errorf("%s %v: want %s, got %v %s", tc.tool, tc.args, tc.reason, m, resultText(res))
		}
	}
}

func TestNewServerRefuses(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	for name, cfg := range map[string]files.Config{
		"no roots":             {Gate: mcpsafe.Options{Journal: journal.Discard}},
		"missing root":         {Roots: []string{filepath.Join(root, "nope")}, Gate: mcpsafe.Options{Journal: journal.Discard}},
		"journal inside root":  {Roots: []string{root}, Gate: mcpsafe.Options{Journal: journal.Discard}, JournalPath: filepath.Join(root, "j.jsonl")},
		"opt-in for no tool":   {Roots: []string{root}, Gate: mcpsafe.Options{Journal: journal.Discard, AllowTokenFor: []mcpsafe.OptIn{{Tool: "rm_rf"}}}},
		"opt-in is reversible": {Roots: []string{root}, Gate: mcpsafe.Options{Journal: journal.Discard, AllowTokenFor: []mcpsafe.OptIn{{Tool: files.MoveFile}}}},
	} {
		if s, err := files.NewServer(ctx, cfg); err == nil {
			s.Close()
			t.Errorf("%s: NewServer accepted %+v", name, cfg)
		}
	}
	// The same check before the journal is opened (the CLI's order): a
	// path inside a root is refused, one outside is not (control).
	check := files.JournalOutsideRoots([]string{root}, files.Grants{})
	if err := check(filepath.Join(root, "j.jsonl")); err == nil {
		t.Error("JournalOutsideRoots accepted a journal inside the root")
	}
	if err := check(filepath.Join(t.TempDir(), "j.jsonl")); err != nil {
		t.Errorf("JournalOutsideRoots refused a journal outside the roots: %v", err)
	}
	// Control, and the HTTP handler answers.
	s, err := files.NewServer(ctx, files.Config{Roots: []string{root}, Gate: mcpsafe.Options{Journal: journal.Discard, AllowTokenFor: []mcpsafe.OptIn{{Tool: files.DeleteFile}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(mcphttp.HTTP{}.MCPHandler(s.MCP))
	defer hs.Close()
}
