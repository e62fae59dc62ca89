package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a new user runs first: the README's commands on default settings,
// on a machine where $XDG_STATE_HOME/mcpsafe does not exist yet.

// freshState is an XDG_STATE_HOME that does not exist yet, and the
// environment that points the binary at it.
func freshState(t *testing.T) (stateDir string, env []string) {
	t.Helper()
	xdg := filepath.Join(t.TempDir(), "fresh", "state")
	return filepath.Join(xdg, "mcpsafe"), append(os.Environ(), "XDG_STATE_HOME="+xdg)
}

// spawn connects a real SDK client to the binary over stdio.
func spawn(t *testing.T, env []string, copts *mcp.ClientOptions, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, copts).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect %v: %v; stderr: %s", args, err, stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// runFails runs the binary with stdin at EOF and returns its exit code and
// stderr; it fails the test if the process does not end within a minute.
func runExit(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	cmd.Stdin = strings.NewReader("")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v did not end: %s", args, stderr.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stderr.String()
}

// journalWith checks that exactly one journal in dir holds a record for
// tool, and that it verifies.
func journalWith(t *testing.T, paths []string, tool, decision string) string {
	t.Helper()
	var hits []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		must(t, err)
		if bytes.Contains(b, []byte(`"tool":"`+tool+`"`)) && bytes.Contains(b, []byte(`"decision":"`+decision+`"`)) {
			hits = append(hits, p)
		}
	}
	if len(hits) != 1 {
		t.Fatalf("%s/%s recorded in %d journals %v, want exactly one", tool, decision, len(hits), hits)
	}
	if _, err := journal.VerifyFile(hits[0]); err != nil {
		t.Fatalf("%s: %v", hits[0], err)
	}
	return hits[0]
}

// Broken 2: the README's Claude Desktop examples (files + proxy), plus a
// second proxy for another upstream, all on default journal settings at
// once. Each keeps its own journal; so does a true duplicate.
func TestDefaultJournalsSideBySide(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	stateDir, env := freshState(t)
	w := newWorkspace(t)
	dataA, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	dataB, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	accept := &mcp.ClientOptions{ElicitationHandler: acceptAll}

	files := spawn(t, env, accept, "files", "--root", w.root)
	proxyA := spawn(t, env, accept, "proxy", "--", fsBin, dataA)
	proxyB := spawn(t, env, accept, "proxy", "--", fsBin, dataB)

	if res := call(t, files, "delete_file", map[string]any{"path": "cache.txt"}); res.IsError {
		t.Fatalf("files: %v", res.Content)
	}
	if res := call(t, proxyA, "write_file", map[string]any{"path": filepath.Join(dataA, "a.txt"), "content": "A"}); res.IsError {
		t.Fatalf("proxy A: %v", res.Content)
	}
	if res := call(t, proxyB, "create_directory", map[string]any{"path": filepath.Join(dataB, "b")}); res.IsError {
		t.Fatalf("proxy B: %v", res.Content)
	}
	if content(t, w.path("cache.txt")) != "<missing>" || content(t, filepath.Join(dataA, "a.txt")) != "A" {
		t.Fatal("an approved call did not run")
	}

	paths, err := filepath.Glob(filepath.Join(stateDir, "journal-*.jsonl"))
	must(t, err)
	if len(paths) != 3 {
		t.Fatalf("journals %v, want three (one per server)", paths)
	}
	if p := journalWith(t, paths, "delete_file", journal.Executed); !strings.HasPrefix(filepath.Base(p), "journal-mcpsafe-files-") {
		t.Fatalf("files journal named %s", p)
	}
	pa := journalWith(t, paths, "write_file", journal.Executed)
	pb := journalWith(t, paths, "create_directory", journal.Executed)
	if pa == pb || !strings.HasPrefix(filepath.Base(pa), "journal-mcpsafe-proxy_") {
		t.Fatalf("proxy journals %s and %s", pa, pb)
	}
	if fi, err := os.Stat(stateDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v, %v; want a directory with mode 0700", stateDir, fi, err)
	}

	// The same server twice on default flags (one configuration in two
	// MCP clients): the second takes the next default journal, so the
	// chain keeps one writer and both start (each serves until stdin
	// ends). TestDefaultStateSideBySide covers the README's snippets; a
	// shared explicit --journal is refused there.
	code, stderr := runExit(t, env, "files", "--root", w.root)
	if code != 0 {
		t.Fatalf("a second identical server: exit %d, %q", code, stderr)
	}

	// `mcpsafe journal verify` with no PATH names the candidates.
	code, stderr = runExit(t, env, "journal", "verify")
	if code != 2 || !strings.Contains(stderr, "journals in "+stateDir) || !strings.Contains(stderr, pa) {
		t.Fatalf("journal verify without PATH: exit %d, %q", code, stderr)
	}
}

