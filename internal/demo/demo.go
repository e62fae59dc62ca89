// Package demo runs `mcpsafe demo`: a real SDK client talks to a real
// `mcpsafe files` server in memory, in a temporary directory, and every step
// is checked against the files on disk. It returns an error as soon as any
// step does not behave as printed.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Run runs the demo, printing to w. With keep, its directory (workspace
// and journal) stays for the reader to inspect; otherwise it is removed.
func Run(ctx context.Context, w io.Writer, keep bool) error {
	dir, err := os.MkdirTemp("", "mcpsafe-demo-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	d := &demo{w: w, dir: dir, root: filepath.Join(dir, "workspace")}
	if err := os.MkdirAll(d.root, 0o755); err != nil {
		return err
	}
	for name, body := range map[string]string{
		"cache.txt":  "stale build cache\n",
		"thesis.txt": "four years of work\n",
		"draft.txt":  "old draft\n",
	} {
		if err := os.WriteFile(filepath.Join(d.root, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	d.journal = filepath.Join(dir, "state", "journal.jsonl")
	d.say("mcpsafe demo: a real MCP client and the `mcpsafe files` server, in memory.")
	d.say("Workspace: %s (cache.txt, draft.txt, thesis.txt)", d.root)
	d.say("Journal:   %s", d.journal)
	if err := d.elicitation(ctx); err != nil {
		return err
	}
	if err := d.tokens(ctx); err != nil {
		return err
	}
	sum, err := journal.VerifyFile(d.journal)
	if err != nil {
		return fmt.Errorf("journal verify: %w", err)
	}
	d.say("\n== The journal")
	if keep {
		d.say("%d records, hash chain intact. Check it yourself:\n  mcpsafe journal verify %s\n  mcpsafe journal show %s\n(the directory %s stays; remove it when done)",
			sum.Records, d.journal, d.journal, dir)
	} else {
		d.say("%d records, hash chain intact. The demo's directory is removed now; run `mcpsafe demo --keep` to keep it and check the journal yourself with `mcpsafe journal verify PATH`.", sum.Records)
	}
	d.say("\nEvery step behaved as printed.")
	return nil
}

type demo struct {
	w       io.Writer
	dir     string
	root    string
	journal string
	step    int
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.w, format+"\n", args...) }

func (d *demo) check(ok bool, what string) error {
	d.step++
	if !ok {
		d.say("  [FAIL] %s", what)
		return fmt.Errorf("demo step %d failed: %s", d.step, what)
	}
	d.say("  [ok] %s", what)
	return nil
}

func (d *demo) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(d.root, name))
	return err == nil
}

// session starts a server with cfg and connects a client to it.
func (d *demo) session(ctx context.Context, cfg files.Config, copts *mcp.ClientOptions) (*mcp.ClientSession, func(), error) {
	cfg.Roots = []string{d.root}
	j, err := journal.Open(d.journal)
	if err != nil {
		return nil, nil, err
	}
	cfg.Gate.Journal, cfg.JournalPath = j, d.journal
	srv, err := files.NewServer(ctx, cfg)
	if err != nil {
		j.Close()
		return nil, nil, err
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP.Connect(ctx, st, nil)
	if err != nil {
		srv.Close()
		j.Close()
		return nil, nil, err
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "demo-client", Version: "1"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		ss.Close()
		srv.Close()
		j.Close()
		return nil, nil, err
	}
	return cs, func() { cs.Close(); ss.Close(); srv.Close(); j.Close() }, nil
}

func (d *demo) elicitation(ctx context.Context) error {
	d.say("\n== 1. Elicitation: the client asks its user, the server enforces the answer")
	answer := "accept"
	cs, done, err := d.session(ctx, files.Config{}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			d.say("  The client shows its user:")
			for _, line := range strings.Split(r.Params.Message, "\n") {
				d.say("    | %s", line)
			}
			d.say("  The user answers: %s", answer)
			if answer == "accept" {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
			}
			return &mcp.ElicitResult{Action: answer}, nil
		},
	})
	if err != nil {
		return err
	}
	defer done()

	d.say("\nThe agent calls delete_file {path: cache.txt}.")
	res, err := call(ctx, cs, files.DeleteFile, map[string]any{"path": "cache.txt"})
	if err != nil {
		return err
	}
	d.say("  Result: %s", summary(res))
	if err := d.check(!res.IsError && !d.exists("cache.txt"), "accepted: cache.txt is deleted"); err != nil {
		return err
	}

	answer = "decline"
	d.say("\nThe agent calls delete_file {path: thesis.txt}.")
	if res, err = call(ctx, cs, files.DeleteFile, map[string]any{"path": "thesis.txt"}); err != nil {
		return err
	}
	d.say("  Result: %s", summary(res))
	return d.check(reason(res) == mcpsafe.ReasonDeclined && d.exists("thesis.txt"), "declined: thesis.txt is kept, reason declined")
}

