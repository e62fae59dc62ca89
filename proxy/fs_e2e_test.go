package proxy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end against the real @modelcontextprotocol/server-filesystem from
// npm (scripts/npm-deps), with a real SDK client downstream.

var fsGated = []string{"write_file", "edit_file", "move_file", "create_directory"}

func TestFSToolsMirrored(t *testing.T) {
	dir, up := fsUpstream(t)
	_ = dir
	s := newProxy(t, up, nil)
	cs := connect(t, s, nil)
	upstream := map[string]*mcp.Tool{}
	for tl, err := range s.Upstream.Tools(testCtx(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		upstream[tl.Name] = tl
	}
	if len(upstream) != 14 {
		t.Fatalf("the pinned server has 14 tools, got %d", len(upstream))
	}
	seen := 0
	for tl, err := range cs.Tools(testCtx(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		seen++
		u := upstream[tl.Name]
		if u == nil {
			t.Fatalf("downstream has %q, upstream does not", tl.Name)
		}
		props := tl.InputSchema.(map[string]any)["properties"].(map[string]any)
		_, hasToken := props[mcpsafe.TokenField]
		isGated := strings.Contains(strings.Join(fsGated, ","), tl.Name)
		if hasToken != isGated {
			t.Errorf("%s: approval_token present=%v, want gated=%v", tl.Name, hasToken, isGated)
		}
		if !isGated {
			a, _ := json.Marshal(tl)
			b, _ := json.Marshal(u)
			if string(a) != string(b) {
				t.Errorf("%s: read-only tool changed on the way through:\n got %s\nwant %s", tl.Name, a, b)
			}
			continue
		}
		// Same schema apart from approval_token, same annotations (the
		// upstream already says readOnly false).
		delete(props, mcpsafe.TokenField)
		a, _ := json.Marshal(tl.InputSchema)
		b, _ := json.Marshal(u.InputSchema)
		if string(a) != string(b) {
			t.Errorf("%s: schema changed:\n got %s\nwant %s", tl.Name, a, b)
		}
		a, _ = json.Marshal(tl.Annotations)
		b, _ = json.Marshal(u.Annotations)
		if string(a) != string(b) {
			t.Errorf("%s: annotations changed:\n got %s\nwant %s", tl.Name, a, b)
		}
		// In auto mode a token result is possible, and it cannot match
		// the upstream's output schema: the schema is not advertised.
		if u.OutputSchema == nil || tl.OutputSchema != nil {
			t.Errorf("%s: output schema upstream %v, downstream %v; want it withheld", tl.Name, u.OutputSchema != nil, tl.OutputSchema != nil)
		}
	}
	if seen != 14 {
		t.Fatalf("downstream lists %d tools, want 14", seen)
	}
	// In elicit mode no approval_required result exists: the schema stays.
	_, up2 := fsUpstream(t)
	cs2 := connect(t, newProxy(t, up2, mustPolicy(t, "mode: elicit\n")), nil)
	tl := listTools(t, cs2)["write_file"]
	a, _ := json.Marshal(tl.OutputSchema)
	b, _ := json.Marshal(upstream["write_file"].OutputSchema)
	if string(a) != string(b) {
		t.Errorf("elicit mode: output schema %s, want upstream's %s", a, b)
	}
}

func TestFSReadOnlyPassThrough(t *testing.T) {
	dir, up := fsUpstream(t)
	writeFile(t, filepath.Join(dir, "a.txt"), "line one\nline two\n")
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	s := newProxy(t, up, nil)
	// No elicitation: a read-only call must not need any.
	cs := connect(t, s, nil)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": filepath.Join(dir, "a.txt")}},
		{"read_text_file", map[string]any{"path": filepath.Join(dir, "a.txt"), "head": 1}},
		{"list_directory", map[string]any{"path": dir}},
		{"read_file", map[string]any{"path": "/etc/passwd"}}, // upstream's own refusal, passed back
	} {
		got := call(t, cs, c.tool, c.args)
		want, err := s.Upstream.CallTool(testCtx(t), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatal(err)
		}
		// The downstream session adds its own _meta and resultType; the
		// tool's answer itself must be byte-for-byte upstream's.
		if payload(got) != payload(want) {
			t.Errorf("%s %v through the proxy:\n got %s\nwant %s", c.tool, c.args, payload(got), payload(want))
		}
	}
}

// Elicitation: accept runs exactly the approved call; decline changes nothing.
func TestFSElicitation(t *testing.T) {
	dir, up := fsUpstream(t)
	s := newProxy(t, up, nil)
	var action atomic.Value
	var asked atomic.Int32
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return answer(action.Load().(string), true)(ctx, r)
	}})
	p := func(n string) string { return filepath.Join(dir, n) }
	writeFile(t, p("edit.txt"), "hello world\n")
	writeFile(t, p("move.txt"), "moving\n")
	cases := []struct {
		tool  string
		args  map[string]any
		check func(accepted bool)
	}{
		{"write_file", map[string]any{"path": p("new.txt"), "content": "written"}, func(acc bool) {
			_, err := os.Stat(p("new.txt"))
			if acc && readFile(t, p("new.txt")) != "written" || !acc && !os.IsNotExist(err) {
				t.Errorf("write_file accepted=%v: stat err %v", acc, err)
			}
		}},
		{"edit_file", map[string]any{"path": p("edit.txt"), "edits": []any{map[string]any{"oldText": "world", "newText": "there"}}}, func(acc bool) {
			want := map[bool]string{true: "hello there\n", false: "hello world\n"}[acc]
			if got := readFile(t, p("edit.txt")); got != want {
				t.Errorf("edit_file accepted=%v: file holds %q, want %q", acc, got, want)
			}
		}},
		{"move_file", map[string]any{"source": p("move.txt"), "destination": p("moved.txt")}, func(acc bool) {
			_, err := os.Stat(p("moved.txt"))
			if acc != (err == nil) {
				t.Errorf("move_file accepted=%v: destination stat err %v", acc, err)
			}
		}},
		{"create_directory", map[string]any{"path": p("newdir")}, func(acc bool) {
			_, err := os.Stat(p("newdir"))
			if acc != (err == nil) {
				t.Errorf("create_directory accepted=%v: stat err %v", acc, err)
			}
		}},
	}
	for _, c := range cases {
		action.Store("decline")
		before := asked.Load()
		res := call(t, cs, c.tool, c.args)
		if reasonOf(t, res) != mcpsafe.ReasonDeclined || asked.Load() != before+1 {
			t.Fatalf("%s declined: want a prompt and reason declined, got %s", c.tool, text(res))
		}
		c.check(false)
	}
	for _, c := range cases {
		action.Store("accept")
		res := call(t, cs, c.tool, c.args)
		if res.IsError {
			t.Fatalf("%s accepted: %s", c.tool, text(res))
		}
		c.check(true)
	}
}

