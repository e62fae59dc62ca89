package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// marked lists tools/list as the SDK client sees it: tool name to whether
// it carries Claude Code's always-ask key, and the exact value when it does.
func marked(t *testing.T, cs *mcp.ClientSession) map[string]any {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	must(t, err)
	m := map[string]any{}
	for _, tl := range res.Tools {
		v, has := tl.Meta[mcpsafe.RequiresUserInteractionMeta]
		if !has {
			v = nil
		}
		m[tl.Name] = v
	}
	return m
}

// `mcpsafe files --require-user-interaction` marks its gated tools, and
// only those, for Claude Code's own prompt; without the flag none is.
func TestFilesRequireUserInteractionFlag(t *testing.T) {
	gated := map[string]bool{"delete_file": true, "move_file": true}
	for _, on := range []bool{true, false} {
		w := newWorkspace(t)
		var extra []string
		if on {
			extra = []string{"--require-user-interaction"}
		}
		got := marked(t, w.serve(nil, extra...))
		for _, name := range []string{"delete_file", "move_file", "list_directory", "file_info"} {
			v, listed := got[name]
			if !listed {
				t.Fatalf("tools/list has no %s: %v", name, got)
			}
			want := any(nil)
			if on && gated[name] {
				want = true
			}
			if v != want {
				t.Errorf("flag %v: %s carries %v, want %v", on, name, v, want)
			}
		}
	}
}

// The proxy takes it from its policy (require_user_interaction: true) or
// from the same flag, and marks the tools it gates, never the upstream's
// read-only ones; with neither, no tool is marked.
func TestProxyRequireUserInteractionPolicyKey(t *testing.T) {
	url, _ := goHTTPUpstream(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	must(t, os.WriteFile(policy, []byte("require_user_interaction: true\n"), 0o644))
	plain := filepath.Join(dir, "plain.yaml")
	must(t, os.WriteFile(plain, []byte("mode: auto\n"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want any
	}{
		{"policy key", []string{"--policy", policy}, true},
		{"flag", []string{"--policy", plain, "--require-user-interaction"}, true},
		{"neither", []string{"--policy", plain}, nil},
	} {
		args := append([]string{"--journal", filepath.Join(t.TempDir(), "j.jsonl"), "--upstream-url", url}, tc.args...)
		got := marked(t, startProxy(t, nil, args...))
		if v, ok := got["touch"]; !ok || v != tc.want {
			t.Errorf("%s: gated touch carries %v (listed %v), want %v", tc.name, v, ok, tc.want)
		}
		if v, ok := got["look"]; !ok || v != nil {
			t.Errorf("%s: read-only look carries %v (listed %v), want nothing", tc.name, v, ok)
		}
	}
}
