package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The real `mcpsafe proxy --config` binary in front of two real upstreams:
// the npm filesystem server over stdio and a Go server over streamable
// HTTP.

// goHTTPUpstream serves look (read-only) and touch (destructive; counts
// its runs) over streamable HTTP.
func goHTTPUpstream(t *testing.T) (url string, touched *atomic.Int64) {
	t.Helper()
	touched = new(atomic.Int64)
	up := mcp.NewServer(&mcp.Implementation{Name: "go-http-upstream"}, nil)
	obj := map[string]any{"type": "object"}
	up.AddTool(&mcp.Tool{Name: "look", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "seen"}}}, nil
		})
	up.AddTool(&mcp.Tool{Name: "touch", InputSchema: obj},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("touched ", touched.Add(1))}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close)
	return hs.URL, touched
}

// lockedBuffer collects a child's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls cond until it holds, and fails with what (and what saw
// says then, if given) when it has not after 30 seconds: for what another
// process does (a line in its log, a record in its journal, a request at a
// service) that the test can only observe from outside.
func waitFor(t testing.TB, what string, cond func() bool, saw ...func() string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			for _, s := range saw {
				what += "; " + s()
			}
			t.Fatal("never happened: " + what)
		}
	}
}

func listTools(t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		must(t, err)
		out[tool.Name] = true
	}
	return out
}

// children lists the process ids whose parent is pid.
func children(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// cmdline is a process's command line, arguments joined by spaces.
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

func TestGatewayBinaryStdio(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	base := t.TempDir()
	fsDir, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	webURL, touched := goHTTPUpstream(t)
	config := filepath.Join(base, "gateway.yaml")
	entries := func(fsPolicy string) string {
		return fmt.Sprintf("servers:\n  fs:\n    command: [%q, %q]\n%s  web:\n    url: %s\n    policy:\n      mode: elicit\n", fsBin, fsDir, fsPolicy, webURL)
	}
	must(t, os.WriteFile(config, []byte(entries("")), 0o644))

	cmd := exec.Command(binary, "proxy", "--config", config, "--journal", filepath.Join(base, "j.jsonl"))
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	var mu sync.Mutex
	var asked []string
	var listChanged atomic.Int64
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { listChanged.Add(1) },
	}).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })

	// Namespacing: every tool under its server's prefix, none bare.
	tools := listTools(t, cs)
	for _, want := range []string{"fs__write_file", "fs__read_text_file", "web__look", "web__touch"} {
		if !tools[want] {
			t.Fatalf("tools/list lacks %s: %v", want, tools)
		}
	}
	for name := range tools {
		if !strings.HasPrefix(name, "fs__") && !strings.HasPrefix(name, "web__") {
			t.Fatalf("tool %q is served without a prefix", name)
		}
	}
	// Gated calls on both servers, each asked for with a plan naming it.
	target := filepath.Join(fsDir, "a.txt")
	if res := call(t, cs, "fs__write_file", map[string]any{"path": target, "content": "one"}); res.IsError {
		t.Fatalf("fs__write_file: %+v", res)
	}
	if b, _ := os.ReadFile(target); string(b) != "one" {
		t.Fatalf("file: %q", b)
	}
	if res := call(t, cs, "web__touch", map[string]any{}); res.IsError || touched.Load() != 1 {
		t.Fatalf("web__touch: %+v", res)
	}
	mu.Lock()
	if len(asked) != 2 || !strings.Contains(asked[0], `gateway server "fs"`) || !strings.Contains(asked[1], `gateway server "web"`) {
		t.Fatalf("plans do not name their server: %q", asked)
	}
	mu.Unlock()

	// Crash: the filesystem server is killed; the gateway restarts it.
	var fsPid int
	for _, c := range children(cmd.Process.Pid) {
		if strings.Contains(cmdline(c), fsDir) {
			fsPid = c
		}
	}
	if fsPid == 0 {
		t.Fatalf("no filesystem server among the gateway's children %v", children(cmd.Process.Pid))
	}
	before := listChanged.Load()
	must(t, killPID(fsPid))
	waitFor(t, "fs restarted", func() bool {
		for _, c := range children(cmd.Process.Pid) {
			if c != fsPid && strings.Contains(cmdline(c), fsDir) {
				return listTools(t, cs)["fs__read_text_file"]
			}
		}
		return false
	})
	// The SDK coalesces notifications that come close together: one at
	// least (the withdrawal while down is TestGatewayCrashRestart's).
	waitFor(t, "tools/list_changed across the crash", func() bool { return listChanged.Load() > before })
	if res := call(t, cs, "fs__read_text_file", map[string]any{"path": target}); res.IsError {
		t.Fatalf("after restart: %+v", res)
	}

	// SIGHUP with a good file: fs's new policy denies writes; web is as it was.
	must(t, os.WriteFile(config, []byte(entries("    policy:\n      tools:\n        write_file:\n          deny: ['true']\n")), 0o644))
	must(t, cmd.Process.Signal(syscall.SIGHUP))
	waitFor(t, "the reload", func() bool { return strings.Contains(stderr.String(), "reloaded") })
	if r := reasonOf(t, call(t, cs, "fs__write_file", map[string]any{"path": target, "content": "two"})); r != "policy_denied" {
		t.Fatalf("fs__write_file after reload: %q", r)
	}
	if res := call(t, cs, "web__touch", map[string]any{}); res.IsError || touched.Load() != 2 {
		t.Fatalf("web__touch after reload: %+v", res)
	}
	// SIGHUP with a bad file: refused, the running configuration stays.
	must(t, os.WriteFile(config, []byte("servers:\n  fs:\n    command: [x]\n    policy:\n      tools:\n        write_file:\n          deny: ['args.x ==']\n"), 0o644))
	must(t, cmd.Process.Signal(syscall.SIGHUP))
	waitFor(t, "the refusal", func() bool {
		return strings.Contains(stderr.String(), "reload") && strings.Contains(stderr.String(), "deny[0]")
	})
	if r := reasonOf(t, call(t, cs, "fs__write_file", map[string]any{"path": target, "content": "three"})); r != "policy_denied" {
		t.Fatalf("fs__write_file after a refused reload: %q", r)
	}
	if res := call(t, cs, "web__look", map[string]any{}); res.IsError {
		t.Fatalf("web__look after a refused reload: %+v", res)
	}
	if b, _ := os.ReadFile(target); string(b) != "one" {
		t.Fatalf("file: %q", b)
	}
}

