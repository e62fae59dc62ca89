package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listDefaultJournals runs `mcpsafe journal list` in env and returns its lines
// as [path, server, time].
func listDefaultJournals(t *testing.T, env []string, stateDir string) [][]string {
	t.Helper()
	cmd := exec.Command(binary, "journal", "list")
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("journal list: %v: %s", err, errb.String())
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 3 || filepath.Dir(f[0]) != stateDir {
			t.Fatalf("journal list line %q: want PATH in %s, server, time", l, stateDir)
		}
		if _, err := journal.VerifyFile(f[0]); err != nil {
			t.Errorf("%s: %v", f[0], err)
		}
		rows = append(rows, f)
	}
	return rows
}

// The README's `mcpsafe files` client entries, used together on one
// machine with default flags: Claude Desktop's `--root ~/scratch`, VS
// Code's `--root ${workspaceFolder}/scratch`, and the Claude Desktop entry
// started a second time (one configuration in two clients). Every server
// starts and serves, each with its own default journal, and `mcpsafe
// journal list` names each with its roots. Before, the second server
// failed to start: all of them wanted journal-mcpsafe-files.jsonl.
func TestDefaultStateSideBySide(t *testing.T) {
	stateDir, env := freshState(t)
	home := t.TempDir()
	desktopRoot := filepath.Join(home, "scratch")
	vscodeRoot := filepath.Join(home, "projects", "app", "scratch")
	for _, d := range []string{desktopRoot, vscodeRoot} {
		must(t, os.MkdirAll(d, 0o755))
		for _, f := range []string{"a.txt", "b.txt"} {
			must(t, os.WriteFile(filepath.Join(d, f), []byte("old"), 0o644))
		}
	}
	accept := &mcp.ClientOptions{ElicitationHandler: acceptAll}
	desktop := spawn(t, env, accept, "files", "--root", desktopRoot)
	vscode := spawn(t, env, accept, "files", "--root", vscodeRoot)
	twin := spawn(t, env, accept, "files", "--root", desktopRoot)
	for _, c := range []struct {
		cs         *mcp.ClientSession
		root, file string
	}{{desktop, desktopRoot, "a.txt"}, {vscode, vscodeRoot, "a.txt"}, {twin, desktopRoot, "b.txt"}} {
		if res := call(t, c.cs, "delete_file", map[string]any{"path": c.file}); res.IsError || content(t, filepath.Join(c.root, c.file)) != "<missing>" {
			t.Fatalf("delete %s in %s: %v", c.file, c.root, res.Content)
		}
	}
	rows := listDefaultJournals(t, env, stateDir)
	byServer := map[string][]string{}
	for _, r := range rows {
		byServer[r[1]] = append(byServer[r[1]], r[0])
	}
	if len(rows) != 3 || len(byServer) != 2 {
		t.Fatalf("journal list: %v; want three journals of two servers", rows)
	}
	for root, n := range map[string]int{desktopRoot: 2, vscodeRoot: 1} {
		paths := byServer[`audience "mcpsafe-files", --root "`+root+`"`]
		if len(paths) != n {
			t.Fatalf("journal list names %d journals of the server of %s, want %d: %v", len(paths), root, n, rows)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			must(t, err)
			if strings.Count(string(b), `"decision":"executed"`) != 1 {
				t.Errorf("%s does not hold its server's one executed delete:\n%s", p, b)
			}
		}
	}
}

// The README's proxy entry, which Claude Desktop and VS Code share word
// for word, started by both: both start and serve, each with its own
// default journal.
func TestDefaultStateTwinProxies(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	stateDir, env := freshState(t)
	projects, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	accept := &mcp.ClientOptions{ElicitationHandler: acceptAll}
	for _, name := range []string{"desktop", "vscode"} {
		cs := spawn(t, env, accept, "proxy", "--", fsBin, projects)
		p := filepath.Join(projects, name+".txt")
		if res := call(t, cs, "write_file", map[string]any{"path": p, "content": name}); res.IsError || content(t, p) != name {
			t.Fatalf("%s proxy: %v", name, res.Content)
		}
	}
	rows := listDefaultJournals(t, env, stateDir)
	if len(rows) != 2 || rows[0][0] == rows[1][0] || rows[0][1] != rows[1][1] || !strings.Contains(rows[0][1], "mcpsafe-proxy") {
		t.Fatalf("journal list: %v; want two journals of the one proxy configuration", rows)
	}
}

// Control: a journal named with --journal is that server's alone. A second
// server naming the same file is refused at start, and told what to change.
func TestSharedExplicitJournalRefused(t *testing.T) {
	_, env := freshState(t)
	w := newWorkspace(t)
	accept := &mcp.ClientOptions{ElicitationHandler: acceptAll}
	first := spawn(t, env, accept, "files", "--root", w.root, "--journal", w.journal)
	if res := call(t, first, "delete_file", map[string]any{"path": "cache.txt"}); res.IsError {
		t.Fatalf("first server: %v", res.Content)
	}
	other := t.TempDir()
	code, stderr := runExit(t, env, "files", "--root", other, "--journal", w.journal)
	if code != 1 || !strings.Contains(stderr, "in use by another process") || !strings.Contains(stderr, "every server needs its own --journal PATH") {
		t.Fatalf("a second server on the same --journal: exit %d, %q", code, stderr)
	}
	// The first still serves.
	if res := call(t, first, "delete_file", map[string]any{"path": "thesis.txt"}); res.IsError {
		t.Fatalf("first server after the refusal: %v", res.Content)
	}
}