func (d *demo) tokens(ctx context.Context) error {
	d.say("\n== 2. One-time token: for a client that cannot elicit")
	d.say("The operator opted delete_file in to tokens (--allow-token-for delete_file);")
	d.say("without that, an irreversible tool is refused when the client cannot ask its user.")
	cs, done, err := d.session(ctx, files.Config{Gate: mcpsafe.Options{AllowTokenFor: []mcpsafe.OptIn{{Tool: files.DeleteFile}}}}, nil)
	if err != nil {
		return err
	}
	defer done()

	d.say("\nThe agent calls delete_file {path: draft.txt}.")
	res, err := call(ctx, cs, files.DeleteFile, map[string]any{"path": "draft.txt"})
	if err != nil {
		return err
	}
	var st result.Required
	if err := remarshal(res.StructuredContent, &st); err != nil {
		return err
	}
	d.say("  The server returns a plan and a token, and deletes nothing yet:")
	d.say("    status: %s", st.Status)
	d.say("    plan:   %s", st.Plan.Summary)
	for _, line := range st.Plan.Details {
		d.say("            %s", line)
	}
	d.say("    token:  %s… (sealed, single use, expires %s)", clip(st.ApprovalToken, 24), st.ExpiresAt)
	if err := d.check(st.Status == "approval_required" && st.ApprovalToken != "" && d.exists("draft.txt"), "first call: plan and token, draft.txt untouched"); err != nil {
		return err
	}

	d.say("\nThe assistant shows the plan; the user says yes; the agent swaps in thesis.txt with the same token.")
	if res, err = call(ctx, cs, files.DeleteFile, map[string]any{"path": "thesis.txt", "approval_token": st.ApprovalToken}); err != nil {
		return err
	}
	d.say("  Result: %s", summary(res))
	if err := d.check(reason(res) == mcpsafe.ReasonArgumentsChanged && d.exists("thesis.txt"), "swapped argument refused: thesis.txt kept"); err != nil {
		return err
	}

	d.say("\nThe agent calls again with exactly the approved arguments plus the token.")
	if res, err = call(ctx, cs, files.DeleteFile, map[string]any{"path": "draft.txt", "approval_token": st.ApprovalToken}); err != nil {
		return err
	}
	d.say("  Result: %s", summary(res))
	if err := d.check(!res.IsError && !d.exists("draft.txt"), "second call: draft.txt deleted"); err != nil {
		return err
	}

	if err := os.WriteFile(filepath.Join(d.root, "draft.txt"), []byte("old draft\n"), 0o644); err != nil {
		return err
	}
	d.say("\ndraft.txt is put back, and the agent replays the same token.")
	if res, err = call(ctx, cs, files.DeleteFile, map[string]any{"path": "draft.txt", "approval_token": st.ApprovalToken}); err != nil {
		return err
	}
	d.say("  Result: %s", summary(res))
	return d.check(reason(res) != "" && d.exists("draft.txt"), "replay refused: draft.txt kept")
}

func call(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) (*mcp.CallToolResult, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("calling %s: %w", name, err)
	}
	return res, nil
}

func reason(res *mcp.CallToolResult) string {
	var r result.Refused
	if !res.IsError || remarshal(res.StructuredContent, &r) != nil || r.Status != "refused" {
		return ""
	}
	return r.Reason
}

func summary(res *mcp.CallToolResult) string {
	if r := reason(res); r != "" {
		var rr result.Refused
		remarshal(res.StructuredContent, &rr)
		return fmt.Sprintf("refused, reason %s: %s", r, rr.Message)
	}
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return strings.SplitN(t.Text, "\n", 2)[0]
		}
	}
	return "(no text)"
}

func remarshal(from, to any) error {
	if from == nil {
		return errors.New("no structured content")
	}
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
