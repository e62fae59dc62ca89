package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// These tests spawn the real mcpsafe binary and talk to it over stdio with
// the real SDK client. The file contents on disk are the assertions.

var binary string

func TestMain(m *testing.M) {
	if os.Getenv(foldingUpstreamEnv) == "1" { // an upstream some test runs behind the binary
		os.Exit(runFoldingUpstream())
	}
	if os.Getenv(statefulUpstreamEnv) == "1" {
		os.Exit(runStatefulUpstream())
	}
	dir, err := os.MkdirTemp("", "mcpsafe-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "mcpsafe")
	// A test that reaches a default journal path must not write into the
	// home of whoever runs the tests.
	os.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		panic("building mcpsafe: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// workspace is a temp dir with a root ("ws"), a sibling whose name starts
// with the root's ("ws-evil"), an outside dir and a state dir for the journal.
type workspace struct {
	t                     *testing.T
	base, root, out, evil string
	journal               string
}

func newWorkspace(t *testing.T) *workspace {
	t.Helper()
	base := t.TempDir()
	w := &workspace{t: t, base: base, root: filepath.Join(base, "ws"), out: filepath.Join(base, "outside"),
		evil: filepath.Join(base, "ws-evil"), journal: filepath.Join(base, "state", "journal.jsonl")}
	for _, d := range []string{w.root, w.out, w.evil, filepath.Join(w.root, "d"), filepath.Join(w.root, "other")} {
		must(t, os.MkdirAll(d, 0o755))
	}
	w.write("cache.txt", "cache")
	w.write("thesis.txt", "thesis")
	w.write("d/inner.txt", "inner")
	w.write("other/inner.txt", "decoy")
	must(t, os.WriteFile(filepath.Join(w.out, "secret.txt"), []byte("outside secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(w.evil, "x.txt"), []byte("evil sibling"), 0o644))
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (w *workspace) path(rel string) string { return filepath.Join(w.root, rel) }

func (w *workspace) write(rel, body string) {
	w.t.Helper()
	must(w.t, os.WriteFile(w.path(rel), []byte(body), 0o644))
}

// content returns a file's content, or "<missing>".
func content(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return "<missing>"
	}
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// serve starts `mcpsafe files` on the workspace and connects a client.
func (w *workspace) serve(copts *mcp.ClientOptions, extra ...string) *mcp.ClientSession {
	w.t.Helper()
	args := append([]string{"files", "--root", w.root, "--journal", w.journal}, extra...)
	cmd := exec.Command(binary, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, copts).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		w.t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
	}
	w.t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", tool, err)
	}
	return res
}

func sc(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &m)
	return m
}

func reasonOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	m := sc(t, res)
	if !res.IsError || m["status"] != "refused" {
		return ""
	}
	r, _ := m["reason"].(string)
	return r
}

func tokenOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	m := sc(t, res)
	tok, _ := m["approval_token"].(string)
	if res.IsError || m["status"] != "approval_required" || tok == "" {
		t.Fatalf("want approval_required with a token, got %v", res.Content)
	}
	return tok
}

func acceptAll(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
}

// Every refusal before a prompt is shown, each with a control.
func TestFilesRefusalsBeforePrompt(t *testing.T) {
	w := newWorkspace(t)
	asked := 0
	cs := w.serve(&mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	must(t, os.Symlink(filepath.Join(w.out, "secret.txt"), w.path("link-out")))
	must(t, os.Symlink(w.path("cache.txt"), w.path("link-in")))
	must(t, os.Symlink(w.path("d"), w.path("dirlink")))
	mustFIFOAndNullDevice(t, w.path("fifo"), w.path("null"))
	ln, err := net.Listen("unix", w.path("sock"))
	must(t, err)
	defer ln.Close()

	cases := []struct{ path, reason string }{
		{"../outside/secret.txt", "outside_roots"},
		{filepath.Join(w.out, "secret.txt"), "outside_roots"},
		{filepath.Join(w.evil, "x.txt"), "outside_roots"},
		{"/proc/self/root" + w.path("cache.txt"), "outside_roots"},
		{"link-out", "outside_roots"},
		{"link-in", "not_a_regular_file"},
		{"dirlink/inner.txt", "not_a_regular_file"},
		{"d", "not_a_regular_file"},
		{w.root, "not_a_regular_file"},
		{"fifo", "not_a_regular_file"},
		{"sock", "not_a_regular_file"},
		{"null", "not_a_regular_file"},
		{"missing.txt", "not_found"},
		{"a\x00b", "invalid_path"},
	}
	for _, tc := range cases {
		res := call(t, cs, "delete_file", map[string]any{"path": tc.path})
		if got := reasonOf(t, res); got != tc.reason {
			t.Errorf("delete_file %q: reason %q, want %q (%v)", tc.path, got, tc.reason, res.Content)
		}
	}
	// Invalid UTF-8 cannot be sent as a JSON string by a conforming client;
	// send the raw bytes anyway: a clean refusal, and the server lives on.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: json.RawMessage("{\"path\":\"bad\xff.txt\"}")})
	if err == nil && !res.IsError {
		t.Errorf("invalid UTF-8 path was not refused")
	}
	if asked != 0 {
		t.Fatalf("the user was asked %d times about refused paths", asked)
	}
	if content(t, filepath.Join(w.out, "secret.txt")) != "outside secret" || content(t, filepath.Join(w.evil, "x.txt")) != "evil sibling" ||
		content(t, w.path("cache.txt")) != "cache" || content(t, w.path("d/inner.txt")) != "inner" {
		t.Fatal("a refused call touched a file")
	}
	// Control: a regular file inside the root reaches the prompt (and the
	// user declines, so it stays).
	if got := reasonOf(t, call(t, cs, "delete_file", map[string]any{"path": "cache.txt"})); got != "declined" || asked != 1 {
		t.Fatalf("control: reason %q after %d prompts", got, asked)
	}
	if content(t, w.path("cache.txt")) != "cache" {
		t.Fatal("declined, but cache.txt changed")
	}
	// The read-only tools work without approval and refuse outside paths.
	if res := call(t, cs, "list_directory", map[string]any{"path": "."}); res.IsError {
		t.Fatalf("list_directory: %v", res.Content)
	}
	if got := reasonOf(t, call(t, cs, "list_directory", map[string]any{"path": "../outside"})); got != "outside_roots" {
		t.Fatalf("list_directory outside: %q", got)
	}
	if res := call(t, cs, "file_info", map[string]any{"path": "cache.txt"}); res.IsError || sc(t, res)["size"] != float64(5) {
		t.Fatalf("file_info: %v", res.Content)
	}
}

// Elicitation over stdio: accept deletes exactly the approved file; decline keeps it.
func TestFilesElicitation(t *testing.T) {
	w := newWorkspace(t)
	var prompt string
	answer := "accept"
	cs := w.serve(&mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		prompt = r.Params.Message
		if answer == "accept" {
			return acceptAll(ctx, r)
		}
		return &mcp.ElicitResult{Action: answer}, nil
	}})
	if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}); res.IsError {
		t.Fatalf("accepted delete failed: %v", res.Content)
	}
	if content(t, w.path("cache.txt")) != "<missing>" || content(t, w.path("thesis.txt")) != "thesis" {
		t.Fatal("accept did not delete exactly cache.txt")
	}
	if !strings.Contains(prompt, `"cache.txt"`) || !strings.Contains(prompt, "irreversible") || !strings.Contains(prompt, "Content fingerprint: ") {
		t.Fatalf("prompt lacks the plan: %q", prompt)
	}
	answer = "decline"
	if got := reasonOf(t, call(t, cs, "delete_file", map[string]any{"path": "thesis.txt"})); got != "declined" {
		t.Fatalf("decline: %q", got)
	}
	if content(t, w.path("thesis.txt")) != "thesis" {
		t.Fatal("declined, but thesis.txt is gone")
	}
	// A hard-linked file says so in the plan.
	must(t, os.Link(w.path("thesis.txt"), w.path("thesis-link.txt")))
	call(t, cs, "delete_file", map[string]any{"path": "thesis.txt"})
	if !strings.Contains(prompt, "2 hard links") {
		t.Fatalf("plan does not mention hard links: %q", prompt)
	}
}

