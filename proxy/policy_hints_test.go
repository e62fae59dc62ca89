package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Checks that need the upstream's tool list run at startup, each with a
// control that starts.
func TestPolicyStartupChecks(t *testing.T) {
	for _, c := range []struct {
		name, policy, want string // want "" means it starts
	}{
		{"token mode on an irreversible tool", "tools:\n  delete_thing: {mode: token}\n", "tools.delete_thing: mode token, but the tool is irreversible and not in allow_token_for"},
		{"token mode of the file on a named irreversible tool", "mode: token\ntools:\n  delete_thing: {preview: x}\n", "p.yaml:3: tools.delete_thing: mode token, but the tool is irreversible"},
		// Unnamed tools under the file's token mode are not checked: an
		// opt-in list for some of them is how a file refuses the rest.
		{"control: token mode for the file, unnamed irreversible tools", "mode: token\n", ""},
		{"control: token mode with the opt-in", "allow_token_for: [delete_thing]\ntools:\n  delete_thing: {mode: token}\n", ""},
		{"control: token mode on a reversible tool", "tools:\n  set_flag: {mode: token}\n", ""},
		{"preview names a missing argument", "tools:\n  write_note:\n    preview: 'Write {{.pth}} ({{if .body}}x{{end}})'\n", "p.yaml:3: tools.write_note.preview: {{.pth}} is not an argument of the upstream tool (did you mean {{.path}}? it has: body, path)"},
		{"control: preview names its arguments", "tools:\n  write_note:\n    preview: 'Write {{.path}} ({{if .body}}x{{end}})'\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := mcp.NewServer(&mcp.Implementation{Name: "up"}, nil)
			done := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			}
			obj := map[string]any{"type": "object"}
			up.AddTool(&mcp.Tool{Name: "delete_thing", InputSchema: obj}, done) // irreversible by default
			up.AddTool(&mcp.Tool{Name: "set_flag", InputSchema: obj, Annotations: &mcp.ToolAnnotations{DestructiveHint: boolp(false)}}, done)
			up.AddTool(&mcp.Tool{Name: "write_note", InputSchema: map[string]any{
				"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "body": map[string]any{"type": "string"}},
			}, Annotations: &mcp.ToolAnnotations{DestructiveHint: boolp(false)}}, done)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := up.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			pol, err := ParsePolicy("p.yaml", []byte(c.policy))
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewServer(context.Background(), Config{
				Upstream: ct, Policy: pol,
				Gate: stores(t, serverconf.Config{JournalPath: filepath.Join(t.TempDir(), "j")}),
			})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestClosestKey(t *testing.T) {
	keys := yamlKeys(toolFile{})
	for in, want := range map[string]string{
		"irreversable": "irreversible", "autoapprove": "auto_approve", "Preview": "preview",
		"secrets": "", "x": "", "resolvr": "resolver",
	} {
		if got := closest(in, keys); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}
