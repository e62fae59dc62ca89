package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// countingAccept approves every elicitation and counts them.
func countingAccept(asked *atomic.Int32) *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return acceptAll(ctx, r)
	}}
}

// The built proxy in front of the built `mcpsafe files`: with
// trust_upstream_gate: true in its policy the human is asked once (by
// files, through the proxy) and the file goes; files journals the call.
// Control: without the key the proxy gates the tool too, and the same
// delete asks twice.
func TestProxyTrustsUpstreamGate(t *testing.T) {
	for _, c := range []struct {
		name, policy string
		asks         int32
	}{
		{"declared", "trust_upstream_gate: true\n", 1},
		{"control: not declared", "mode: auto\n", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorkspace(t)
			pol := filepath.Join(w.base, "policy.yaml")
			must(t, os.WriteFile(pol, []byte(c.policy), 0o644))
			var asked atomic.Int32
			cs := startProxy(t, countingAccept(&asked), "--journal", filepath.Join(w.base, "proxy.jsonl"), "--policy", pol, "--",
				binary, "files", "--root", w.root, "--journal", w.journal)
			if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}); res.IsError || content(t, w.path("cache.txt")) != "<missing>" {
				t.Fatalf("delete: %v", res.Content)
			}
			if asked.Load() != c.asks {
				t.Fatalf("asked %d times, want %d", asked.Load(), c.asks)
			}
			if b, err := os.ReadFile(w.journal); err != nil || !strings.Contains(string(b), `"decision":"executed"`) {
				t.Fatalf("files' journal: %v\n%s", err, b)
			}
		})
	}
}

// Fail closed: the key trusts only tools that declare their own
// approval_token (a gate of their own). On an upstream with one such tool
// and one without, the one without is still gated here (asked, and not
// run when declined); an upstream with none is a startup error.
func TestProxyTrustsOnlyToolsThatGateThemselves(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "http-upstream"}, nil)
	var dropped, selfGated atomic.Int32
	up.AddTool(&mcp.Tool{Name: "drop_table", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			dropped.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "dropped"}}}, nil
		})
	withToken := map[string]any{"type": "object", "properties": map[string]any{"approval_token": map[string]any{"type": "string"}}}
	up.AddTool(&mcp.Tool{Name: "purge_cache", InputSchema: withToken},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			selfGated.Add(1) // this upstream's own gate would ask here
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "purged"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	must(t, os.WriteFile(pol, []byte("trust_upstream_gate: true\n"), 0o644))
	var asked atomic.Int32
	cs := startProxy(t, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}, "--journal", filepath.Join(dir, "j.jsonl"), "--policy", pol, "--upstream-url", hs.URL)
	if res := call(t, cs, "drop_table", map[string]any{}); reasonOf(t, res) != "declined" || dropped.Load() != 0 || asked.Load() != 1 {
		t.Fatalf("a tool without a gate of its own passed through: %v (ran %d, asked %d)", res.Content, dropped.Load(), asked.Load())
	}
	if res := call(t, cs, "purge_cache", map[string]any{}); res.IsError || selfGated.Load() != 1 || asked.Load() != 1 {
		t.Fatalf("the self-gated tool: %v (ran %d, asked %d)", res.Content, selfGated.Load(), asked.Load())
	}

	// An upstream none of whose tools gates itself: refused at startup.
	bare := mcp.NewServer(&mcp.Implementation{Name: "bare"}, nil)
	bare.AddTool(&mcp.Tool{Name: "drop_table", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	hs2 := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return bare }, nil))
	t.Cleanup(hs2.Close)
	_, env := freshState(t)
	code, stderr := runExit(t, env, "proxy", "--journal", filepath.Join(dir, "j2.jsonl"), "--policy", pol, "--upstream-url", hs2.URL)
	if code != 1 || !strings.Contains(stderr, "policy.yaml:1: trust_upstream_gate: no upstream tool declares its own approval_token") {
		t.Fatalf("trust on an upstream that gates nothing: exit %d, %q", code, stderr)
	}
}

// The gateway with `mcpsafe files` as one of its servers, trusted in that
// server's policy: one question per delete.
func TestGatewayTrustsUpstreamGate(t *testing.T) {
	w := newWorkspace(t)
	config := filepath.Join(w.base, "gateway.yaml")
	must(t, os.WriteFile(config, []byte(fmt.Sprintf("servers:\n  files:\n    command: [%q, files, --root, %q, --journal, %q]\n    policy:\n      trust_upstream_gate: true\n", binary, w.root, w.journal)), 0o644))
	cmd := exec.Command(binary, "proxy", "--config", config, "--journal", filepath.Join(w.base, "gw.jsonl"))
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	var asked atomic.Int32
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, countingAccept(&asked)).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	if res := call(t, cs, "files__delete_file", map[string]any{"path": "cache.txt"}); res.IsError || content(t, w.path("cache.txt")) != "<missing>" {
		t.Fatalf("delete through the gateway: %v; stderr: %s", res.Content, stderr.String())
	}
	if asked.Load() != 1 {
		t.Fatalf("asked %d times, want once", asked.Load())
	}
}