// Token flow over stdio, and every way the file can change between the
// approval and the call. Each case has a control where it runs.
func TestFilesTargetChanged(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(w *workspace)
		target string // the file whose approval is used
	}{
		{"unchanged (control)", func(w *workspace) {}, "cache.txt"},
		{"content changed", func(w *workspace) { w.write("cache.txt", "CACHE") }, "cache.txt"},
		{"replaced by another regular file", func(w *workspace) {
			must(w.t, os.Rename(w.path("thesis.txt"), w.path("cache.txt")))
		}, "cache.txt"},
		{"became a symlink to outside", func(w *workspace) {
			must(w.t, os.Remove(w.path("cache.txt")))
			must(w.t, os.Symlink(filepath.Join(w.out, "secret.txt"), w.path("cache.txt")))
		}, "cache.txt"},
		{"became a directory", func(w *workspace) {
			must(w.t, os.Remove(w.path("cache.txt")))
			must(w.t, os.Mkdir(w.path("cache.txt"), 0o755))
		}, "cache.txt"},
		{"parent swapped for a symlink", func(w *workspace) {
			must(w.t, os.Rename(w.path("d"), w.path("d_old")))
			must(w.t, os.Symlink(w.path("other"), w.path("d")))
		}, "d/inner.txt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t)
			cs := w.serve(nil, "--allow-token-for", "delete_file")
			tok := tokenOf(t, call(t, cs, "delete_file", map[string]any{"path": tc.target}))
			tc.mutate(w)
			res := call(t, cs, "delete_file", map[string]any{"path": tc.target, "approval_token": tok})
			if tc.name == "unchanged (control)" {
				if res.IsError || content(t, w.path("cache.txt")) != "<missing>" {
					t.Fatalf("control did not delete: %v", res.Content)
				}
				return
			}
			if got := reasonOf(t, res); got != "target_changed" {
				t.Fatalf("reason %q, want target_changed (%v)", got, res.Content)
			}
			if content(t, filepath.Join(w.out, "secret.txt")) != "outside secret" {
				t.Fatal("the outside file was touched")
			}
			switch tc.name {
			case "content changed":
				if content(t, w.path("cache.txt")) != "CACHE" {
					t.Fatal("changed file was deleted")
				}
			case "replaced by another regular file":
				if content(t, w.path("cache.txt")) != "thesis" {
					t.Fatal("the thesis (now named cache.txt) was deleted")
				}
			case "parent swapped for a symlink":
				if content(t, w.path("other/inner.txt")) != "decoy" || content(t, w.path("d_old/inner.txt")) != "inner" {
					t.Fatal("a file behind the swapped parent was deleted")
				}
			}
		})
	}
}

