//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readLikeAPerson reads p the way a person checking it would (cat), and
// makes sure the read moved its last-access time: on a relatime or
// noatime mount a read may leave it alone, and the attack below would not
// be tried. Where the read did not move it, it is moved as a strictatime
// mount would (the modification time is kept).
func readLikeAPerson(t *testing.T, p string) {
	t.Helper()
	atime := func() time.Time {
		fi, err := os.Stat(p)
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		return time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	before := atime()
	_, err := os.ReadFile(p)
	must(t, err)
	if after := atime(); after.Equal(before) {
		fi, err := os.Stat(p)
		must(t, err)
		must(t, os.Chtimes(p, before.Add(2*time.Second), fi.ModTime()))
	}
	if atime().Equal(before) {
		t.Fatal("the read did not change the last-access time")
	}
}

// The shipped example policy, through the built `mcpsafe proxy` in front
// of the real npm filesystem server: reading the file between the prompt
// and the edit (the approver checking it) leaves the approval standing
// and the edit runs; writing it in between voids the approval
// (target_changed) and the file keeps the other write. A policy that binds
// the whole report (no bind:) shows the read is real: there it voids the
// approval too.
func TestApprovalSurvivesARead(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	data, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	target := filepath.Join(data, "notes.txt")
	wholeReport := filepath.Join(t.TempDir(), "whole-report.yaml")
	example, err := os.ReadFile("../../proxy/testdata/example-policy.yaml")
	must(t, err)
	if strings.Count(string(example), "bind: [size, created, modified, permissions]") != 2 {
		t.Fatalf("the example policy no longer binds edit_file and move_file to what a read cannot change:\n%s", example)
	}
	must(t, os.WriteFile(wholeReport, []byte(strings.ReplaceAll(string(example), "bind: [size, created, modified, permissions]", "")), 0o644))

	var between func()
	prompts := 0
	copts := &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		prompts++
		for _, want := range []string{`state "size" = "`, `state "modified" = "`} {
			if !strings.Contains(r.Params.Message, want) {
				t.Errorf("the prompt does not show %s: %q", want, r.Params.Message)
			}
		}
		between()
		return acceptAll(ctx, r)
	}}
	edit := map[string]any{"path": target, "edits": []any{map[string]any{"oldText": "draft", "newText": "final"}}}
	run := func(policy string, action func()) *mcp.CallToolResult {
		t.Helper()
		must(t, os.WriteFile(target, []byte("draft\n"), 0o644))
		// Times an hour back: the read's new access time differs from
		// them, whatever the mount's atime rules.
		old := time.Now().Add(-time.Hour)
		must(t, os.Chtimes(target, old, old))
		between = action
		cs := startProxy(t, copts, "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "--policy", policy, "--", fsBin, data)
		defer cs.Close()
		return call(t, cs, "edit_file", edit)
	}

	// A read between approval and execute: the edit runs.
	res := run("../../proxy/testdata/example-policy.yaml", func() { readLikeAPerson(t, target) })
	if res.IsError || content(t, target) != "final\n" {
		t.Fatalf("read in between, example policy: %v; file %q", res.Content, content(t, target))
	}
	// A write between them: target_changed, and the other write stays.
	res = run("../../proxy/testdata/example-policy.yaml", func() {
		must(t, os.WriteFile(target, []byte("draft, and someone else's line\n"), 0o644))
	})
	if reasonOf(t, res) != "target_changed" || content(t, target) != "draft, and someone else's line\n" {
		t.Fatalf("write in between: want target_changed, got %v; file %q", res.Content, content(t, target))
	}
	// The whole report bound: the read alone voids the approval.
	res = run(wholeReport, func() { readLikeAPerson(t, target) })
	if reasonOf(t, res) != "target_changed" || content(t, target) != "draft\n" {
		t.Fatalf("read in between, whole report bound: want target_changed, got %v; file %q", res.Content, content(t, target))
	}
	if prompts != 3 {
		t.Fatalf("%d prompts, want one per call", prompts)
	}
}
