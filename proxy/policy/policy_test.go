package policy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
)

// Every policy mistake is a startup error that says where it is.
func TestBadPolicies(t *testing.T) {
	for _, c := range []struct {
		file string
		want []string // substrings of the error
	}{
		{"unknown-tool-key.yaml", []string{"unknown-tool-key.yaml:4:", `unknown key "irreversable" in a tool entry`, `did you mean "irreversible"?`}},
		{"unknown-top-key.yaml", []string{"unknown-top-key.yaml:2:", `did you mean "tools"?`}},
		{"unknown-rule-key.yaml", []string{"unknown-rule-key.yaml:5:", `unknown key "exp" in a rule`, `did you mean "expr"?`}},
		{"bad-mode.yaml", []string{"bad-mode.yaml:2:", `unknown mode "elicitation"`}},
		{"ungate.yaml", []string{"ungate.yaml:2:", "gate: false is not allowed"}},
		{"cel-syntax.yaml", []string{"cel-syntax.yaml:5:", "deny[1]", "CEL"}},
		{"cel-undeclared.yaml", []string{"cel-undeclared.yaml:6:", "auto_approve[0]", "argz"}},
		{"cel-block.yaml", []string{"cel-block.yaml:4:", "allow[0]", "file line 6"}},
		{"cel-string-rule.yaml", []string{"cel-string-rule.yaml:3:", "must evaluate to a bool", "string"}},
		{"cel-int-rule.yaml", []string{"cel-int-rule.yaml:3:", "must evaluate to a bool", "int"}},
		{"template.yaml", []string{"template.yaml:3:", "preview"}},
		{"resolver-cel.yaml", []string{"resolver-cel.yaml:6:", "resolver.args.path"}},
		{"resolver-no-tool.yaml", []string{"resolver-no-tool.yaml:2:", "resolver: tool is required"}},
		{"bad-optin.yaml", []string{"bad-optin.yaml:1: allow_token_for", "YYYY-MM-DD"}},
		{"two-docs.yaml", []string{"more than one YAML document"}},
		{"grants-bad-ttl.yaml", []string{"grants-bad-ttl.yaml:2:", "max_ttl", "forever"}},
		{"grants-one-use.yaml", []string{"grants-one-use.yaml:2:", "max_uses 1"}},
		{"grants-bad-cel.yaml", []string{"grants-bad-cel.yaml:2:", "scopes[0]", "argz"}},
		{"grants-unknown-key.yaml", []string{"max_use"}},
		{"grants-wildcard.yaml", []string{"allow_grants_for", "delete_*"}},
	} {
		t.Run(c.file, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", "bad-policies", c.file))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestExamplePolicyParses(t *testing.T) {
	p, err := Load("../testdata/example-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != mcpsafe.ModeAuto || len(p.AllowTokenFor) != 0 {
		t.Fatalf("mode %q, opt-ins %v", p.Mode, p.AllowTokenFor)
	}
	for _, name := range []string{"write_file", "edit_file", "move_file", "create_directory"} {
		if p.Tools[name] == nil || p.Tools[name].Preview == nil {
			t.Errorf("%s: no entry with a preview", name)
		}
	}
	if r := p.Tools["edit_file"].Resolver; r == nil || r.Tool != "get_file_info" {
		t.Fatalf("edit_file resolver: %+v", r)
	}
	// An empty file is the default policy.
	if p, err := Parse("empty.yaml", nil); err != nil || len(p.Tools) != 0 {
		t.Fatalf("empty policy: %v %v", p, err)
	}
}

// The example's auto-approve rule against traversal attempts, with the
// legitimate path as control.
func TestExampleAutoApproveRule(t *testing.T) {
	p, err := Load("../testdata/example-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rule := p.Tools["create_directory"].AutoApprove[0]
	for path, want := range map[string]bool{
		"/data/scratch/new":         true,
		"/data/scratch/../etc":      false,
		"/data/scratchy":            false,
		"/data/scratch":             false,
		"/data/other/scratch/x":     false,
		"/data/scratch/a/../../etc": false,
	} {
		got, err := rule.Match(context.Background(), mcpsafe.Call{Tool: "create_directory", Arguments: []byte(`{"path":"` + path + `"}`)}, nil)
		if err != nil || got != want {
			t.Errorf("%s: match=%v err=%v, want %v", path, got, err, want)
		}
	}
}

// A grants: entry becomes the tool's GrantPolicy, with its fixed scopes.
func TestGrantsPolicyParses(t *testing.T) {
	src := "allow_grants_for: [delete_file]\ntools:\n  write_file:\n    grants:\n      max_ttl: 30m\n      max_uses: 20\n      client_relayed: true\n      scopes:\n        - {words: \"paths under /tmp/\", cel: \"args.path.startsWith('/tmp/')\"}\n"
	p, err := Parse("inline", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	g := p.Tools["write_file"].Grants
	if g == nil || g.MaxTTL.Minutes() != 30 || g.MaxUses != 20 || !g.ClientRelayed || g.Scopes == nil {
		t.Fatalf("grants = %+v", g)
	}
	sc, err := g.Scopes(mcpsafe.Call{}, nil)
	if err != nil || len(sc) != 1 || sc[0].Words != "paths under /tmp/" {
		t.Fatalf("scopes = %+v, %v", sc, err)
	}
	if len(p.AllowGrantsFor) != 1 || p.AllowGrantsFor[0] != "delete_file" {
		t.Fatalf("allow_grants_for = %v", p.AllowGrantsFor)
	}
	if !p.Tools["write_file"].HasSettings() {
		t.Fatal("a grants-only entry does not count as a setting")
	}
}
