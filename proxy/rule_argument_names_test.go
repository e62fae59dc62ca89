package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A rule or resolver argument that reads an argument the upstream tool
// does not have is a startup error naming the line and the nearest name,
// like a preview template's: at run time it would fail on every call (a
// deny rule denying them all). Each with a control that starts.
func TestRuleArgumentNamesChecked(t *testing.T) {
	for _, c := range []struct {
		name, policy, want string // want "" means it starts
	}{
		{"deny rule", "tools:\n  write_note:\n    deny: ['args.pth.startsWith(\"/etc\")']\n",
			"p.yaml:3: tools.write_note.deny[0]: args.pth is not an argument of the upstream tool (did you mean args.path? it has: body, path)"},
		{"named allow rule, index syntax", "tools:\n  write_note:\n    allow:\n      - {name: short, expr: 'size(args[\"bdy\"]) < 10'}\n",
			"p.yaml:4: tools.write_note.allow[0]: args.bdy is not an argument of the upstream tool (did you mean args.body?"},
		{"auto_approve with has()", "tools:\n  write_note:\n    auto_approve: ['has(args.mode) && args.path == \"/tmp/x\"']\n",
			"tools.write_note.auto_approve[0]: args.mode is not an argument"},
		{"resolver argument", "tools:\n  write_note:\n    resolver: {tool: read_note, args: {path: args.pat}}\n",
			"p.yaml:3: tools.write_note.resolver.args.path: args.pat is not an argument of the upstream tool (did you mean args.path?"},
		{"template and rule both reported", "tools:\n  write_note:\n    preview: 'Write {{.pth}}'\n    deny: ['args.pth == \"\"']\n",
			"tools.write_note.preview: {{.pth}} is not an argument"},
		{"control: rules and resolver name real arguments", "tools:\n  write_note:\n    deny: ['args.path.startsWith(\"/etc\")']\n    allow: ['size(args[\"body\"]) < 100 && (!has(args.path) || args.path != \"\")']\n    resolver: {tool: read_note, args: {path: args.path}}\n", ""},
		{"control: a computed name is not checked", "tools:\n  write_note:\n    deny: ['args[tool] == \"x\"']\n", ""},
		{"control: a tool whose schema lists no properties", "tools:\n  delete_thing:\n    deny: ['args.anything == 1']\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := mcp.NewServer(&mcp.Implementation{Name: "up"}, nil)
			done := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			}
			props := map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "body": map[string]any{"type": "string"}}}
			up.AddTool(&mcp.Tool{Name: "delete_thing", InputSchema: map[string]any{"type": "object"}}, done)
			up.AddTool(&mcp.Tool{Name: "write_note", InputSchema: props}, done)
			up.AddTool(&mcp.Tool{Name: "read_note", InputSchema: props, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, done)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := up.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			pol, err := policy.Parse("p.yaml", []byte(c.policy))
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