// A client that cannot elicit gets a token for a tool the policy marks
// reversible, and a refusal for an irreversible one.
func TestFSTokenFlow(t *testing.T) {
	dir, up := fsUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `
tools:
  write_file:
    irreversible: false
    preview: "Write {{.content}} to {{.path}}"
`))
	cs := connect(t, s, nil)
	target := filepath.Join(dir, "tok.txt")
	args := map[string]any{"path": target, "content": "via token"}
	first := call(t, cs, "write_file", args)
	tok := tokenOf(t, first)
	plan := structured(t, first)["plan"].(map[string]any)
	if want := `Write "via token" to "` + target + `"`; plan["summary"] != want {
		t.Errorf("plan summary %q, want %q", plan["summary"], want)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatal("the first call wrote before approval")
	}
	// Other arguments with this token: refused, nothing written.
	other := map[string]any{"path": target, "content": "something else", mcpsafe.TokenField: tok}
	if r := reasonOf(t, call(t, cs, "write_file", other)); r != mcpsafe.ReasonArgumentsChanged {
		t.Fatalf("token with other arguments: reason %q", r)
	}
	args[mcpsafe.TokenField] = tok
	if res := call(t, cs, "write_file", args); res.IsError {
		t.Fatalf("token redeem: %s", text(res))
	}
	if got := readFile(t, target); got != "via token" {
		t.Fatalf("file holds %q", got)
	}
	if r := reasonOf(t, call(t, cs, "write_file", args)); r != mcpsafe.ReasonTokenSpent {
		t.Fatalf("second use of the token: reason %q", r)
	}
	// move_file stays irreversible (upstream says destructive): no token.
	res := call(t, cs, "move_file", map[string]any{"source": target, "destination": target + ".2"})
	if reasonOf(t, res) != mcpsafe.ReasonElicitationUnsupported {
		t.Fatalf("irreversible move_file without elicitation: %s", text(res))
	}
	if readFile(t, target) != "via token" {
		t.Fatal("move_file ran")
	}
}

