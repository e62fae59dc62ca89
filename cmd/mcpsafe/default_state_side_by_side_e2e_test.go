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

// The README's client entries, used together on one machine with default
// flags: Claude Desktop's `files --root ~/scratch` and VS Code's `files
// --root ${workspaceFolder}/scratch`, and the proxy entry both clients
// share word for word. Every server starts and serves, each with its own
// default journal, and `mcpsafe journal list` names them with their
// servers. Before, the second files server failed to start: both wrote
// journal-mcpsafe-files.jsonl.
func TestDefaultStateSideBySide(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	stateDir, env := freshState(t)
	home := t.TempDir()
	desktopRoot := filepath.Join(home, "scratch")
	vscodeRoot := filepath.Join(home, "projects", "app", "scratch")
	projects, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	for _, d := range []string{desktopRoot, vscodeRoot} {
		must(t, os.MkdirAll(d, 0o755))
		must(t, os.WriteFile(filepath.Join(d, "old.txt"), []byte("old"), 0o644))
	}
	accept := &mcp.ClientOptions{ElicitationHandler: acceptAll}

	desktop := spawn(t, env, accept, "files", "--root", desktopRoot)
	vscode := spawn(t, env, accept, "files", "--root", vscodeRoot)
	proxyDesktop := spawn(t, env, accept, "proxy", "--", fsBin, projects)
	proxyVSCode := spawn(t, env, accept, "proxy", "--", fsBin, projects)

	for name, cs := range map[string]*mcp.ClientSession{"desktop": desktop, "vscode": vscode} {
		if res := call(t, cs, "delete_file", map[string]any{"path": "old.txt"}); res.IsError {
			t.Fatalf("%s files: %v", name, res.Content)
		}
	}
	if content(t, filepath.Join(desktopRoot, "old.txt")) != "<missing>" || content(t, filepath.Join(vscodeRoot, "old.txt")) != "<missing>" {
		t.Fatal("an approved delete did not run")
	}
	for name, cs := range map[string]*mcp.ClientSession{"desktop": proxyDesktop, "vscode": proxyVSCode} {
		p := filepath.Join(projects, name+".txt")
		if res := call(t, cs, "write_file", map[string]any{"path": p, "content": name}); res.IsError || content(t, p) != name {
			t.Fatalf("%s proxy: %v", name, res.Content)
		}
	}

	// `mcpsafe journal list`, in the servers' environment.
	cmd := exec.Command(binary, "journal", "list")
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("journal list: %v: %s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("journal list printed %d lines, want 4 (one per server):\n%s", len(lines), out.String())
	}
	byNote := map[string][]string{}
	for _, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 3 || filepath.Dir(f[0]) != stateDir {
			t.Fatalf("journal list line %q: want PATH in %s, server, time", l, stateDir)
		}
		if _, err := journal.VerifyFile(f[0]); err != nil {
			t.Errorf("%s: %v", f[0], err)
		}
		byNote[f[1]] = append(byNote[f[1]], f[0])
	}
	for _, root := range []string{desktopRoot, vscodeRoot} {
		paths := byNote[`audience "mcpsafe-files", --root "`+root+`"`]
		if len(paths) != 1 {
			t.Fatalf("journal list names the server of %s %d times, want once:\n%s", root, len(paths), out.String())
		}
		b, err := os.ReadFile(paths[0])
		must(t, err)
		if strings.Count(string(b), `"decision":"executed"`) != 1 {
			t.Errorf("%s does not hold its server's one executed delete:\n%s", paths[0], b)
		}
	}
	pw := 0
	for note, paths := range byNote {
		if strings.Contains(note, "mcpsafe-proxy") {
			pw += len(paths)
		}
	}
	if pw != 2 {
		t.Errorf("the two proxies have %d default journals listed, want 2:\n%s", pw, out.String())
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