// Broken 6: the USAGE journal steps after a real session, with the end of
// the journal edited. verify, show and the next server start all refuse;
// the untouched journal is the control.
func TestJournalTailEditsDetected(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(lines []string) []string
	}{
		{"control: untouched", nil},
		{"one byte changed in the last line", func(l []string) []string {
			last := len(l) - 1
			l[last] = strings.Replace(l[last], `"decision":"executed"`, `"decision":"executes"`, 1)
			return l
		}},
		{"last line removed", func(l []string) []string { return l[:len(l)-1] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t)
			cs := w.serve(&mcp.ClientOptions{ElicitationHandler: acceptAll})
			if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}); res.IsError {
				t.Fatalf("delete: %v", res.Content)
			}
			cs.Close() // the server exits when stdin closes, releasing the journal
			b, err := os.ReadFile(w.journal)
			must(t, err)
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			if tc.edit != nil {
				edited := tc.edit(lines)
				must(t, os.WriteFile(w.journal, []byte(strings.Join(edited, "\n")+"\n"), 0o600))
			}
			env := os.Environ()
			vcode, vout := runExit(t, env, "journal", "verify", w.journal)
			scode, sout := runExit(t, env, "journal", "show", w.journal)
			fcode, fout := runExit(t, env, "files", "--root", w.root, "--journal", w.journal)
			if tc.edit == nil {
				if vcode != 0 || scode != 0 || fcode != 0 {
					t.Fatalf("an untouched journal: verify %d %q, show %d %q, files %d %q", vcode, vout, scode, sout, fcode, fout)
				}
				return
			}
			if vcode != 1 || !strings.Contains(vout, "tampered") || !strings.Contains(vout, "head file") {
				t.Fatalf("verify: exit %d, %q", vcode, vout)
			}
			if scode != 1 || !strings.Contains(sout, "tampered") {
				t.Fatalf("show: exit %d, %q", scode, sout)
			}
			if fcode != 1 || !strings.Contains(fout, "refusing to open") {
				t.Fatalf("the next server start: exit %d, %q", fcode, fout)
			}
		})
	}
}

// startHTTP starts the binary with --http 127.0.0.1:0 and returns its /mcp
// URL.
func startHTTP(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--http", "127.0.0.1:0")...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
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
	select {
	case u := <-addr:
		return u
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not report its address")
		return ""
	}
}

func tsSDK(t *testing.T) string {
	t.Helper()
	sdk, err := filepath.Abs("../../.cache/npm/node_modules/@modelcontextprotocol/sdk")
	if err == nil {
		_, err = os.Stat(filepath.Join(sdk, "package.json"))
	}
	if err != nil {
		msg := "!!! @modelcontextprotocol/sdk is not installed (run scripts/npm-deps): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return sdk
}

type tsOutcome struct {
	Protocol string `json:"protocol"`
	Asked    int    `json:"asked"`
	Error    string `json:"error"`
	Result   struct {
		IsError           bool           `json:"isError"`
		StructuredContent map[string]any `json:"structuredContent"`
	} `json:"result"`
}

// tsCall makes one tool call with the real TypeScript SDK client over HTTP.
func tsCall(t *testing.T, sdk, url, answer, tool string, args map[string]any) tsOutcome {
	t.Helper()
	a, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "testdata/ts-http-client.mjs")
	cmd.Env = append(os.Environ(), "SDK_DIR="+sdk, "URL="+url, "ANSWER="+answer, "TOOL="+tool, "ARGS="+string(a))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v; %s", err, stderr.String())
	}
	var o tsOutcome
	if err := json.Unmarshal(bytes.TrimSpace(out), &o); err != nil || o.Error != "" {
		t.Fatalf("client output %q: %v %s", out, err, o.Error)
	}
	return o
}

