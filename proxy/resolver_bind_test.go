package proxy

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A resolver's bind: is checked when the policy loads; a malformed one is
// a startup error that names its line. Control: a well-formed list loads.
func TestResolverBindChecked(t *testing.T) {
	head := "tools:\n  edit_file:\n    resolver:\n      tool: get_file_info\n      args: {path: args.path}\n"
	for _, tc := range []struct{ bind, want string }{
		{"      bind: size\n", "test.yaml:6: tools.edit_file: resolver.bind: want a list"},
		{"      bind: []\n", "resolver.bind: want a list"},
		{"      bind: {size: true}\n", "resolver.bind: want a list"},
		{"      bind: [size, size]\n", `"size" is named twice`},
		{"      bind: [size, '']\n", `"" is not a field name`},
		{"      bind: [size, [modified]]\n", "is not a field name"},
		{"      bind: ['last modified']\n", `"last modified" is not a field name`},
		{"      bind: [size, ~]\n", "is not a field name"},
		{"      bnid: [size]\n", `did you mean "bind"`},
	} {
		_, err := policy.Parse("test.yaml", []byte(head+tc.bind))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.bind, err, tc.want)
		}
	}
	p, err := policy.Parse("test.yaml", []byte(head+"      bind: [size, modified]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Tools["edit_file"].Resolver.Bind; strings.Join(got, ",") != "size,modified" {
		t.Fatalf("bind %v", got)
	}
}

// A bound field the resolver does not report refuses the call before
// anyone is asked (binding nothing would approve any state). Control: the
// fields it reports bind, and the edit runs.
func TestFSResolverBindsReportedFieldsOnly(t *testing.T) {
	dir, up := fsUpstream(t)
	target := filepath.Join(dir, "b.txt")
	writeFile(t, target, "hello\n")
	pol := func(bind string) *policy.Policy {
		return mustPolicy(t, "tools:\n  edit_file:\n    resolver:\n      tool: get_file_info\n      args: {path: args.path}\n      bind: "+bind+"\n")
	}
	var asked atomic.Int32
	var prompt atomic.Value
	copts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		prompt.Store(r.Params.Message)
		return answer("accept", true)(ctx, r)
	}}
	edit := map[string]any{"path": target, "edits": []any{map[string]any{"oldText": "hello", "newText": "bye"}}}

	cs := connect(t, newProxy(t, up, pol("[size, sizee]")), copts)
	if res := call(t, cs, "edit_file", edit); reasonOf(t, res) != mcpsafe.ReasonResolverFailed || asked.Load() != 0 {
		t.Fatalf("a bound field the report lacks: %s (asked %d)", text(res), asked.Load())
	}
	if readFile(t, target) != "hello\n" {
		t.Fatal("edited")
	}

	up2 := fsUpstreamIn(t, dir)
	cs = connect(t, newProxy(t, up2, pol("[size, modified]")), copts)
	if res := call(t, cs, "edit_file", edit); res.IsError || readFile(t, target) != "bye\n" {
		t.Fatalf("bound fields the report has: %s", text(res))
	}
	// The prompt shows what is bound, and only that.
	msg := prompt.Load().(string)
	if !strings.Contains(msg, `state "size" = "6"`) || !strings.Contains(msg, `state "modified" = "`) || strings.Contains(msg, `"accessed"`) {
		t.Fatalf("the prompt does not show exactly the bound state: %q", msg)
	}
}

// statUpstream serves a read-only stat tool whose report, like
// get_file_info's, carries an access time that every lookup moves, and an
// edit tool; write changes the size and modification time the next stat
// reports. It needs no npm server.
func statUpstream(t *testing.T) (mcp.Transport, *atomic.Int32, func()) {
	t.Helper()
	up := mcp.NewServer(&mcp.Implementation{Name: "stat-upstream"}, nil)
	var lookups, size, modified, edits atomic.Int32
	size.Store(6)
	modified.Store(1)
	obj := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
	up.AddTool(&mcp.Tool{Name: "stat", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n := lookups.Add(1)
			report := "size: " + itoa(size.Load()) + "\nmodified: t" + itoa(modified.Load()) + "\naccessed: t" + itoa(n)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: report}}, StructuredContent: map[string]any{"content": report}}, nil
		})
	up.AddTool(&mcp.Tool{Name: "edit", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			edits.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "edited"}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := up.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	write := func() { size.Add(10); modified.Add(1) }
	return ct, &edits, write
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// What bind: binds, with a resolver whose report moves on every lookup (an
// access time): with bind: [size, modified] the approval survives the
// lookup before execute and the edit runs; a write between approval and
// execute voids it (target_changed). Without bind the whole report binds,
// and the moved access time alone voids it: the control that shows the
// report really moved.
func TestResolverBindSurvivesAccessTime(t *testing.T) {
	for _, c := range []struct {
		name, bind string
		write      bool
		want       string // "" means it runs
	}{
		{"bound fields, nothing written", "\n      bind: [size, modified]", false, ""},
		{"bound fields, written in between", "\n      bind: [size, modified]", true, mcpsafe.ReasonTargetChanged},
		{"whole report bound", "", false, mcpsafe.ReasonTargetChanged},
		{"a bound field the report lacks", "\n      bind: [size, sizee]", false, mcpsafe.ReasonResolverFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			up, edits, write := statUpstream(t)
			pol := mustPolicy(t, "tools:\n  edit:\n    resolver:\n      tool: stat\n      args: {path: args.path}"+c.bind+"\n")
			cs := connect(t, newProxy(t, up, pol), &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if c.write {
					write()
				}
				return answer("accept", true)(ctx, r)
			}})
			res := call(t, cs, "edit", map[string]any{"path": "/a"})
			switch {
			case c.want == "" && (res.IsError || edits.Load() != 1):
				t.Fatalf("want the edit to run: %s (edits %d)", text(res), edits.Load())
			case c.want != "" && (reasonOf(t, res) != c.want || edits.Load() != 0):
				t.Fatalf("want %s: %s (edits %d)", c.want, text(res), edits.Load())
			}
		})
	}
}
