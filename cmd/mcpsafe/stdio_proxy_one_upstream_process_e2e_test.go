package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A proxy served over stdio has one client, and starts its upstream
// command once, in that client's protocol generation: a server that holds
// a lock or keeps state in memory behaves behind it as it does alone.
// Through the built binary, with real SDK clients of both clientGenerations.

const (
	statefulUpstreamEnv = "MCPSAFE_TEST_STATEFUL_UPSTREAM" // run as the stateful upstream
	upstreamStartsEnv   = "MCPSAFE_TEST_UPSTREAM_STARTS"   // one line per start of it
)

// runStatefulUpstream is a stdio MCP server (the SDK's, both clientGenerations)
// that keeps its tools in memory: grow adds the tool grown and tells its
// client the list changed. Each start appends a line to the starts file.
func runStatefulUpstream() int {
	noteStart(os.Getenv(upstreamStartsEnv))
	srv := mcp.NewServer(&mcp.Implementation{Name: "stateful", Version: "1"}, nil)
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	srv.AddTool(&mcp.Tool{Name: "grow", InputSchema: map[string]any{"type": "object"}, Annotations: ro},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv.AddTool(&mcp.Tool{Name: "grown", InputSchema: map[string]any{"type": "object"}, Annotations: ro},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text("grown here"), nil
				})
			return text("grew"), nil
		})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

func noteStart(path string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err == nil {
		f.WriteString("started\n")
		f.Close()
	}
}

// starts is how many times the upstream started, per its starts file.
func starts(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	must(t, err)
	return strings.Count(string(b), "\n")
}

// clientGenerations are the client session options of each generation.
var clientGenerations = map[string]*mcp.ClientSessionOptions{
	"2025-11-25": {ProtocolVersion: "2025-11-25"},
	"2026-07-28": nil, // the SDK's newest
}

// The reproduction: `mcpsafe proxy -- mcpsafe files --root R --journal J`
// (through a wrapper that counts starts). A 2025-11-25 client's first call
// used to fail (a second process of the upstream for its generation could
// not take J's lock); the 2026-07-28 client is the control.
func TestStdioProxyStartsFilesOnce(t *testing.T) {
	for gen, sopts := range clientGenerations {
		t.Run(gen, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "root")
			must(t, os.MkdirAll(root, 0o755))
			must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha"), 0o644))
			count := filepath.Join(dir, "starts")
			wrapper := filepath.Join(dir, "files.sh")
			must(t, os.WriteFile(wrapper, []byte("#!/bin/sh\necho started >> '"+count+"'\nexec '"+binary+"' files --root '"+root+"' --journal '"+filepath.Join(dir, "files.jsonl")+"'\n"), 0o755))
			r := startStdio(t, nil, sopts, "proxy", "--journal", filepath.Join(dir, "proxy.jsonl"), "--", wrapper)
			if v := r.cs.InitializeResult().ProtocolVersion; (v < "2026-07-28") != (gen < "2026-07-28") {
				t.Fatalf("the client's session is %s, want the %s generation", v, gen)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for i := range 2 {
				res, err := r.cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_directory", Arguments: map[string]any{"path": root}})
				if err != nil || res.IsError {
					t.Fatalf("call %d: %v %+v; stderr:\n%s", i+1, err, res, r.stderr.String())
				}
				if b, _ := res.Content[0].(*mcp.TextContent); b == nil || !strings.Contains(b.Text, "a.txt") {
					t.Fatalf("call %d: %+v", i+1, res.Content)
				}
			}
			if n := starts(t, count); n != 1 {
				t.Fatalf("the upstream started %d times, want once; stderr:\n%s", n, r.stderr.String())
			}
		})
	}
}

// An upstream that keeps state in memory shows the client that state: a
// tool it grew on one call is listed to the client and runs, and the
// upstream started once. Behind a proxy and behind a gateway of one
// command member, for clients of both clientGenerations.
func TestStdioProxyShowsTheUpstreamsMemory(t *testing.T) {
	for _, via := range []string{"proxy", "gateway"} {
		for gen, sopts := range clientGenerations {
			t.Run(via+"/"+gen, func(t *testing.T) {
				dir := t.TempDir()
				count := filepath.Join(dir, "starts")
				args := []string{"proxy", "--journal", filepath.Join(dir, "j.jsonl"), "--", os.Args[0]}
				tool := "grow"
				if via == "gateway" {
					config := filepath.Join(dir, "gateway.yaml")
					must(t, os.WriteFile(config, []byte("servers:\n  mem:\n    command: ['"+os.Args[0]+"']\n"), 0o644))
					args = []string{"proxy", "--journal", filepath.Join(dir, "j.jsonl"), "--config", config}
					tool = "mem__grow"
				}
				changed := make(chan struct{}, 10)
				copts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}
				cmd := exec.Command(binary, args...)
				cmd.Env = append(os.Environ(), statefulUpstreamEnv+"=1", upstreamStartsEnv+"="+count)
				r := startStdioCmd(t, cmd, copts, sopts)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if res := call(t, r.cs, tool, map[string]any{}); res.IsError {
					t.Fatalf("%s: %+v; stderr:\n%s", tool, res.Content, r.stderr.String())
				}
				grown := strings.Replace(tool, "grow", "grown", 1)
				for listed := false; !listed; {
					select {
					case <-changed:
					case <-ctx.Done():
						t.Fatalf("the client was not told of the tool the upstream grew; starts %d; stderr:\n%s", starts(t, count), r.stderr.String())
					}
					list, err := r.cs.ListTools(ctx, nil)
					must(t, err)
					listed = slices.ContainsFunc(list.Tools, func(tl *mcp.Tool) bool { return tl.Name == grown })
				}
				if res := call(t, r.cs, grown, map[string]any{}); res.IsError || res.Content[0].(*mcp.TextContent).Text != "grown here" {
					t.Fatalf("%s: %+v", grown, res.Content)
				}
				if n := starts(t, count); n != 1 {
					t.Fatalf("the upstream started %d times, want once", n)
				}
			})
		}
	}
}
