package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The user's steps from docs/USAGE.md (channel approvals), with real parts
// only: the built binary runs `mcpsafe approvals serve` and `mcpsafe files
// --mode channel`, the TypeScript SDK client (node) calls delete_file, and
// an approver decides through the service's JSON API.

func tsSDKDir(t *testing.T) string {
	t.Helper()
	sdk, err := filepath.Abs("../../.cache/npm/node_modules/@modelcontextprotocol/sdk")
	if err == nil {
		_, err = os.Stat(filepath.Join(sdk, "package.json"))
	}
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		msg := "!!! node or @modelcontextprotocol/sdk is not installed (run scripts/npm-deps): " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return sdk
}

// approvalsService is a running `mcpsafe approvals serve`.
type approvalsService struct {
	t          *testing.T
	base       string
	secretFile string
}

func startApprovalsService(t *testing.T) *approvalsService {
	t.Helper()
	sf, af := approvalsFiles(t)
	cmd := exec.Command(binary, "approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af,
		"--store", "file:"+filepath.Join(t.TempDir(), "approvals.db"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner from approvals serve: %v", err)
	}
	go io.Copy(io.Discard, stdout)
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	if base == "" {
		t.Fatalf("banner %q", line)
	}
	return &approvalsService{t: t, base: base, secretFile: sf}
}

var approverTokens = map[string]string{"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}

func (a *approvalsService) api(method, path, who string) (int, map[string]any) {
	a.t.Helper()
	req, _ := http.NewRequest(method, a.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+approverTokens[who])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// pendingID waits until exactly one request is pending and returns its id.
func (a *approvalsService) pendingID() string {
	a.t.Helper()
	var id string
	waitFor(a.t, "a request pending at the approval service", func() bool {
		_, out := a.api("GET", "/api/requests", "alice")
		if reqs, _ := out["requests"].([]any); len(reqs) == 1 {
			id = reqs[0].(map[string]any)["id"].(string)
		}
		return id != ""
	})
	return id
}

func (a *approvalsService) waitStatus(id, want string) map[string]any {
	a.t.Helper()
	var out map[string]any
	waitFor(a.t, "request "+id+" "+want, func() bool { _, out = a.api("GET", "/api/requests/"+id, "alice"); return out["status"] == want },
		func() string { return fmt.Sprintf("it is %v", out) })
	return out
}

// nodeClient is the TypeScript client process and the steps it printed.
type nodeClient struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	steps chan map[string]any
	done  chan struct{}
}

func startNodeClient(t *testing.T, scenario string, timeout time.Duration, target, other string, server []string) *nodeClient {
	t.Helper()
	return startNodeScript(t, "testdata/ts-channel.mjs", server, "SCENARIO="+scenario,
		"TARGET="+target, "OTHER="+other, "TIMEOUT_MS="+itoa(timeout.Milliseconds()))
}

// startNodeScript runs a TypeScript SDK client script against server (its
// command line), with env added, and collects the JSON steps it prints.
func startNodeScript(t *testing.T, script string, server []string, env ...string) *nodeClient {
	t.Helper()
	srv, _ := json.Marshal(server)
	cmd := exec.Command("node", script)
	cmd.Env = append(append(os.Environ(), "SDK_DIR="+tsSDKDir(t), "SERVER="+string(srv)), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n := &nodeClient{t: t, cmd: cmd, stdin: stdin, steps: make(chan map[string]any, 16), done: make(chan struct{})}
	go func() {
		defer close(n.done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				n.steps <- m
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-n.done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
		cmd.Wait()
	})
	return n
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

// step waits for the client to print the named step.
func (n *nodeClient) step(name string) map[string]any {
	n.t.Helper()
	for {
		var m map[string]any
		select {
		case m = <-n.steps:
		case <-n.done:
			// Every line was queued before done closed: the last ones
			// may still be waiting (select picks among ready cases at
			// random).
			select {
			case m = <-n.steps:
			default:
				n.t.Fatalf("the TypeScript client exited before step %q", name)
			}
		case <-time.After(60 * time.Second):
			n.t.Fatalf("no step %q from the TypeScript client", name)
		}
		if m["step"] == "error" {
			n.t.Fatalf("the TypeScript client failed: %v", m["message"])
		}
		if m["step"] == name {
			return m
		}
	}
}

// proceed tells the client the test has acted.
func (n *nodeClient) proceed() { io.WriteString(n.stdin, "go\n") }

func resultOf(m map[string]any) (isError bool, sc map[string]any) {
	r, _ := m["result"].(map[string]any)
	isError, _ = r["isError"].(bool)
	sc, _ = r["structuredContent"].(map[string]any)
	return
}

func readJournalFile(t *testing.T, path string) []journal.Record {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var recs []journal.Record
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if line == "" {
			continue
		}
		var r journal.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

func decisions(recs []journal.Record) string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Decision+":"+r.Reason+":"+r.By)
	}
	return strings.Join(out, " ")
}

// filesServer is the `mcpsafe files --mode channel` command line for a
// workspace wired to the approval service.
func filesServer(w *workspace, a *approvalsService, extra ...string) []string {
	return append([]string{binary, "files", "--root", w.root, "--journal", w.journal, "--mode", "channel",
		"--approver-url", a.base + "/webhook", "--approver-secret-file", a.secretFile}, extra...)
}

// A client with a short request timeout that resets on progress waits for
// the human: the gate sends progress, the approver approves after more than
// the client's timeout, and the call runs.
func TestTSChannelProgressOutlastsClientTimeout(t *testing.T) {
	w := newWorkspace(t)
	a := startApprovalsService(t)
	const clientTimeout = 3 * time.Second
	n := startNodeClient(t, "progress", clientTimeout, w.path("cache.txt"), "", filesServer(w, a, "--progress-interval", "300ms"))
	id := a.pendingID()
	time.Sleep(2 * clientTimeout) // the human takes longer than the client's timeout
	if code, out := a.api("POST", "/api/requests/"+id+"/approve", "alice"); code != 200 {
		t.Fatalf("approve: HTTP %d %v", code, out)
	}
	m := n.step("result")
	if isErr, sc := resultOf(m); isErr {
		t.Fatalf("the approved call failed: %v", sc)
	}
	if p, _ := m["progress"].(float64); p < 2 {
		t.Fatalf("the client saw %v progress notifications", m["progress"])
	}
	t.Logf("client timeout %s, approved after %s, %v progress notifications", clientTimeout, 2*clientTimeout, m["progress"])
	if content(t, w.path("cache.txt")) != "<missing>" {
		t.Fatal("approved, but cache.txt is still there")
	}
	recs := readJournalFile(t, w.journal)
	if d := decisions(recs); d != "channel-approved::alice executed::" {
		t.Fatalf("journal: %s", d)
	}
}

// A client that gives up (its timeout, no reset on progress) or dies while
// the human decides: the request is withdrawn and marked caller gone at the
// service, approving it afterwards is refused and runs nothing, and the
// journal records the refusal.
func TestTSChannelCallerGone(t *testing.T) {
	for _, scenario := range []string{"cancel", "disconnect"} {
		t.Run(scenario, func(t *testing.T) {
			w := newWorkspace(t)
			a := startApprovalsService(t)
			timeout := 1500 * time.Millisecond
			if scenario == "disconnect" {
				timeout = 10 * time.Minute
			}
			n := startNodeClient(t, scenario, timeout, w.path("cache.txt"), "", filesServer(w, a, "--progress-interval", "300ms"))
			n.step("calling")
			id := a.pendingID()
			if scenario == "cancel" {
				if m := n.step("gave_up"); !strings.Contains(m["message"].(string), "timed out") {
					t.Fatalf("the client gave up with %v", m["message"])
				}
			} else {
				n.cmd.Process.Kill() // its server sees the connection close
			}
			out := a.waitStatus(id, "withdrawn")
			if out["withdrawn"] != approver.WithdrawCallerGone {
				t.Fatalf("withdrawn request: %v", out)
			}
			if code, out := a.api("POST", "/api/requests/"+id+"/approve", "alice"); code != 409 {
				t.Fatalf("approving a withdrawn request: HTTP %d %v", code, out)
			}
			var recs []journal.Record
			waitFor(t, "the refusal journaled", func() bool { recs = readJournalFile(t, w.journal); return len(recs) != 0 })
			if d := decisions(recs); d != "refused:caller_gone:" {
				t.Fatalf("journal: %s", d)
			}
			if content(t, w.path("cache.txt")) != "cache" {
				t.Fatal("a withdrawn request deleted the file")
			}
			if scenario == "cancel" {
				n.proceed()
			}
		})
	}
}

// A client that cannot wait (no progress token) gets approval_pending and
// a handle; the handle swapped to other arguments is refused, the approved
// handle runs the call once, and its replay is refused.
func TestTSChannelAsyncHandle(t *testing.T) {
	w := newWorkspace(t)
	a := startApprovalsService(t)
	n := startNodeClient(t, "async", 30*time.Second, w.path("cache.txt"), w.path("thesis.txt"), filesServer(w, a, "--channel-wait", "1s"))
	if isErr, sc := resultOf(n.step("first")); isErr || sc["status"] != "approval_pending" || sc["approval_token"] == "" {
		t.Fatalf("first call: error=%v %v", isErr, sc)
	}
	if isErr, sc := resultOf(n.step("swapped")); !isErr || sc["reason"] != mcpsafe.ReasonArgumentsChanged {
		t.Fatalf("handle with other arguments: error=%v %v", isErr, sc)
	}
	id := a.pendingID()
	if code, out := a.api("POST", "/api/requests/"+id+"/approve", "alice"); code != 200 {
		t.Fatalf("approve: HTTP %d %v", code, out)
	}
	n.proceed()
	if isErr, sc := resultOf(n.step("second")); isErr {
		t.Fatalf("the approved handle did not run the call: %v", sc)
	}
	if isErr, sc := resultOf(n.step("replay")); !isErr || sc["status"] != "refused" {
		t.Fatalf("replayed handle: error=%v %v", isErr, sc)
	}
	if content(t, w.path("cache.txt")) != "<missing>" || content(t, w.path("thesis.txt")) != "thesis" {
		t.Fatal("wrong files deleted")
	}
	recs := readJournalFile(t, w.journal)
	var runs int
	for _, r := range recs {
		if r.Decision == journal.Executed {
			runs++
		}
	}
	if runs != 1 || !strings.Contains(decisions(recs), "channel-approved::alice executed::") {
		t.Fatalf("journal: %s", decisions(recs))
	}
}

// The same over `mcpsafe files --http`: progress reaches a client on the
// request's stream, and a client that gives up has its request withdrawn:
// in the default stateless mode when the client speaks protocol 2026-07-28
// (dropping the HTTP request cancels the call), and in --http-stateful
// mode for an older client too (its cancel notification reaches the call).
func TestHTTPChannelCallerGone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		protocol string
		extra    []string
	}{
		{"stateless, protocol 2026-07-28", "", nil},
		{"stateful, protocol 2025-11-25", "2025-11-25", []string{"--http-stateful"}},
		// The default gives an older client a session as well.
		{"default, protocol 2025-11-25", "2025-11-25", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t)
			a := startApprovalsService(t)
			r := startReplica(t, append([]string{"--root", w.root, "--journal", w.journal, "--mode", "channel",
				"--approver-url", a.base + "/webhook", "--approver-secret-file", a.secretFile, "--progress-interval", "100ms"}, tc.extra...)...)
			var progress atomic.Int32
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client", Version: "1"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress.Add(1) },
			}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: r.url, MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: tc.protocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": w.path("cache.txt")}}
			p.SetProgressToken("http-1")
			done := make(chan error, 1)
			go func() { _, err := cs.CallTool(ctx, p); done <- err }()
			id := a.pendingID()
			waitFor(t, "progress notifications over HTTP", func() bool { return progress.Load() >= 2 })
			cancel()
			<-done
			if out := a.waitStatus(id, "withdrawn"); out["withdrawn"] != approver.WithdrawCallerGone {
				t.Fatalf("withdrawn request: %v", out)
			}
			if code, _ := a.api("POST", "/api/requests/"+id+"/approve", "alice"); code != 409 {
				t.Fatalf("approving a withdrawn request: HTTP %d", code)
			}
			var recs []journal.Record
			waitFor(t, "the refusal journaled", func() bool { recs = readJournalFile(t, w.journal); return len(recs) != 0 })
			if d := decisions(recs); d != "refused:caller_gone:" || content(t, w.path("cache.txt")) != "cache" {
				t.Fatalf("journal %s, cache.txt %q", d, content(t, w.path("cache.txt")))
			}
		})
	}
}
