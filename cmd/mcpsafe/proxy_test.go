package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The real `mcpsafe proxy` binary, spawned over stdio.

func npmFilesystemServer(t *testing.T) string {
	t.Helper()
	bin, _ := filepath.Abs("../../.cache/npm/node_modules/.bin/mcp-server-filesystem")
	if _, err := os.Stat(bin); err != nil {
		msg := "!!! @modelcontextprotocol/server-filesystem is not installed (run scripts/npm-deps): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

func startProxy(t *testing.T, copts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"proxy"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, copts).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestProxyBinaryFilesystem(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	base := t.TempDir()
	data, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	must(t, os.WriteFile(filepath.Join(data, "a.txt"), []byte("alpha"), 0o644))
	var answer atomic.Value
	answer.Store("decline")
	cs := startProxy(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if a := answer.Load().(string); a == "accept" {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}, "--journal", filepath.Join(base, "journal.jsonl"), "--policy", "../../proxy/testdata/example-policy.yaml", "--", fsBin, data)

	res := call(t, cs, "read_text_file", map[string]any{"path": filepath.Join(data, "a.txt")})
	if res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "alpha") {
		t.Fatalf("read through the proxy: %+v", res)
	}
	target := filepath.Join(data, "b.txt")
	if res := call(t, cs, "write_file", map[string]any{"path": target, "content": "beta"}); !res.IsError {
		t.Fatal("declined write succeeded")
	}
	if got := content(t, target); got != "<missing>" {
		t.Fatalf("declined write left %q", got)
	}
	answer.Store("accept")
	if res := call(t, cs, "write_file", map[string]any{"path": target, "content": "beta"}); res.IsError {
		t.Fatalf("accepted write: %+v", res)
	}
	if got := content(t, target); got != "beta" {
		t.Fatalf("accepted write left %q", got)
	}
	// The example policy's deny rule, and its control above.
	if res := call(t, cs, "write_file", map[string]any{"path": filepath.Join(data, ".bashrc"), "content": "x"}); !res.IsError {
		t.Fatal("the example policy's dotfile rule did not fire")
	}
	if got := content(t, filepath.Join(data, ".bashrc")); got != "<missing>" {
		t.Fatalf("denied write left %q", got)
	}
}

// The upstream over streamable HTTP; the downstream over stdio.
func TestProxyBinaryUpstreamHTTP(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "http-upstream"}, nil)
	var ran atomic.Int32
	up.AddTool(&mcp.Tool{Name: "drop_table", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "dropped"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close) // after the proxy (registered later) has exited
	cs := startProxy(t, nil, "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "--upstream-url", hs.URL)
	res := call(t, cs, "drop_table", map[string]any{"name": "users"})
	if !res.IsError || ran.Load() != 0 {
		t.Fatalf("an irreversible upstream tool ran without approval: %+v", res)
	}
}

func TestProxyBinaryStartupErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no upstream", nil, 2, "name the upstream"},
		{"both upstreams", []string{"--upstream-url", "http://127.0.0.1:1/mcp", "--", "true"}, 2, "not both"},
		{"policy typo", []string{"--policy", "../../proxy/policy/testdata/bad-policies/unknown-tool-key.yaml", "--", "true"}, 1, "irreversable"},
		{"CEL error", []string{"--policy", "../../proxy/policy/testdata/bad-policies/cel-syntax.yaml", "--", "true"}, 1, "cel-syntax.yaml:5:"},
		{"upstream does not start", []string{"--journal", filepath.Join(t.TempDir(), "j"), "--", "/nonexistent/server"}, 1, "upstream"},
		{"shared ledger without key", []string{"--ledger", "file:" + filepath.Join(t.TempDir(), "l.db"), "--audience", "db-proxy", "--", "true"}, 1, "--key-file"},
		// Refused before the store is contacted: nothing listens on port 1.
		{"shared ledger, default audience", []string{"--ledger", "redis://127.0.0.1:1/0", "--", "true"}, 1, "set --audience"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"proxy"}, c.args...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != c.code || !strings.Contains(stderr.String(), c.want) {
				t.Fatalf("exit %d (want %d), stderr %q (want %q)", code, c.code, stderr.String(), c.want)
			}
		})
	}
}

// The downstream over streamable HTTP.
func TestProxyBinaryServesHTTP(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "http-upstream"}, nil)
	up.AddTool(&mcp.Tool{Name: "look", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "seen"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close) // after the proxy (registered later) has exited
	cmd := exec.Command(binary, "proxy", "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "--http", "127.0.0.1:0", "--upstream-url", hs.URL)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving MCP on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	var url string
	select {
	case url = <-addr:
	case <-time.After(20 * time.Second):
		t.Fatal("the proxy did not report its address")
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	must(t, err)
	defer cs.Close()
	res := call(t, cs, "look", map[string]any{})
	if res.IsError || res.Content[0].(*mcp.TextContent).Text != "seen" {
		t.Fatalf("pass-through over HTTP: %+v", res)
	}
}

// TestProxyFrontsMcpsafeFiles: the proxy in front of the built `mcpsafe
// files`, whose gated tools already take approval_token. The proxy asks
// first; a decline there never reaches files. Accepted, the call reaches
// files, which hands out its own one-time token (files runs in token
// mode); the second call carries that token through the proxy, which asks
// again (the token is part of the call it approves) and files redeems it.
func TestProxyFrontsMcpsafeFiles(t *testing.T) {
	w := newWorkspace(t)
	var answer atomic.Value
	answer.Store("decline")
	var asked atomic.Int32
	cs := startProxy(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		if answer.Load().(string) == "accept" {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}, "--journal", filepath.Join(w.base, "proxy.jsonl"), "--",
		binary, "files", "--root", w.root, "--journal", w.journal, "--mode", "token", "--allow-token-for", "delete_file")

	args := map[string]any{"path": "cache.txt"}
	if res := call(t, cs, "delete_file", args); reasonOf(t, res) != "declined" || asked.Load() != 1 || content(t, w.path("cache.txt")) != "cache" {
		t.Fatalf("declined at the proxy: asked %d, %v", asked.Load(), res.Content)
	}
	answer.Store("accept")
	tok := tokenOf(t, call(t, cs, "delete_file", args)) // files' own token, through the proxy
	if content(t, w.path("cache.txt")) != "cache" {
		t.Fatal("the file went before files' token was redeemed")
	}
	args["approval_token"] = tok
	if res := call(t, cs, "delete_file", args); res.IsError || content(t, w.path("cache.txt")) != "<missing>" {
		t.Fatalf("the call with files' token through the proxy: %v", res.Content)
	}
	if n := asked.Load(); n != 3 {
		t.Fatalf("the proxy asked %d times, want 3 (one decline, then each call)", n)
	}
}