// Broken 3: README's `mcpsafe files --http` with today's TypeScript client,
// which declares elicitation. On the default it is asked and its answer
// counts; the Go client on 2026-07-28 (MRTR, no session) works on the same
// listener. With --http-stateless the older client cannot be asked: it is
// refused, and the message says why and which flag is in the way.
func TestDefaultHTTPElicitsForTodaysClients(t *testing.T) {
	sdk := tsSDK(t)
	w := newWorkspace(t)
	url := startHTTP(t, os.Environ(), "files", "--root", w.root, "--journal", w.journal)

	o := tsCall(t, sdk, url, "decline", "delete_file", map[string]any{"path": "cache.txt"})
	if o.Asked != 1 || !o.Result.IsError || o.Result.StructuredContent["reason"] != "declined" || content(t, w.path("cache.txt")) != "cache" {
		t.Fatalf("TS client declining: %+v", o)
	}
	o = tsCall(t, sdk, url, "accept", "delete_file", map[string]any{"path": "cache.txt"})
	if o.Asked != 1 || o.Result.IsError || content(t, w.path("cache.txt")) != "<missing>" {
		t.Fatalf("TS client accepting: %+v", o)
	}

	for _, proto := range []string{"", "2025-11-25"} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, &mcp.ClientOptions{ElicitationHandler: acceptAll}).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
		must(t, err)
		if want := map[string]string{"": "2026-07-28"}[proto]; want != "" && cs.InitializeResult().ProtocolVersion != want {
			t.Fatalf("the Go client negotiated %s, want %s", cs.InitializeResult().ProtocolVersion, want)
		}
		w.write("cache.txt", "cache")
		if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}); res.IsError || content(t, w.path("cache.txt")) != "<missing>" {
			t.Fatalf("Go client (protocol %q -> %s): %v", proto, cs.InitializeResult().ProtocolVersion, res.Content)
		}
		cs.Close()
	}

	w2 := newWorkspace(t)
	url = startHTTP(t, os.Environ(), "files", "--root", w2.root, "--journal", w2.journal, "--http-stateless")
	o = tsCall(t, sdk, url, "accept", "delete_file", map[string]any{"path": "cache.txt"})
	msg, _ := o.Result.StructuredContent["message"].(string)
	if o.Asked != 0 || !o.Result.IsError || o.Result.StructuredContent["reason"] != "elicitation_unsupported" ||
		!strings.Contains(msg, "stateless HTTP") || !strings.Contains(msg, "--http-stateless") || content(t, w2.path("cache.txt")) != "cache" {
		t.Fatalf("TS client on --http-stateless: %+v", o)
	}
	if code, stderr := runExit(t, os.Environ(), "files", "--root", w2.root, "--http-stateless", "--http-stateful"); code != 2 || !strings.Contains(stderr, "exclude each other") {
		t.Fatalf("both session flags: exit %d, %q", code, stderr)
	}
}

// freshHome is the environment of a user whose home directory has nothing
// of mcpsafe in it yet: no XDG_STATE_HOME, no ~/.local/state.
func freshHome(t *testing.T) (home string, env []string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "home")
	must(t, os.Mkdir(home, 0o755))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_STATE_HOME=") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return home, append(env, "HOME="+home, "PATH="+filepath.Dir(binary)+":"+os.Getenv("PATH"))
}

