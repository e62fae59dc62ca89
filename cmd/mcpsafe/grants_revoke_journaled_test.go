package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// `mcpsafe grants revoke` (the built binary) run while a server holds its
// journal open: the server journals the revocation, once, with who ran the
// command; with --journal into an offline journal, the command journals it
// and the server does not journal it again.
func TestGrantsRevokeJournaledByRunningServer(t *testing.T) {
	for _, offline := range []bool{false, true} {
		t.Run(map[bool]string{false: "journaled by the server", true: "journaled by the command"}[offline], func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			url := "file:" + filepath.Join(dir, "ledger.db")
			store, err := ledger.Open(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			jpath := filepath.Join(dir, "server.jsonl")
			j, err := journal.Open(jpath)
			if err != nil {
				t.Fatal(err)
			}
			g, err := mcpsafe.New(mcpsafe.Options{Audience: "grants-journal-test", Ledger: store, Journal: j, GrantEndSweep: -1,
				Principal: func(req *mcp.CallToolRequest) string { return "client:alice" }})
			if err != nil {
				t.Fatal(err)
			}
			var runs int
			s := mcp.NewServer(&mcp.Implementation{Name: "grants-journal-test", Version: "1"}, nil)
			must(t, g.Register(s, mcpsafe.Tool{
				Name:        "touch",
				InputSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
				Grants:      &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: 10, ClientRelayed: true},
				Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
					return mcpsafe.Plan{Summary: "touch a name"}, nil
				},
				Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
					runs++
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil
				},
			}))
			cs := (&grantReplica{server: s}).connect(t, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-1-2"}}, nil
			})
			if res := call(t, cs, "touch", map[string]any{"name": "x"}); res.IsError || runs != 1 {
				t.Fatalf("approving call: %+v", res)
			}
			args := []string{"grants", "revoke", "--ledger", url, "--principal", "client:alice"}
			admin := filepath.Join(dir, "admin.jsonl")
			if offline {
				args = append(args, "--journal", admin)
			}
			if out, err := exec.Command(binary, args...).CombinedOutput(); err != nil {
				t.Fatalf("grants revoke: %v\n%s", err, out)
			}
			// The server's journal is locked: the command cannot write it.
			if out, err := exec.Command(binary, "grants", "revoke", "--ledger", url, "--journal", jpath, "--tool", "touch").CombinedOutput(); err == nil {
				t.Fatalf("grants revoke wrote into a running server's journal:\n%s", out)
			}
			n, err := g.JournalGrantEnds(ctx)
			if err != nil {
				t.Fatal(err)
			}
			g.Close()
			must(t, j.Close())
			var ends []journal.Record
			for _, path := range []string{jpath, admin} {
				for _, r := range readJournalFile(t, path) {
					if r.Decision == journal.GrantEnded {
						ends = append(ends, r)
					}
				}
			}
			if len(ends) != 1 || ends[0].Reason != ledger.EndRevoked || !strings.HasSuffix(ends[0].By, " via mcpsafe grants revoke") || ends[0].Tool != "touch" {
				t.Fatalf("grant-ended records %s; want one revocation via mcpsafe grants revoke", decisions(ends))
			}
			if wantServer := !offline; (n == 1) != wantServer {
				t.Fatalf("the server journaled %d ends; want it to journal the end: %v", n, wantServer)
			}
		})
	}
}