// Two servers that would serve the same names: the gateway does not start.
func TestGatewayBinaryCollision(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	base := t.TempDir()
	config := filepath.Join(base, "gateway.yaml")
	must(t, os.WriteFile(config, []byte(fmt.Sprintf("servers:\n  a:\n    command: [%q, %q]\n    prefix: false\n  b:\n    command: [%q, %q]\n    prefix: false\n", fsBin, base, fsBin, base)), 0o644))
	out, err := exec.Command(binary, "proxy", "--config", config, "--journal", filepath.Join(base, "j.jsonl")).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !bytes.Contains(out, []byte("already serves")) {
		t.Fatalf("want exit 1 naming the collision; got %v: %s", err, out)
	}
	// Mixing --config with a single upstream is a usage error.
	out, err = exec.Command(binary, "proxy", "--config", config, "--upstream-url", "http://127.0.0.1:1/").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("--config with --upstream-url: %v: %s", err, out)
	}
}

// The gateway served over streamable HTTP.
func TestGatewayBinaryHTTP(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	base := t.TempDir()
	fsDir, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	must(t, os.WriteFile(filepath.Join(fsDir, "x.txt"), []byte("xx"), 0o644))
	webURL, _ := goHTTPUpstream(t)
	config := filepath.Join(base, "gateway.yaml")
	must(t, os.WriteFile(config, []byte(fmt.Sprintf("servers:\n  fs:\n    command: [%q, %q]\n  web:\n    url: %s\n", fsBin, fsDir, webURL)), 0o644))
	url := startHTTPGateway(t, config)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	must(t, err)
	defer cs.Close()
	if res := call(t, cs, "fs__read_text_file", map[string]any{"path": filepath.Join(fsDir, "x.txt")}); res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "xx") {
		t.Fatalf("fs over HTTP: %+v", res)
	}
	if res := call(t, cs, "web__look", map[string]any{}); res.IsError {
		t.Fatalf("web over HTTP: %+v", res)
	}
	// Without elicitation the gated call asks for a token it may not use.
	if res := call(t, cs, "web__touch", map[string]any{}); !res.IsError {
		t.Fatalf("gated call over HTTP without approval ran: %+v", res)
	}
}

// startHTTPGateway runs `mcpsafe proxy --config --http` and returns its URL.
func startHTTPGateway(t *testing.T, config string, extra ...string) string {
	url, _, _ := startHTTPGatewayCmd(t, config, extra...)
	return url
}

