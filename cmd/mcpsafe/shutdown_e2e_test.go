package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SIGINT/SIGTERM to a gated server while an approval is pending: the
// approval is withdrawn, approving it afterwards runs nothing, and the
// journal says why (refused, shutting_down). Each path has its control,
// where the same approval given before the signal runs. All through the
// built binary, with real clients.

// running is a server started by a client over stdio.
type running struct {
	cs     *mcp.ClientSession
	cmd    *exec.Cmd
	stderr *lockedBuffer
}

func startStdio(t *testing.T, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions, args ...string) *running {
	t.Helper()
	return startStdioCmd(t, exec.Command(binary, args...), copts, sopts)
}

// startStdioCmd is startStdio of a command built by the caller.
func startStdioCmd(t *testing.T, cmd *exec.Cmd, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *running {
	t.Helper()
	r := &running{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = r.stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, copts).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, sopts)
	if err != nil {
		t.Fatalf("connect: %v; stderr: %s", err, r.stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	r.cs = cs
	return r
}

func (r *running) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// exited waits (bounded) until the server has closed its side, which it
// does when it exits.
func (r *running) exited(t *testing.T, within time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { r.cs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatalf("the server did not exit within %s; stderr:\n%s", within, r.stderr.String())
	}
	waitFor(t, "the server process ends", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
		return err != nil || strings.Contains(string(b), ") Z ") // gone, or a zombie waiting to be reaped
	}, func() string { return "stderr:\n" + r.stderr.String() })
}

func journalSays(t *testing.T, path, want string) {
	t.Helper()
	var d string
	waitFor(t, "the journal says "+want, func() bool { d = decisions(readJournalFile(t, path)); return strings.Contains(d, want) },
		func() string { return "journal: " + d })
}

func noRun(t *testing.T, path string) {
	t.Helper()
	for _, r := range readJournalFile(t, path) {
		if r.Decision == journal.Executed || r.Decision == journal.ClientAccepted || r.Decision == journal.TokenRedeemed || r.Decision == journal.ChannelApproved {
			t.Fatalf("journal records an approval or a run: %s", decisions(readJournalFile(t, path)))
		}
	}
}

func TestSignalWithdrawsChannelRequest(t *testing.T) {
	for _, signal := range []bool{false, true} {
		t.Run(map[bool]string{false: "control: approved before the signal", true: "approved after the signal"}[signal], func(t *testing.T) {
			w := newWorkspace(t)
			a := startApprovalsService(t)
			args := filesServer(w, a)[1:]
			srv := startStdio(t, nil, nil, args...)
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				p := &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": w.path("cache.txt")}}
				p.SetProgressToken("t1") // waits for the human the whole time
				res, _ := srv.cs.CallTool(context.Background(), p)
				done <- res
			}()
			id := a.pendingID()
			if !signal {
				if code, out := a.api("POST", "/api/requests/"+id+"/approve", "alice"); code != 200 {
					t.Fatalf("approve: HTTP %d %v", code, out)
				}
				if res := <-done; res == nil || res.IsError {
					t.Fatalf("the approved call failed: %+v", res)
				}
				if content(t, w.path("cache.txt")) != "<missing>" {
					t.Fatal("the control did not delete the file")
				}
				return
			}
			srv.signal(t, syscall.SIGINT)
			out := a.waitStatus(id, "withdrawn")
			if out["withdrawn"] != approver.WithdrawShuttingDown {
				t.Fatalf("withdrawn request: %v", out)
			}
			if code, out := a.api("POST", "/api/requests/"+id+"/approve", "alice"); code != 409 {
				t.Fatalf("approving after the signal: HTTP %d %v", code, out)
			}
			srv.exited(t, 30*time.Second)
			if content(t, w.path("cache.txt")) != "cache" {
				t.Fatal("the file was deleted after the signal")
			}
			journalSays(t, w.journal, "refused:shutting_down:")
			noRun(t, w.journal)
			if s := srv.stderr.String(); !strings.Contains(s, "mcpsafe files: stopping") || !strings.Contains(s, "delete_file (channel)") {
				t.Fatalf("stderr does not say it stops and what it withdrew:\n%s", s)
			}
		})
	}
}

