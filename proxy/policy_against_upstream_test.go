package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Policies that parse but do not fit the upstream are startup errors.
func TestPolicyAgainstUpstream(t *testing.T) {
	for _, c := range []struct {
		name, policy, want string
	}{
		{"typo'd tool", "tools:\n  delete_thingg: {}\n", `tools.delete_thingg: upstream has no tool "delete_thingg"`},
		{"read-only with settings", "tools:\n  echo: {preview: x}\n", "add gate: true"},
		{"resolver missing", "tools:\n  delete_thing: {resolver: {tool: nope}}\n", `upstream has no tool "nope"`},
		{"resolver not read-only", "tools:\n  delete_thing: {resolver: {tool: set_flag}}\n", "not marked read-only"},
		{"resolver gated by policy", "tools:\n  echo: {gate: true}\n  delete_thing: {resolver: {tool: echo}}\n", "gated by this policy"},
		{"opt-in reversible", "allow_token_for: [set_flag]\n", "reversible"},
		{"opt-in unknown", "allow_token_for: [nope]\n", "not a gated tool"},
		{"opt-in read-only", "allow_token_for: [echo]\n", "not a gated tool"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, up := newGoUpstream(t)
			_, err := NewServer(context.Background(), Config{
				Upstream: up, Policy: mustPolicy(t, c.policy),
				Gate: stores(t, serverconf.Config{JournalPath: filepath.Join(t.TempDir(), "j")}),
			})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
	// A pattern in the opt-in list is refused already when the file is read.
	if _, err := policy.Parse("p.yaml", []byte("allow_token_for: ['delete_*']\n")); err == nil || !strings.Contains(err.Error(), "not an exact tool name") {
		t.Fatalf("wildcard opt-in: %v", err)
	}
	// Mode and opt-ins come only from the policy file.
	_, up := newGoUpstream(t)
	_, err := NewServer(context.Background(), Config{Upstream: up, Gate: stores(t, serverconf.Config{NoJournal: true, Mode: mcpsafe.ModeToken})})
	if err == nil {
		t.Fatal("a mode outside the policy was accepted")
	}
	// Control: an opt-in for an irreversible tool works, and only for it.
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, "allow_token_for: [delete_thing]\n"))
	cs := connect(t, s, nil)
	args := map[string]any{"a": 1}
	args[mcpsafe.TokenField] = tokenOf(t, call(t, cs, "delete_thing", map[string]any{"a": 1}))
	if res := call(t, cs, "delete_thing", args); res.IsError || u.count("delete_thing") != 1 {
		t.Fatalf("opted-in token: %s", text(res))
	}
	if r := reasonOf(t, call(t, cs, "gated_fail", map[string]any{})); r != mcpsafe.ReasonElicitationUnsupported {
		t.Fatalf("another irreversible tool got a token path: %q", r)
	}
}

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
