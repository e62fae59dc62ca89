package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParsePolicy: no policy text makes the parser panic, and a policy that
// parses never names a token opt-in that is not an exact tool name.
func FuzzParsePolicy(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/bad-policies/*.yaml")
	seeds = append(seeds, "../testdata/example-policy.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("allow_token_for: [\"delete_*\"]\n"))
	f.Add([]byte("tools:\n  write_file:\n    auto_approve:\n      - name: r\n        when: 'true'\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		for _, o := range p.AllowTokenFor {
			if o.Tool == "" || strings.ContainsAny(o.Tool, "*?[] \t\n") {
				t.Fatalf("accepted opt-in %q, which is not an exact tool name", o.Tool)
			}
		}
		for name, tp := range p.Tools {
			if name == "" || tp == nil {
				t.Fatalf("accepted an empty tool entry %q", name)
			}
		}
	})
}