// startHTTPGatewayCmd also returns the process and its stderr so far.
func startHTTPGatewayCmd(t *testing.T, config string, extra ...string) (string, *exec.Cmd, *lockedBuffer) {
	t.Helper()
	args := append([]string{"proxy", "--config", config, "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "--http", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(binary, args...)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	addr := make(chan string, 1)
	log := &lockedBuffer{}
	go func() {
		re := regexp.MustCompile(`serving MCP on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			log.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addr <- m[1]
				sent = true
			}
		}
		io.Copy(io.Discard, stderr)
		if !sent {
			close(addr)
		}
	}()
	select {
	case url, ok := <-addr:
		if !ok {
			t.Fatalf("the gateway exited: %s", log.String())
		}
		return url, cmd, log
	case <-time.After(60 * time.Second):
		t.Fatal("the gateway did not report its address")
	}
	return "", nil, nil
}

// Over HTTP with tokens: a SIGHUP that changes one tool's policy voids
// that tool's outstanding token only.
func TestGatewayBinaryHTTPReloadVoidsChangedTool(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	base := t.TempDir()
	fsDir, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	webURL, touched := goHTTPUpstream(t)
	config := filepath.Join(base, "gateway.yaml")
	write := func(rule string) {
		must(t, os.WriteFile(config, []byte(fmt.Sprintf(`servers:
  fs:
    command: [%q, %q]
    policy:
      mode: token
      allow_token_for: [write_file]
      tools:
        write_file:
          deny: [%q]
  web:
    url: %s
    policy:
      mode: token
      allow_token_for: [touch]
`, fsBin, fsDir, rule, webURL)), 0o644))
	}
	write(`args.path.endsWith(".never")`)
	url, cmd, stderr := startHTTPGatewayCmd(t, config)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	must(t, err)
	defer cs.Close()
	target := filepath.Join(fsDir, "t.txt")
	newDir := filepath.Join(fsDir, "sub")
	fsArgs := map[string]any{"path": target, "content": "x"}
	tokenFor := func(tool string, args map[string]any) string {
		m := sc(t, call(t, cs, tool, args))
		tok, _ := m["approval_token"].(string)
		if m["status"] != "approval_required" || tok == "" {
			t.Fatalf("%s: %v", tool, m)
		}
		return tok
	}
	with := func(args map[string]any, tok string) map[string]any {
		out := map[string]any{"approval_token": tok}
		for k, v := range args {
			out[k] = v
		}
		return out
	}
	fsTok := tokenFor("fs__write_file", fsArgs)
	dirTok := tokenFor("fs__create_directory", map[string]any{"path": newDir})
	webTok := tokenFor("web__touch", map[string]any{})

	write(`args.path.endsWith(".nope")`)
	must(t, cmd.Process.Signal(syscall.SIGHUP))
	waitFor(t, "the reload", func() bool { return strings.Contains(stderr.String(), "reloaded") })
	if r := reasonOf(t, call(t, cs, "fs__write_file", with(fsArgs, fsTok))); r != "token_invalid" {
		t.Fatalf("fs__write_file with a token from before its policy changed: %q", r)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the file was written")
	}
	// Control: the same server's unchanged tool, and the other server's.
	if res := call(t, cs, "fs__create_directory", with(map[string]any{"path": newDir}, dirTok)); res.IsError {
		t.Fatalf("fs__create_directory, unchanged: %+v", res)
	}
	if st, err := os.Stat(newDir); err != nil || !st.IsDir() {
		t.Fatalf("directory: %v", err)
	}
	if res := call(t, cs, "web__touch", with(map[string]any{}, webTok)); res.IsError || touched.Load() != 1 {
		t.Fatalf("web__touch, other server: %+v", res)
	}
}

// --watch reloads when the file's content changes, without a signal.
func TestGatewayBinaryWatch(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	base := t.TempDir()
	fsDir, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	config := filepath.Join(base, "gateway.yaml")
	entry := fmt.Sprintf("servers:\n  fs:\n    command: [%q, %q]\n    policy:\n      mode: token\n      tools:\n        write_file:\n          irreversible: false\n", fsBin, fsDir)
	must(t, os.WriteFile(config, []byte(entry), 0o644))
	cmd := exec.Command(binary, "proxy", "--config", config, "--watch", "50ms", "--journal", filepath.Join(base, "j.jsonl"))
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	args := map[string]any{"path": filepath.Join(fsDir, "w.txt"), "content": "x"}
	if m := sc(t, call(t, cs, "fs__write_file", args)); m["status"] != "approval_required" {
		t.Fatalf("control, before the change: %v", m)
	}
	must(t, os.WriteFile(config, []byte(entry+"          deny: ['true']\n"), 0o644))
	waitFor(t, "the reload", func() bool { return strings.Contains(stderr.String(), "reloaded") })
	if r := reasonOf(t, call(t, cs, "fs__write_file", args)); r != "policy_denied" {
		t.Fatalf("after the file changed: %q", r)
	}
}

// killPID kills a process hard: SIGKILL on Unix, TerminateProcess on
// Windows (so this file compiles for every platform).
func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
