package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The approval card over stdio (how Claude Desktop and VS Code run a
// server), for `mcpsafe files` and `mcpsafe proxy` in front of the npm
// filesystem server, with a real SDK client that declares MCP Apps as a
// host does: the card is listed and read, the decision tool runs the call
// once, and a client without the extension sees none of it.
func TestApprovalCardOverStdio(t *testing.T) {
	for _, via := range []string{"files", "proxy"} {
		t.Run(via, func(t *testing.T) {
			dir := t.TempDir()
			data := filepath.Join(dir, "data")
			must(t, os.MkdirAll(data, 0o755))
			target := filepath.Join(data, "notes.txt")
			must(t, os.WriteFile(target, []byte("keep me?\n"), 0o644))
			jpath := filepath.Join(dir, "journal.jsonl")
			args := []string{"files", "--root", data, "--journal", jpath}
			tool, callArgs := "delete_file", map[string]any{"path": target}
			if via == "proxy" {
				fsBin := npmFilesystemServer(t)
				args = []string{"proxy", "--journal", jpath, "--", fsBin, data}
				tool, callArgs = "write_file", map[string]any{"path": target, "content": "written in the card\n"}
			}
			connect := func(apps bool) *mcp.ClientSession {
				args := slices.Clone(args)
				if !apps { // (a process of its own: its own journal)
					args[slices.Index(args, jpath)] = filepath.Join(dir, "plain.jsonl")
				}
				caps := &mcp.ClientCapabilities{}
				if apps {
					caps.AddExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}})
				}
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{Capabilities: caps}).
					Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(binary, args...)}, nil)
				must(t, err)
				t.Cleanup(func() { cs.Close() })
				return cs
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			plain := connect(false)
			list, err := plain.ListTools(ctx, nil)
			must(t, err)
			for _, tl := range list.Tools {
				if tl.Name == approver.CardDecisionTool || tl.Meta["ui"] != nil {
					t.Fatalf("a client without MCP Apps sees the card: %s %v", tl.Name, tl.Meta)
				}
			}

			cs := connect(true)
			list, err = cs.ListTools(ctx, nil)
			must(t, err)
			var named, decision bool
			for _, tl := range list.Tools {
				named = named || tl.Name == tool && tl.Meta["ui"] != nil && strings.Contains(tl.Description, "approval card")
				decision = decision || tl.Name == approver.CardDecisionTool
			}
			if !named || !decision {
				t.Fatalf("tools/list for MCP Apps: card named %v, decision tool %v", named, decision)
			}
			page, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "ui://mcpsafe/approval-card"})
			must(t, err)
			if len(page.Contents) != 1 || !strings.Contains(page.Contents[0].Text, "Content-Security-Policy") {
				t.Fatalf("card resource: %+v", page)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: callArgs})
			must(t, err)
			var card struct {
				Decision string `json:"decision"`
			}
			b, _ := json.Marshal(res.Meta["io.mcpsafe/approval-card"])
			if json.Unmarshal(b, &card) != nil || card.Decision == "" {
				t.Fatalf("no card in the pending result: %v", res)
			}
			// (A client without the extension calling the decision tool is
			// refused: TestCardDecisionAttacks, one server, two sessions.)
			ran, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: approver.CardDecisionTool,
				Arguments: map[string]any{"decision": card.Decision, "arguments": callArgs, "approve": true}})
			must(t, err)
			if ran.IsError {
				t.Fatalf("the card's approval: %v", ran.Content)
			}
			b, err = os.ReadFile(target)
			switch {
			case via == "files" && !os.IsNotExist(err):
				t.Fatal("approved in the card, but the file is still there")
			case via == "proxy" && string(b) != "written in the card\n":
				t.Fatalf("the file after the approval: %q %v", b, err)
			}
			if n := len(cardRecords(t, jpath, journal.CardAccepted)); n != 1 {
				t.Fatalf("%d card approvals journaled, want 1", n)
			}
		})
	}
}