// move_file never overwrites; a reversible tool gets a token without opt-in.
func TestFilesMove(t *testing.T) {
	w := newWorkspace(t)
	cs := w.serve(nil)
	if got := reasonOf(t, call(t, cs, "move_file", map[string]any{"source": "cache.txt", "destination": "thesis.txt"})); got != "destination_exists" {
		t.Fatalf("overwrite: %q", got)
	}
	if got := reasonOf(t, call(t, cs, "delete_file", map[string]any{"path": "cache.txt"})); got != "elicitation_unsupported" {
		t.Fatalf("irreversible without opt-in: %q", got)
	}
	tok := tokenOf(t, call(t, cs, "move_file", map[string]any{"source": "cache.txt", "destination": "moved.txt"}))
	w.write("moved.txt", "squatter") // the destination appears after the approval
	if got := reasonOf(t, call(t, cs, "move_file", map[string]any{"source": "cache.txt", "destination": "moved.txt", "approval_token": tok})); got == "" {
		t.Fatal("moved over a destination that appeared after approval")
	}
	if content(t, w.path("moved.txt")) != "squatter" || content(t, w.path("cache.txt")) != "cache" {
		t.Fatal("files changed by a refused move")
	}
	must(t, os.Remove(w.path("moved.txt")))
	tok = tokenOf(t, call(t, cs, "move_file", map[string]any{"source": "cache.txt", "destination": "moved.txt"}))
	if res := call(t, cs, "move_file", map[string]any{"source": "cache.txt", "destination": "moved.txt", "approval_token": tok}); res.IsError {
		t.Fatalf("control move: %v", res.Content)
	}
	if content(t, w.path("moved.txt")) != "cache" || content(t, w.path("cache.txt")) != "<missing>" {
		t.Fatal("control move did not move")
	}
}

// Startup refuses anything doubtful, with a message.
func TestFilesStartupErrors(t *testing.T) {
	w := newWorkspace(t)
	link := filepath.Join(w.base, "rootlink")
	must(t, os.Symlink(w.root, link))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"files"}, "no --root"},
		{[]string{"files", "--root", link}, "symbolic link"},
		{[]string{"files", "--root", filepath.Join(w.base, "nope")}, ""},
		{[]string{"files", "--root", w.path("cache.txt")}, "director"},
		{[]string{"files", "--root", w.root, "--bogus"}, "flag provided but not defined"},
		{[]string{"files", "--root", w.root, "--journal", w.journal, "--allow-token-for", "delete_everything"}, "delete_everything"},
		{[]string{"files", "--root", w.root, "--journal", w.journal, "--allow-token-for", "delete_*"}, "exact"},
		{[]string{"files", "--root", w.root, "--journal", w.path("journal.jsonl")}, "inside a root"},
		{[]string{"files", "--root", w.root, "--journal", w.journal, "--ledger", "file:" + filepath.Join(w.base, "l.db")}, "key-file"},
		{[]string{"files", "--root", w.root, "--journal", w.journal, "--mode", "yolo"}, "mode"},
		{[]string{"files", "--root", w.root, "--journal", w.journal, "--grants", "list_directory"}, "only delete_file and move_file"},
		{[]string{"files", "--root", w.root, "--journal", w.journal, "--grant-max-uses", "5"}, "no tool offers grants"},
		{[]string{"files", "--root", w.root, "--journal", w.journal, "--grants", "move_file", "--grant-max-uses", "1"}, "--grant-max-uses 1"},
	}
	for _, tc := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, binary, tc.args...)
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil {
			t.Errorf("%v: started; want a startup error", tc.args)
			continue
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: output %q lacks %q", tc.args, out, tc.want)
		}
	}
}

