package proxy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// effectClient connects a client that approves every prompt and keeps the
// last one shown, in front of the real server-filesystem.
func effectClient(t *testing.T, policy string) (string, *mcp.ClientSession, *atomic.Value) {
	t.Helper()
	dir, up := fsUpstream(t)
	s := newProxy(t, up, mustPolicy(t, policy))
	var msg atomic.Value
	msg.Store("")
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg.Store(r.Params.Message)
		return answer("accept", true)(ctx, r)
	}})
	return dir, cs, &msg
}

// A path the read tool and the write tool may resolve differently is
// refused before anyone is asked: the plan would otherwise say "Create"
// while the write overwrites (a/nodir/../f reads as missing where the
// write cleans it to a/f). The policy here has no rule against "..", so
// only the effect stands between the path and the prompt. The control:
// clean paths are shown as an overwrite and a creation, and run.
func TestEffectWriteRefusesUncleanPaths(t *testing.T) {
	dir, cs, msg := effectClient(t, `
tools:
  write_file:
    effect:
      write:
        path: args.path
        content: args.content
        read: {tool: read_text_file, args: {path: args.path}}
`)
	precious := filepath.Join(dir, "precious.txt")
	writeFile(t, precious, "keep me\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir + "/nodir/../precious.txt", dir + "/./precious.txt", dir + "//precious.txt",
		dir + "/sub/../precious.txt", dir + "/sub/", dir + `/sub\..\precious.txt`, "", "precious.txt/."} {
		t.Run(p, func(t *testing.T) {
			msg.Store("")
			res := call(t, cs, "write_file", map[string]any{"path": p, "content": "overwritten\n"})
			if reasonOf(t, res) != mcpsafe.ReasonInvalidPath {
				t.Fatalf("want invalid_path, got %s", text(res))
			}
			if m := msg.Load().(string); m != "" {
				t.Fatalf("the person was asked:\n%s", m)
			}
			if got := readFile(t, precious); got != "keep me\n" {
				t.Fatalf("precious.txt holds %q", got)
			}
		})
	}
	t.Run("control: a clean path to an existing file is an overwrite", func(t *testing.T) {
		res := call(t, cs, "write_file", map[string]any{"path": precious, "content": "changed\n"})
		m := msg.Load().(string)
		if res.IsError || !strings.Contains(m, "Overwrite ") || strings.Contains(m, "Create ") {
			t.Fatalf("got %s\nprompt:\n%s", text(res), m)
		}
		if got := readFile(t, precious); got != "changed\n" {
			t.Fatalf("precious.txt holds %q", got)
		}
	})
	t.Run("control: a clean path to no file is a creation", func(t *testing.T) {
		res := call(t, cs, "write_file", map[string]any{"path": filepath.Join(dir, "sub", "new.txt"), "content": "new\n"})
		m := msg.Load().(string)
		if res.IsError || !strings.Contains(m, "Create ") || !strings.Contains(m, `which does not exist yet, as "read_text_file" reports`) {
			t.Fatalf("got %s\nprompt:\n%s", text(res), m)
		}
	})
}

// move_file says whether its destination exists. server-filesystem's
// move_file fails onto an existing destination (replaces: false): the
// call is refused before anyone is asked, both files untouched. A policy
// that does not say what the tool does leaves it unknown in the words
// shown ("may replace it"), never "does not exist". The control: a move
// to a free name says so and runs.
func TestEffectMoveSaysWhetherTheDestinationExists(t *testing.T) {
	const policy = `
tools:
  move_file:
    effect:
      move:
        source: args.source
        destination: args.destination
        read: {tool: get_file_info, args: {path: args.destination}}
`
	t.Run("replaces: false refuses onto an existing destination", func(t *testing.T) {
		dir, cs, msg := effectClient(t, policy+"        replaces: false\n")
		src, dst := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
		writeFile(t, src, "a\n")
		writeFile(t, dst, "b\n")
		res := call(t, cs, "move_file", map[string]any{"source": src, "destination": dst})
		if reasonOf(t, res) != mcpsafe.ReasonPreviewFailed || !strings.Contains(text(res), "exists") || msg.Load().(string) != "" {
			t.Fatalf("want preview_failed before any prompt, got %s (prompt %q)", text(res), msg.Load())
		}
		if readFile(t, src) != "a\n" || readFile(t, dst) != "b\n" {
			t.Fatal("a file changed")
		}
		res = call(t, cs, "move_file", map[string]any{"source": src, "destination": dir + "/x/../b.txt"})
		if reasonOf(t, res) != mcpsafe.ReasonInvalidPath || msg.Load().(string) != "" {
			t.Fatalf("want invalid_path before any prompt, got %s", text(res))
		}
		// Control: a free destination.
		free := filepath.Join(dir, "c.txt")
		res = call(t, cs, "move_file", map[string]any{"source": src, "destination": free})
		m := msg.Load().(string)
		if res.IsError || !strings.Contains(m, `effect: moves "`+src+`" to "`+free+`", which does not exist yet, as "get_file_info" reports`) {
			t.Fatalf("got %s\nprompt:\n%s", text(res), m)
		}
		if readFile(t, free) != "a\n" {
			t.Fatal("not moved")
		}
	})
	t.Run("replaces unset: an existing destination may be replaced", func(t *testing.T) {
		dir, cs, msg := effectClient(t, policy)
		src, dst := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
		writeFile(t, src, "a\n")
		writeFile(t, dst, "b\n")
		call(t, cs, "move_file", map[string]any{"source": src, "destination": dst})
		m := msg.Load().(string)
		if !strings.Contains(m, `which exists, as "get_file_info" reports: "move_file" may replace it`) || strings.Contains(m, "does not exist") {
			t.Fatalf("prompt:\n%s", m)
		}
		if readFile(t, dst) != "b\n" {
			t.Fatal("server-filesystem replaced the destination") // it refuses to
		}
	})
	t.Run("replaces: true says the destination is replaced", func(t *testing.T) {
		dir, cs, msg := effectClient(t, policy+"        replaces: true\n")
		src, dst := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
		writeFile(t, src, "a\n")
		writeFile(t, dst, "b\n")
		call(t, cs, "move_file", map[string]any{"source": src, "destination": dst})
		if m := msg.Load().(string); !strings.Contains(m, "which exists, as \"get_file_info\" reports, and is replaced: what it holds now is lost") {
			t.Fatalf("prompt:\n%s", m)
		}
	})
}
