package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A proxy or gateway that fails to start leaves no empty journal behind
// (nor its head and server note), and its one line says "proxy:" once.
// The control: a journal that was there before the failed start stays.
func TestProxyFailedStartLeavesNoJournal(t *testing.T) {
	base := t.TempDir()
	state := filepath.Join(base, "state")
	config := filepath.Join(base, "gateway.yaml")
	must(t, os.WriteFile(config, []byte("servers:\n  a:\n    command: [/bin/false]\n"), 0o644))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("%v: want exit 1, got %v: %s", args, err, out)
		}
		if bytes.Contains(out, []byte("proxy: proxy:")) || !bytes.Contains(out, []byte("mcpsafe proxy: ")) {
			t.Errorf("%v: stacked or missing prefix: %s", args, out)
		}
		return string(out)
	}
	if out := run("proxy", "--config", config); !bytes.Contains([]byte(out), []byte("no server of the gateway started: server a")) {
		t.Errorf("gateway: %s", out)
	}
	run("proxy", "--", "/bin/false")
	run("proxy", "--journal", filepath.Join(base, "named.jsonl"), "--", "/bin/false")
	var left []string
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != config {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("failed starts left files behind: %v", left)
	}
	// Control: a journal that existed stays.
	kept := filepath.Join(base, "kept.jsonl")
	must(t, os.WriteFile(kept, nil, 0o600))
	run("proxy", "--journal", kept, "--", "/bin/false")
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("the journal that was there before is gone: %v", err)
	}
}
