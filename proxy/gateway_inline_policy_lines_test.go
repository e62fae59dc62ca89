package proxy

import (
	"strings"
	"testing"
)

// An inline policy's errors name lines of the gateway file (the line an
// operator opens), not lines of the policy block counted from its start.
// The control: the same block, valid, compiles to the policy a
// policy_file holding it gives, and a flow-style block still reports its
// line.
func TestGatewayInlinePolicyErrorsNameFileLines(t *testing.T) {
	const file = `# gateway
servers:
  a:
    command: [a]
    # the policy, inline
    policy:
      name: files

      tools:
        write_file:
          deny: ['args.path.startsWith(']
        move_file:
          preview: "Move {{.source}"
  b:
    command: [b]
    policy: {mode: bogus}
`
	_, err := ParseGateway("gw.yaml", []byte(file))
	if err == nil {
		t.Fatal("the file parsed")
	}
	for _, want := range []string{"servers.a.policy:11: tools.write_file", "(file line 11)", "servers.a.policy:13: tools.move_file", "servers.b.policy:16: mode"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q:\n%v", want, err)
		}
	}

	const good = `servers:
  a:
    command: [a]
    policy:
      mode: elicit
      tools:
        write_file:
          preview: |
            # not a comment: part of the template
            Write {{.path}}
          deny: ['args.path.startsWith("/etc")']
`
	f, err := ParseGateway("gw.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Servers[0].Policy
	want := mustPolicy(t, "mode: elicit\ntools:\n  write_file:\n    preview: |\n      # not a comment: part of the template\n      Write {{.path}}\n    deny: ['args.path.startsWith(\"/etc\")']\n")
	if p.Mode != want.Mode || len(p.Tools["write_file"].Deny) != 1 || p.Tools["write_file"].Line != 7 {
		t.Fatalf("inline policy: mode %q, tools %v (line %d)", p.Mode, p.Tools, p.Tools["write_file"].Line)
	}
	var a, b strings.Builder
	p.Tools["write_file"].Preview.Execute(&a, map[string]string{"path": "x"})
	want.Tools["write_file"].Preview.Execute(&b, map[string]string{"path": "x"})
	if a.String() != b.String() || !strings.Contains(a.String(), "# not a comment") {
		t.Fatalf("template %q, want %q", a.String(), b.String())
	}
}