// Over stdio with a legacy (2025-11-25) client the gate asks in-call, and
// with the MRTR client through request state; both answer the same way.
// Token replay and an argument swap are refused over stdio too.
func TestFilesProtocolsOverStdio(t *testing.T) {
	for _, proto := range []string{"", "2025-11-25"} {
		t.Run("protocol "+proto, func(t *testing.T) {
			w := newWorkspace(t)
			answer := "cancel"
			args := []string{"files", "--root", w.root, "--journal", w.journal}
			cmd := exec.Command(binary, args...)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if answer == "accept" {
						return acceptAll(ctx, r)
					}
					return &mcp.ElicitResult{Action: answer}, nil
				},
			}).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
			must(t, err)
			defer cs.Close()
			want := proto
			if want == "" {
				want = "2026-07-28" // MRTR
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Fatalf("negotiated %s, want %s", got, want)
			}
			if got := reasonOf(t, call(t, cs, "delete_file", map[string]any{"path": "cache.txt"})); got != "cancelled" {
				t.Fatalf("cancel: %q", got)
			}
			answer = "accept"
			if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}); res.IsError {
				t.Fatalf("accept: %v", res.Content)
			}
			if content(t, w.path("cache.txt")) != "<missing>" || content(t, w.path("thesis.txt")) != "thesis" {
				t.Fatal("accept did not delete exactly cache.txt")
			}
		})
	}
	t.Run("token replay and swap", func(t *testing.T) {
		w := newWorkspace(t)
		cs := w.serve(nil, "--allow-token-for", "delete_file")
		tok := tokenOf(t, call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}))
		if got := reasonOf(t, call(t, cs, "delete_file", map[string]any{"path": "thesis.txt", "approval_token": tok})); got != "arguments_changed" {
			t.Fatalf("swap: %q", got)
		}
		if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt", "approval_token": tok}); res.IsError {
			t.Fatalf("control: %v", res.Content)
		}
		w.write("cache.txt", "cache")
		if got := reasonOf(t, call(t, cs, "delete_file", map[string]any{"path": "cache.txt", "approval_token": tok})); got != "token_spent" {
			t.Fatalf("replay: %q", got)
		}
		if content(t, w.path("thesis.txt")) != "thesis" || content(t, w.path("cache.txt")) != "cache" {
			t.Fatal("a refused call touched a file")
		}
	})
}

// TestFilesStandingGrantOverStdio: `mcpsafe files --grants delete_file`
// over stdio. The person approves one delete choosing "files directly in
// d/, 3 uses"; the next delete in d/ runs without asking, a delete
// elsewhere is asked (and declined), and the journal records the grant and
// its use.
func TestFilesStandingGrantOverStdio(t *testing.T) {
	w := newWorkspace(t)
	w.write("d/a.txt", "a")
	w.write("d/b.txt", "b")
	asked := 0
	var offer string
	cs := w.serve(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		if asked > 1 {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		b, _ := json.Marshal(r.Params.RequestedSchema)
		offer = string(b)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-2-1"}}, nil
	}}, "--mode", "elicit", "--grants", "delete_file", "--grant-max-ttl", "15m", "--grant-max-uses", "3", "--grants-client-relayed")
	if res := call(t, cs, "delete_file", map[string]any{"path": "d/a.txt"}); res.IsError || content(t, w.path("d/a.txt")) != "<missing>" {
		t.Fatalf("the approved delete did not run: %v", res.Content)
	}
	if !strings.Contains(offer, "files directly in "+w.path("d")+"/") {
		t.Fatalf("the elicitation offers no grant for d/: %s", offer)
	}
	if res := call(t, cs, "delete_file", map[string]any{"path": "d/b.txt"}); res.IsError || asked != 1 || content(t, w.path("d/b.txt")) != "<missing>" {
		t.Fatalf("the covered delete: asked %d times, %v", asked, res.Content)
	}
	if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}); reasonOf(t, res) != "declined" || asked != 2 || content(t, w.path("cache.txt")) != "cache" {
		t.Fatalf("a delete outside the grant: asked %d times, %v", asked, res.Content)
	}
	cs.Close()
	raw, err := os.ReadFile(w.journal)
	if err != nil {
		t.Fatal(err)
	}
	j := string(raw)
	if !strings.Contains(j, `"grant-created"`) || strings.Count(j, `"grant-used"`) != 1 {
		t.Fatalf("the journal lacks the grant's creation or its one use:\n%s", j)
	}
}