// A client on protocol 2025-11-25 is asked in-call; the person answers
// "accept" only after the signal.
func TestSignalWithdrawsInCallElicitation(t *testing.T) {
	for _, signal := range []bool{false, true} {
		t.Run(map[bool]string{false: "control: answered before the signal", true: "answered after the signal"}[signal], func(t *testing.T) {
			w := newWorkspace(t)
			asked, answer := make(chan struct{}), make(chan struct{})
			srv := startStdio(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				close(asked)
				<-answer // the person takes a while
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"},
				"files", "--root", w.root, "--journal", w.journal, "--mode", "elicit")
			done := make(chan *mcp.CallToolResult, 1)
			go func() {
				res, _ := srv.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": w.path("cache.txt")}})
				done <- res
			}()
			<-asked
			if !signal {
				close(answer)
				if res := <-done; res == nil || res.IsError {
					t.Fatalf("the approved call failed: %+v", res)
				}
				if content(t, w.path("cache.txt")) != "<missing>" {
					t.Fatal("the control did not delete the file")
				}
				return
			}
			srv.signal(t, syscall.SIGTERM)
			waitFor(t, "the stop line", func() bool { return strings.Contains(srv.stderr.String(), "stopping") })
			close(answer)
			srv.exited(t, 30*time.Second)
			if res := <-done; res != nil && !res.IsError {
				t.Fatalf("the call succeeded after the signal: %+v", res)
			}
			if content(t, w.path("cache.txt")) != "cache" {
				t.Fatal("the file was deleted after the signal")
			}
			journalSays(t, w.journal, "refused:shutting_down:")
			noRun(t, w.journal)
			if s := srv.stderr.String(); !strings.Contains(s, "delete_file (elicitation)") {
				t.Fatalf("stderr does not say what was withdrawn:\n%s", s)
			}
		})
	}
}

// An approval that leaves the server (an MRTR request state, a one-time
// token) is spent when the server stops: presented after the signal, to
// the server started again on the same key and ledger, it is refused.
func TestSignalSpendsHandedOutApprovals(t *testing.T) {
	for _, path := range []string{"mrtr", "token"} {
		for _, signal := range []bool{false, true} {
			name := path + map[bool]string{false: "/control: presented before the signal", true: "/presented after the signal"}[signal]
			t.Run(name, func(t *testing.T) {
				w := newWorkspace(t)
				key := filepath.Join(w.base, "key")
				if out, err := exec.Command(binary, "keygen", key).CombinedOutput(); err != nil {
					t.Fatalf("keygen: %v %s", err, out)
				}
				args := []string{"files", "--root", w.root, "--journal", w.journal, "--key-file", key, "--ledger", "file:" + filepath.Join(w.base, "ledger.db")}
				var copts *mcp.ClientOptions
				if path == "mrtr" {
					args = append(args, "--mode", "elicit")
					copts = &mcp.ClientOptions{
						ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
							return nil, fmt.Errorf("not asked in-call")
						},
						MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}, // the test answers itself
					}
				} else {
					args = append(args, "--mode", "token", "--allow-token-for", "delete_file")
				}
				srv := startStdio(t, copts, nil, args...)
				p := &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": w.path("cache.txt")}}
				first := call(t, srv.cs, "delete_file", p.Arguments)
				if path == "mrtr" {
					if first.RequestState == "" {
						t.Fatalf("no request state: %+v", first)
					}
					p.RequestState = first.RequestState
					p.InputResponses = mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
				} else {
					p.Arguments = map[string]any{"path": w.path("cache.txt"), "approval_token": tokenOf(t, first)}
				}
				if signal {
					srv.signal(t, syscall.SIGINT)
					srv.exited(t, 30*time.Second)
					journalSays(t, w.journal, "refused:shutting_down:")
					want := "delete_file (elicitation)"
					if path == "token" {
						want = "delete_file (token)"
					}
					if s := srv.stderr.String(); !strings.Contains(s, want) {
						t.Fatalf("stderr does not say what was withdrawn:\n%s", s)
					}
					srv = startStdio(t, copts, nil, args...)
				}
				res, err := srv.cs.CallTool(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				if !signal {
					if res.IsError {
						t.Fatalf("the control failed: %+v", sc(t, res))
					}
					if content(t, w.path("cache.txt")) != "<missing>" {
						t.Fatal("the control did not delete the file")
					}
					return
				}
				if r := reasonOf(t, res); r != mcpsafe.ReasonTokenSpent {
					t.Fatalf("presented after the signal: %v", sc(t, res))
				}
				if content(t, w.path("cache.txt")) != "cache" {
					t.Fatal("the file was deleted after the signal")
				}
				noRun(t, w.journal)
			})
		}
	}
}

// stuckUpstream is an HTTP MCP server whose gated tool "stuck" runs until
// the test ends (or its caller cancels), and reports when it started.
func stuckUpstream(t *testing.T) (url string, started <-chan struct{}, cancelled <-chan struct{}) {
	t.Helper()
	st, cn := make(chan struct{}, 1), make(chan struct{}, 1)
	end := make(chan struct{})
	up := mcp.NewServer(&mcp.Implementation{Name: "stuck-upstream"}, nil)
	up.AddTool(&mcp.Tool{Name: "stuck", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			st <- struct{}{}
			select {
			case <-ctx.Done():
				cn <- struct{}{}
				return nil, ctx.Err()
			case <-end:
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			}
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(func() { close(end); hs.Close() })
	return hs.URL, st, cn
}

var accepting = &mcp.ClientOptions{ElicitationHandler: acceptAll}

// A call already running when the signal comes gets the grace; when the
// grace ends it is cancelled and journaled ambiguous, and the proxy exits.
func TestSignalGraceCutsRunningCall(t *testing.T) {
	url, started, cancelled := stuckUpstream(t)
	j := filepath.Join(t.TempDir(), "j.jsonl")
	srv := startStdio(t, accepting, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"},
		"proxy", "--journal", j, "--shutdown-grace", "1s", "--upstream-url", url)
	go srv.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "stuck", Arguments: map[string]any{}})
	<-started
	srv.signal(t, syscall.SIGINT)
	srv.exited(t, 30*time.Second)
	select {
	case <-cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("the upstream call was not cancelled")
	}
	journalSays(t, j, "ambiguous:the server shut down")
	if s := srv.stderr.String(); !strings.Contains(s, "1 call(s) running") || !strings.Contains(s, "grace (1s) ended") {
		t.Fatalf("stderr:\n%s", s)
	}
}

