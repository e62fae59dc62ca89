package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The built proxy in front of the real npm filesystem server: a deny rule
// that reads args.pth (write_file has path) is refused at startup with
// the line and the nearest name; it used to load and then deny every
// write. Control: the same rule on args.path starts, denies what it names
// and lets the rest be approved.
func TestProxyRuleNamingAMissingArgument(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	data, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	dir := t.TempDir()
	policy := func(arg string) string {
		p := filepath.Join(dir, arg+".yaml")
		must(t, os.WriteFile(p, []byte("tools:\n  write_file:\n    deny:\n      - name: no-dotfiles\n        expr: 'args."+arg+".matches(\"(^|/)[.]\")'\n"), 0o644))
		return p
	}
	_, env := freshState(t)
	code, stderr := runExit(t, env, "proxy", "--journal", filepath.Join(dir, "j.jsonl"), "--policy", policy("pth"), "--", fsBin, data)
	if code != 1 || !strings.Contains(stderr, "pth.yaml:5: tools.write_file.deny[0]: args.pth is not an argument of the upstream tool (did you mean args.path?") {
		t.Fatalf("a rule on args.pth: exit %d, %q", code, stderr)
	}

	cs := startProxy(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return acceptAll(ctx, r)
	}}, "--journal", filepath.Join(dir, "j2.jsonl"), "--policy", policy("path"), "--", fsBin, data)
	if res := call(t, cs, "write_file", map[string]any{"path": filepath.Join(data, ".env"), "content": "x"}); reasonOf(t, res) != "policy_denied" {
		t.Fatalf("the rule did not deny a dotfile: %v", res.Content)
	}
	if res := call(t, cs, "write_file", map[string]any{"path": filepath.Join(data, "a.txt"), "content": "x"}); res.IsError || content(t, filepath.Join(data, "a.txt")) != "x" {
		t.Fatalf("an ordinary write: %v", res.Content)
	}
}
