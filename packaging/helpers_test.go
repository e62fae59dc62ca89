// Package packaging tests what a user installs: the MCP bundle
// (scripts/bundle), the MCP Registry entry (server.json), the release
// archives (scripts/release) and the container image
// (internal/tools/ociimage), each used the way its consumer uses it.
package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the module's root (the tests run in packaging/).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// needTool skips a test whose outside tool (node, npm) is missing, loudly,
// and fails it under CI=true: CI never passes by skipping.
func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		msg := "!!! " + name + " is not installed: " + err.Error()
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
}

// script runs one of scripts/ with env added, and returns its stdout.
func script(t *testing.T, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", name), args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/%s %v: %v\n%s", name, args, err, stderr.String())
	}
	return string(out)
}

// shared holds what several tests use (the bundle), removed at the end.
var shared string

func TestMain(m *testing.M) {
	var err error
	if shared, err = os.MkdirTemp("", "mcpsafe-packaging-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(shared)
	os.Exit(code)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
