package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
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
		_, err := ParsePolicy("test.yaml", []byte(head+tc.bind))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.bind, err, tc.want)
		}
	}
	p, err := ParsePolicy("test.yaml", []byte(head+"      bind: [size, modified]\n"))
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
	pol := func(bind string) *Policy {
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
