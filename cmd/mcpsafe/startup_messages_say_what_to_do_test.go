package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A first-hour mistake ends with an error that says what is wrong and what
// to write instead, through the built binary; the same command written
// right starts (the control in each row).
func TestStartupMessagesSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	must(t, os.Mkdir(root, 0o755))
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(body), mode))
		return p
	}
	notBase64 := write("not-base64.secret", "not-base64!\n", 0o600)
	sf, af := approvalsFiles(t)
	gwTypo := write("gw-typo.yaml", "servers:\n  files:\n    comand: ["+binary+", files, --root, "+root+"]\n", 0o644)
	gwRight := write("gw-right.yaml", "servers:\n  files:\n    command: ["+binary+", files, --root, "+root+", --journal, "+filepath.Join(dir, "gw-up.jsonl")+"]\n", 0o644)
	polUnknown := write("pol-unknown.yaml", "allow_token_for: [delete_fil]\n", 0o644)
	polRight := write("pol-right.yaml", "allow_token_for: [delete_file]\n", 0o644)
	// An XDG_STATE_HOME where no directory can be made, even by root (the
	// tests may run as root, to whom permissions are no obstacle).
	notADir := "/proc/mcpsafe-test-unwritable-state"
	upJournal := filepath.Join(dir, "up.jsonl")
	j := func(name string) string { return filepath.Join(dir, name+".jsonl") }

	for _, tc := range []struct {
		name      string
		env       []string
		args      []string
		want, not []string
		right     []string // the same command written right: starts (exit 0 at stdin EOF)
		rightEnv  []string
		wantExit2 bool
	}{
		{name: "--http without a port", args: []string{"files", "--root", root, "--journal", j("a"), "--http", "localhost"},
			want: []string{`--http "localhost" is not HOST:PORT`, "give the port", "127.0.0.1:8765"}, not: []string{"non-loopback"}, wantExit2: true},
		{name: "--upstream-url without a scheme", args: []string{"proxy", "--upstream-url", "127.0.0.1:9000/mcp"},
			want: []string{"not an http:// or https:// URL", "http://127.0.0.1:9000/mcp"}, not: []string{"first path segment"}, wantExit2: true},
		{name: "upstream exits before initialize", args: []string{"proxy", "--journal", j("b"), "--", "sh", "-c", "echo upstream-stderr-line >&2; exit 3"},
			want: []string{"the upstream command exited (exit status 3) before it answered initialize", "standard error", "upstream-stderr-line"}, not: []string{"client is closing"},
			right: []string{"proxy", "--journal", j("b2"), "--", binary, "files", "--root", root, "--journal", upJournal}},
		{name: "upstream writes non-JSON before initialize", args: []string{"proxy", "--journal", j("c"), "--", "sh", "-c", "echo hello; sleep 5"},
			want: []string{"not a JSON-RPC message to its standard output", "invalid character 'h'", "is the command an MCP server on stdio?"}, not: []string{"client is closing"}},
		{name: "gateway key typo", args: []string{"proxy", "--journal", j("d"), "--config", gwTypo},
			want: []string{`:3: unknown key "comand" in a server entry`, `did you mean "command"?`, "known: command, env"}, not: []string{"proxy.serverYAML"},
			right: []string{"proxy", "--journal", j("d2"), "--config", gwRight}},
		{name: "policy opt-in for an unknown tool", args: []string{"proxy", "--journal", j("e"), "--policy", polUnknown, "--", binary, "files", "--root", root, "--journal", upJournal},
			want: []string{`allow_token_for names "delete_fil", which is not a gated tool of this server; it can name: delete_file`}, not: []string{"AllowTokenFor"},
			right: []string{"proxy", "--journal", j("e2"), "--policy", polRight, "--", binary, "files", "--root", root, "--journal", upJournal}},
		{name: "flag opt-in for an unknown tool", args: []string{"files", "--root", root, "--journal", j("f"), "--allow-token-for", "delete"},
			want: []string{`--allow-token-for names "delete", which is not a gated tool of this server; it can name: delete_file`}, not: []string{"AllowTokenFor"},
			right: []string{"files", "--root", root, "--journal", j("f2"), "--allow-token-for", "delete_file"}},
		{name: "approvals secret not base64", args: []string{"approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", notBase64, "--approvers-file", af},
			want: []string{"is not base64", "make one with: head -c 32 /dev/urandom | base64 > " + notBase64, "chmod 600"}},
		{name: "approvals --listen without a port", args: []string{"approvals", "serve", "--listen", "localhost", "--secret-file", sf, "--approvers-file", af},
			want: []string{`--listen "localhost" is not HOST:PORT`}, not: []string{"not a loopback address"}, wantExit2: true},
		{name: "unwritable default journal", env: []string{"XDG_STATE_HOME=" + notADir}, args: []string{"files", "--root", root},
			want:  []string{"the default journal", "cannot be opened", "--journal PATH", "XDG_STATE_HOME"},
			right: []string{"files", "--root", root, "--journal", j("g")}, rightEnv: []string{"XDG_STATE_HOME=" + notADir}},
		{name: "unknown flag", args: []string{"files", "--root", root, "--bogus"},
			want: []string{"mcpsafe files: flag provided but not defined: -bogus", "run 'mcpsafe files --help' for its flags"}, not: []string{"usage:", "-approver-timeout"}, wantExit2: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stderr := runExit(t, append(os.Environ(), tc.env...), tc.args...)
			if code == 0 || (tc.wantExit2 && code != 2) {
				t.Errorf("exit %d; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(stderr, n) {
					t.Errorf("stderr still has %q:\n%s", n, stderr)
				}
			}
			if tc.name == "unknown flag" && strings.Count(stderr, "\n") > 2 {
				t.Errorf("an unknown flag printed %d lines:\n%s", strings.Count(stderr, "\n"), stderr)
			}
			if tc.right != nil {
				if code, stderr := runExit(t, append(os.Environ(), tc.rightEnv...), tc.right...); code != 0 {
					t.Errorf("written right (%v): exit %d; stderr:\n%s", tc.right, code, stderr)
				}
			}
		})
	}
}

// --help puts the few flags a newcomer needs first.
func TestHelpShowsNewcomerFlagsFirst(t *testing.T) {
	code, out := runOut(t, "files", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	first, rest, ok := strings.Cut(out, "all other flags:")
	listed := func(text, f string) bool {
		return strings.Contains(text, "  "+f+" ") || strings.Contains(text, "  "+f+"\n")
	}
	if !ok {
		t.Fatalf("no split between first and other flags:\n%s", out)
	}
	for _, f := range []string{"-root", "-mode", "-http", "-journal", "-allow-token-for", "-approver-url"} {
		if !listed(first, f) {
			t.Errorf("%s is not among the first flags:\n%s", f, first)
		}
		if listed(rest, f) {
			t.Errorf("%s is listed twice", f)
		}
	}
	// Control: everything else is still there.
	for _, f := range []string{"-ttl", "-key-file", "-ledger", "-approver-timeout", "-http-stateless"} {
		if !listed(rest, f) {
			t.Errorf("%s is missing from the other flags", f)
		}
	}
}

// runOut runs the built binary and returns its exit code and stdout.
func runOut(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(binary, args...).Output()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}
