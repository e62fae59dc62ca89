package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The shipped example policy in front of the real server-filesystem, with
// a real SDK client: write and edit approvals read like a code review.
// edit_file shows the server's own dry-run diff, write_file says create or
// overwrite and shows the diff against the current content, each argument
// is shown once, JSON never as an escaped string, the server by the name
// the operator gave it; a file changed between the question and the run
// voids the approval, and the control runs.
func TestFSExamplePolicyEffects(t *testing.T) {
	pol, err := policy.Load("testdata/example-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir, up := fsUpstream(t)
	s := newProxy(t, up, pol)
	var msg atomic.Value
	var tamper atomic.Value
	tamper.Store(func() {})
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg.Store(r.Params.Message)
		tamper.Load().(func())()
		return answer("accept", true)(ctx, r)
	}})
	p := func(n string) string { return filepath.Join(dir, n) }
	shown := func(t *testing.T, want, unwanted []string) string {
		t.Helper()
		m, _ := msg.Load().(string)
		for _, w := range want {
			if !strings.Contains(m, w) {
				t.Errorf("the prompt lacks %q:\n%s", w, m)
			}
		}
		for _, u := range unwanted {
			if strings.Contains(m, u) {
				t.Errorf("the prompt has %q:\n%s", u, m)
			}
		}
		return m
	}
	// Names and arguments once, in every prompt below.
	common := []string{`server: "files in /data" (the upstream calls itself "secure-filesystem-server" version "`}
	never := []string{s.Audience, `"path" = "`, `"content" = "`, `"edits" = "`, "Requested by", `\"newText\"`}

	t.Run("edit_file", func(t *testing.T) {
		writeFile(t, p("notes.txt"), "line one\nline two\nline three\n")
		res := call(t, cs, "edit_file", map[string]any{"path": p("notes.txt"), "edits": []any{map[string]any{"oldText": "line two", "newText": "line 2 (edited by agent)"}}})
		if res.IsError {
			t.Fatalf("edit_file: %s", text(res))
		}
		shown(t, append(common, "\n    -line two\n", "\n    +line 2 (edited by agent)\n", "\n     line one\n",
			`"edits": shown in full by change 1 above`, `"path": "`+p("notes.txt")+`"`), never)
		if got := readFile(t, p("notes.txt")); got != "line one\nline 2 (edited by agent)\nline three\n" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("write_file overwrites", func(t *testing.T) {
		writeFile(t, p("a.txt"), "alpha\nbeta\ngamma\n")
		res := call(t, cs, "write_file", map[string]any{"path": p("a.txt"), "content": "alpha\nBETA\ngamma\n"})
		if res.IsError {
			t.Fatalf("write_file: %s", text(res))
		}
		m := shown(t, append(common, "effect: overwrites", "which exists (3 lines now, 3 after)", "Overwrite ", "\n    -beta\n", "\n    +BETA\n",
			`"content": shown in full by change 1 above`), append(never, "effect: creates"))
		if strings.Count(m, "BETA") != 1 {
			t.Errorf("the new content is shown more than once:\n%s", m)
		}
		if got := readFile(t, p("a.txt")); got != "alpha\nBETA\ngamma\n" {
			t.Fatalf("file holds %q", got)
		}
	})
	t.Run("write_file creates", func(t *testing.T) {
		res := call(t, cs, "write_file", map[string]any{"path": p("new.txt"), "content": "first line\nsecond line\n"})
		if res.IsError {
			t.Fatalf("write_file: %s", text(res))
		}
		shown(t, append(common, "effect: creates", `which does not exist yet, as "read_text_file" reports (2 lines)`, "Create ", "\n    +first line\n", "\n    +second line\n"),
			append(never, "effect: overwrites"))
	})
	t.Run("a change before the write voids the approval", func(t *testing.T) {
		writeFile(t, p("b.txt"), "one\n")
		tamper.Store(func() { writeFile(t, p("b.txt"), "one\nsomeone else's line\n") })
		defer tamper.Store(func() {})
		res := call(t, cs, "write_file", map[string]any{"path": p("b.txt"), "content": "two\n"})
		if reasonOf(t, res) != mcpsafe.ReasonTargetChanged {
			t.Fatalf("want target_changed, got %s", text(res))
		}
		if got := readFile(t, p("b.txt")); got != "one\nsomeone else's line\n" {
			t.Fatalf("the changed file was overwritten: %q", got)
		}
	})
	t.Run("an edit that cannot apply is refused before anyone is asked", func(t *testing.T) {
		msg.Store("")
		writeFile(t, p("c.txt"), "x\n")
		res := call(t, cs, "edit_file", map[string]any{"path": p("c.txt"), "edits": []any{map[string]any{"oldText": "not there", "newText": "y"}}})
		if reasonOf(t, res) != mcpsafe.ReasonPreviewFailed || msg.Load() != "" {
			t.Fatalf("want preview_failed and no prompt, got %s (prompt %q)", text(res), msg.Load())
		}
	})
}