// A second signal ends the process at once, long before the grace.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	url, started, _ := stuckUpstream(t)
	j := filepath.Join(t.TempDir(), "j.jsonl")
	srv := startStdio(t, accepting, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"},
		"proxy", "--journal", j, "--shutdown-grace", "1h", "--upstream-url", url)
	go srv.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "stuck", Arguments: map[string]any{}})
	<-started
	srv.signal(t, syscall.SIGTERM)
	waitFor(t, "the stop line", func() bool { return strings.Contains(srv.stderr.String(), "1 call(s) running") })
	srv.signal(t, syscall.SIGTERM)
	srv.exited(t, 30*time.Second) // the grace is an hour
	if s := srv.stderr.String(); !strings.Contains(s, "second signal: exiting now") {
		t.Fatalf("stderr:\n%s", s)
	}
}

// The gateway stops on a signal too, with its line.
func TestGatewayStopsOnSignal(t *testing.T) {
	url, _, _ := stuckUpstream(t)
	base := t.TempDir()
	config := filepath.Join(base, "gateway.yaml")
	must(t, os.WriteFile(config, []byte(fmt.Sprintf("servers:\n  web:\n    url: %s\n", url)), 0o644))
	srv := startStdio(t, accepting, nil, "proxy", "--config", config, "--journal", filepath.Join(base, "j.jsonl"))
	if tools := listTools(t, srv.cs); !tools["web__stuck"] {
		t.Fatalf("tools: %v", tools)
	}
	srv.signal(t, syscall.SIGINT)
	srv.exited(t, 30*time.Second)
	if s := srv.stderr.String(); !strings.Contains(s, "mcpsafe proxy: stopping") {
		t.Fatalf("stderr:\n%s", s)
	}
}

// approvals serve stops on a signal: the request a gate waits on is
// withdrawn (kept so in its file store), the gate refuses the call, and
// approving it after a restart is refused.
func TestApprovalsServeStopsOnSignal(t *testing.T) {
	w := newWorkspace(t)
	sf, af := approvalsFiles(t)
	store := "file:" + filepath.Join(t.TempDir(), "approvals.db")
	a, cmd := startApprovalsAt(t, sf, af, store, "127.0.0.1:0")
	srv := startStdio(t, nil, nil, filesServer(w, a)[1:]...)
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": w.path("cache.txt")}}
		p.SetProgressToken("t1")
		res, _ := srv.cs.CallTool(context.Background(), p)
		done <- res
	}()
	id := a.pendingID()
	stderr := cmd.Stderr.(*lockedBuffer)
	must(t, cmd.Process.Signal(syscall.SIGINT))
	exit := make(chan error, 1)
	go func() { exit <- cmd.Wait() }()
	select {
	case err := <-exit:
		if err != nil {
			t.Fatalf("approvals serve exited with %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("approvals serve did not exit")
	}
	if s := stderr.String(); !strings.Contains(s, "withdrew 1 request(s) a gate was waiting on") {
		t.Fatalf("stderr:\n%s", s)
	}
	if res := <-done; res == nil || !res.IsError {
		t.Fatalf("the gate's call was not refused: %+v", res)
	}
	// Restarted on the same store: the request is withdrawn, and cannot
	// be approved.
	b, _ := startApprovalsAt(t, sf, af, store, "127.0.0.1:0")
	out := b.waitStatus(id, "withdrawn")
	if out["withdrawn"] != "service_stopped" {
		t.Fatalf("after restart: %v", out)
	}
	if code, out := b.api("POST", "/api/requests/"+id+"/approve", "alice"); code != 409 {
		t.Fatalf("approving after the stop: HTTP %d %v", code, out)
	}
	if content(t, w.path("cache.txt")) != "cache" {
		t.Fatal("the file was deleted")
	}
	noRun(t, w.journal)
}

// startApprovalsAt runs `mcpsafe approvals serve` on store; the test
// signals and waits for the returned command itself (stderr: *lockedBuffer).
func startApprovalsAt(t *testing.T, secretFile, approversFile, store, listen string) (*approvalsService, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(binary, "approvals", "serve", "--listen", listen, "--secret-file", secretFile, "--approvers-file", approversFile, "--store", store)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	cmd.Stderr = &lockedBuffer{}
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner from approvals serve: %v; stderr: %s", err, cmd.Stderr.(*lockedBuffer).String())
	}
	go io.Copy(io.Discard, stdout)
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	if base == "" {
		t.Fatalf("banner %q", line)
	}
	return &approvalsService{t: t, base: base, secretFile: secretFile}, cmd
}