// The resolver binds get_file_info's answer into the approval; a file
// changed while the human looked at the prompt is not edited.
func TestFSResolverTargetChanged(t *testing.T) {
	dir, up := fsUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `
tools:
  edit_file:
    preview: "Edit {{.path}}"
    resolver:
      tool: get_file_info
      args:
        path: args.path
`))
	target := filepath.Join(dir, "r.txt")
	var tamper atomic.Bool
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		// The state as fields, one a line, none cut.
		for _, want := range []string{`current state, as "get_file_info" reports it:`, `state "size" = "`, `state "modified" = "`, `state "permissions" = "`} {
			if !strings.Contains(r.Params.Message, want) {
				t.Errorf("the prompt does not show %s of the resolved state: %q", want, r.Params.Message)
			}
		}
		if tamper.Load() {
			writeFile(t, target, "hello world, and someone else's change\n")
		}
		return answer("accept", true)(ctx, r)
	}})
	edit := map[string]any{"path": target, "edits": []any{map[string]any{"oldText": "hello", "newText": "bye"}}}

	writeFile(t, target, "hello world\n")
	tamper.Store(true)
	res := call(t, cs, "edit_file", edit)
	if reasonOf(t, res) != mcpsafe.ReasonTargetChanged {
		t.Fatalf("changed file: want target_changed, got %s", text(res))
	}
	if got := readFile(t, target); got != "hello world, and someone else's change\n" {
		t.Fatalf("the changed file was edited: %q", got)
	}

	// Control: unchanged file, same policy: edited.
	writeFile(t, target, "hello world\n")
	tamper.Store(false)
	if res := call(t, cs, "edit_file", edit); res.IsError {
		t.Fatalf("unchanged file: %s", text(res))
	}
	if got := readFile(t, target); got != "bye world\n" {
		t.Fatalf("file holds %q", got)
	}

	// A target the resolver cannot find is refused before anyone is asked.
	res = call(t, cs, "edit_file", map[string]any{"path": filepath.Join(dir, "missing.txt"), "edits": []any{}})
	if reasonOf(t, res) != mcpsafe.ReasonResolverFailed {
		t.Fatalf("missing file: want resolver_failed, got %s", text(res))
	}
}

// The shipped example policy starts against the real server and opts no
// irreversible tool into tokens.
func TestFSExamplePolicy(t *testing.T) {
	pol, err := policy.Load("testdata/example-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.AllowTokenFor) != 0 {
		t.Fatalf("the example policy opts %v into tokens; it must ship the list empty", pol.AllowTokenFor)
	}
	_, up := fsUpstream(t)
	newProxy(t, up, pol)
}

func payload(r *mcp.CallToolResult) string {
	b, _ := json.Marshal(struct {
		Content           []mcp.Content `json:"content"`
		StructuredContent any           `json:"structuredContent"`
		IsError           bool          `json:"isError"`
	}{r.Content, r.StructuredContent, r.IsError})
	return string(b)
}