// Broken 4: docs/USAGE.md "Channel approvals", setup steps 1-4 on a fresh
// home directory, then one call approved by alice over the JSON API.
func TestChannelSetupOnFreshMachine(t *testing.T) {
	home, env := freshHome(t)
	cfg := filepath.Join(home, ".config", "mcpsafe")
	// Steps 1 and 2, as written.
	steps := `set -e
umask 077
mkdir -p ~/.config/mcpsafe && cd ~/.config/mcpsafe
head -c 32 /dev/urandom | base64 > channel.secret
chmod 600 channel.secret
for who in alice bob; do
  pw=$(head -c 18 /dev/urandom | base64)
  echo "$who: $pw"     # hand each person their password, once
  printf '%s\n' "$pw" | mcpsafe approvals passwd --approvers-file approvers "$who"
done
`
	sh := exec.Command("bash", "-c", steps)
	sh.Env = env
	out, err := sh.CombinedOutput()
	if err != nil {
		t.Fatalf("steps 1-2: %v: %s", err, out)
	}
	m := regexp.MustCompile(`(?m)^alice: (\S+)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("step 2 printed no password for alice:\n%s", out)
	}
	alice := string(m[1])
	if b, err := os.ReadFile(filepath.Join(cfg, "approvers")); err != nil || strings.Contains(string(b), alice) || !strings.Contains(string(b), "alice:$argon2id$") {
		t.Fatalf("the approvers file holds %q (%v), want argon2id hashes only", b, err)
	}

	// Step 3, on a free port instead of 8080.
	state := filepath.Join(home, ".local", "state", "mcpsafe")
	serve := exec.Command(binary, "approvals", "serve", "--listen", "127.0.0.1:0",
		"--secret-file", filepath.Join(cfg, "channel.secret"), "--approvers-file", filepath.Join(cfg, "approvers"),
		"--store", "file:"+filepath.Join(state, "approvals.db"), "--require", "drop_table=2")
	serve.Env, serve.Dir = env, cfg
	var serveErr bytes.Buffer
	serve.Stderr = &serveErr
	stdout, err := serve.StdoutPipe()
	must(t, err)
	must(t, serve.Start())
	t.Cleanup(func() { serve.Process.Signal(os.Interrupt); serve.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		serve.Wait()
		t.Fatalf("step 3 failed: %v; stderr: %s", err, serveErr.String())
	}
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	for path, mode := range map[string]os.FileMode{state: 0o700, filepath.Join(state, "approvals.db"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Fatalf("%s: %v, %v; want mode %v", path, fi, err, mode)
		}
	}

	// Step 4.
	work := filepath.Join(home, "work")
	must(t, os.Mkdir(work, 0o755))
	must(t, os.WriteFile(filepath.Join(work, "cache.txt"), []byte("cache"), 0o644))
	cs := spawn(t, env, nil, "files", "--root", work, "--mode", "channel",
		"--approver-url", base+"/webhook", "--approver-secret-file", filepath.Join(cfg, "channel.secret"), "--ttl", "15m", "--approver-timeout", "10m")
	done := make(chan *mcp.CallToolResult, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "cache.txt"}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	api := func(method, path string) []map[string]any {
		req, _ := http.NewRequest(method, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+alice)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		var list struct{ Requests []map[string]any }
		if method == "GET" {
			must(t, json.NewDecoder(resp.Body).Decode(&list))
		} else if resp.StatusCode != 200 {
			t.Fatalf("%s %s: HTTP %d", method, path, resp.StatusCode)
		}
		return list.Requests
	}
	var id string
	waitFor(t, "the request reaches the approval service", func() bool {
		if l := api("GET", "/api/requests"); len(l) == 1 {
			id, _ = l[0]["id"].(string)
		}
		return id != ""
	})
	if content(t, filepath.Join(work, "cache.txt")) != "cache" {
		t.Fatal("deleted before the approval")
	}
	api("POST", "/api/requests/"+id+"/approve")
	if res := <-done; res.IsError || content(t, filepath.Join(work, "cache.txt")) != "<missing>" {
		t.Fatalf("after alice approved: %v", res.Content)
	}
}

// Broken 5: `mcpsafe proxy -- sleep 100`, an upstream that never speaks,
// ends with an error naming the flag instead of hanging; a real upstream
// with the same short timeout starts (control).
func TestProxySilentUpstreamTimesOut(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	_, env := freshState(t)
	start := time.Now()
	code, stderr := runExit(t, env, "proxy", "--upstream-timeout", "2s", "--", "sleep", "100")
	if code != 1 || !strings.Contains(stderr, "did not answer initialize within 2s") || !strings.Contains(stderr, "--upstream-timeout") {
		t.Fatalf("silent upstream: exit %d, %q", code, stderr)
	}
	// Our error is the first and only line, its prefix said once.
	if !strings.HasPrefix(stderr, "mcpsafe proxy: the upstream") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("stderr %q: want exactly our one line", stderr)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("took %s to give up", d)
	}
	data := t.TempDir()
	cs := spawn(t, env, nil, "proxy", "--upstream-timeout", "20s", "--", fsBin, data)
	if res := call(t, cs, "list_allowed_directories", map[string]any{}); res.IsError {
		t.Fatalf("control: %v", res.Content)
	}
}

// The demo's "check it yourself" line can be followed with --keep; without
// it the directory is gone (control).
func TestDemoKeep(t *testing.T) {
	for _, keep := range []bool{true, false} {
		args := []string{"demo"}
		if keep {
			args = append(args, "--keep")
		}
		out, err := exec.Command(binary, args...).Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		m := regexp.MustCompile(`Journal:\s+(\S+)`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("no journal path in %s", out)
		}
		path := string(m[1])
		dir := filepath.Dir(filepath.Dir(path))
		if !keep {
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Fatalf("demo without --keep left %s: %v", dir, err)
			}
			continue
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		if !strings.Contains(string(out), "mcpsafe journal verify "+path) {
			t.Fatalf("no verify line for %s in %s", path, out)
		}
		if code, stderr := runExit(t, os.Environ(), "journal", "verify", path); code != 0 {
			t.Fatalf("verify the kept journal: exit %d %s", code, stderr)
		}
	}
}
