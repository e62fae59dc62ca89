package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The walk-through's friction, end to end: a client that shows a form
// (VS Code, Claude Code, Cursor: elicitation, in-call on 2025-11-25 and
// MRTR on 2026-07-28) writes a long file through `mcpsafe proxy` in front
// of the real server-filesystem. The write is shown bounded, within the
// form's limits and saying what it leaves out, approved, and written
// whole; the journal keeps the content's SHA-256 and size, not the
// content. The control: a short write is shown whole.
func TestProxyLongWriteShownBoundedInForm(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	for _, proto := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(proto, func(t *testing.T) {
			data, err := filepath.EvalSymlinks(t.TempDir())
			must(t, err)
			jpath := filepath.Join(t.TempDir(), "journal.jsonl")
			var msgs []string
			cmd := exec.Command(binary, "proxy", "--journal", jpath, "--policy", "../../proxy/testdata/example-policy.yaml", "--", fsBin, data)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					msgs = append(msgs, r.Params.Message)
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
				},
			}).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
			if err != nil {
				t.Fatalf("connect: %v; stderr: %s", err, stderr.String())
			}
			defer cs.Close()
			for _, n := range []int{1000, 5000, 3} {
				var b strings.Builder
				for i := range n {
					fmt.Fprintf(&b, "line %d of the long file\n", i+1)
				}
				text := b.String()
				target := filepath.Join(data, fmt.Sprintf("long-%d.txt", n))
				msgs = nil
				if res := call(t, cs, "write_file", map[string]any{"path": target, "content": text}); res.IsError {
					t.Fatalf("%d lines: the approved write was refused: %+v", n, res.Content)
				}
				if got := content(t, target); got != text {
					t.Fatalf("%d lines: the file holds %d bytes, want %d", n, len(got), len(text))
				}
				if len(msgs) != 1 {
					t.Fatalf("%d lines: asked %d times", n, len(msgs))
				}
				msg := msgs[0]
				if l, r := strings.Count(msg, "\n")+1, utf8.RuneCountInString(msg); l > 400 || r > 32<<10 {
					t.Fatalf("%d lines: the form is %d lines and %d characters", n, l, r)
				}
				bounded := strings.Contains(msg, "too long for this form to show whole")
				if bounded != (n > 3) {
					t.Fatalf("%d lines: bounded %v:\n%.2000s", n, bounded, msg)
				}
				if n == 3 {
					if !strings.Contains(msg, "line 3 of the long file") {
						t.Fatalf("the short write is not shown whole:\n%s", msg)
					}
					continue
				}
				sum := sha256.Sum256([]byte(text))
				for _, want := range []string{"not shown here: lines", "the whole text's SHA-256 is " + hex.EncodeToString(sum[:]), "line 1 of the long file"} {
					if !strings.Contains(msg, want) {
						t.Errorf("%d lines: the form lacks %q:\n%.3000s", n, want, msg)
					}
				}
				if strings.Contains(msg, fmt.Sprintf("line %d of the long file", n)) {
					t.Errorf("%d lines: the bounded form shows the last line", n)
				}
			}
			cs.Close()
			j, err := os.ReadFile(jpath)
			must(t, err)
			if bytes.Contains(j, []byte("line 999 of the long file")) {
				t.Fatal("the journal holds the written content")
			}
			for _, n := range []int{1000, 5000} {
				var b strings.Builder
				for i := range n {
					fmt.Fprintf(&b, "line %d of the long file\n", i+1)
				}
				sum := sha256.Sum256([]byte(b.String()))
				if want := fmt.Sprintf(`{"sha256":"%s","bytes":%d}`, hex.EncodeToString(sum[:]), b.Len()); !bytes.Contains(j, []byte(want)) {
					t.Errorf("the journal lacks the %d-line content's digest and size %s", n, want)
				}
			}
			if !bytes.Contains(j, []byte("line 3 of the long file")) {
				t.Error("the short write's content is not in the journal (it is under the 1 KiB rule)")
			}
		})
	}
}
