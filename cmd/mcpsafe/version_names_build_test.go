package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// `mcpsafe version` names the module version and the commit, from the
// build info of each way the binary is built.
func TestVersionNamesModuleAndCommit(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		// go install github.com/mcpsafe/mcpsafe/cmd/mcpsafe@v1.2.3: the tag names the commit.
		{"tagged install", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		// @latest or @COMMIT with no tag: the pseudo-version carries the commit.
		{"pseudo-version install", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203223804-30da7e2c0ffe"}},
			"v0.0.0-20261203223804-30da7e2c0ffe commit 30da7e2c0ffe"},
		{"checkout build", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("30da7e2c0ffee0123456789abcdef0123456789a", "false")},
			"(devel) commit 30da7e2c0ffe"},
		{"dirty checkout build", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("30da7e2c0ffee0123456789abcdef0123456789a", "true")},
			"(devel) commit 30da7e2c0ffe+dirty"},
		// Control: a build that recorded nothing says so, and invents no commit.
		{"no vcs info", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)"},
	} {
		if got := versionOf(&tc.bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The binary built from a git checkout with VCS stamping on prints the
// commit it was built from. These machines set GOFLAGS=-buildvcs=false,
// and Go does not stamp from a linked worktree, so the module is copied
// (as the working tree has it) into a fresh repository and built there.
func TestVersionBinaryNamesCommit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed: %v", err)
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	copyTree := exec.Command("sh", "-c", `cd "$1" && git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -c | tar -x -C "$2"`, "sh", "../..", dir)
	if out, err := copyTree.CombinedOutput(); err != nil {
		t.Fatalf("copying the module: %v\n%s", err, out)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "build")
	head := git("rev-parse", "HEAD")
	bin := filepath.Join(t.TempDir(), "mcpsafe")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/mcpsafe")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=", "GOPROXY=off")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("mcpsafe version: %v\n%s", err, out)
	}
	if want := " commit " + head[:12]; !strings.Contains(string(out), want) {
		t.Fatalf("mcpsafe version printed %q, want it to name %q", out, want)
	}
	// Control: the test binary, built without stamping, names no commit.
	plain, err := exec.Command(binary, "version").CombinedOutput()
	if err != nil || strings.Contains(string(plain), "commit") {
		t.Fatalf("mcpsafe version without VCS info: %q, %v", plain, err)
	}
}
