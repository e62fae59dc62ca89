package policy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseGatewayErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "p.yaml"), "tools:\n  x:\n    gate: true\n")
	for _, c := range []struct{ name, body, want string }{
		{"empty", "", "empty"},
		{"no servers", "servers: {}\n", "no servers"},
		{"unknown key", "servers:\n  a:\n    command: [x]\n    colour: red\n", "colour"},
		{"upper case", "servers:\n  A:\n    command: [x]\n", "server name"},
		{"underscore", "servers:\n  a_b:\n    command: [x]\n", "server name"},
		{"separator", "servers:\n  a__b:\n    command: [x]\n", "server name"},
		{"no upstream", "servers:\n  a:\n    audience: x\n", "command or url"},
		{"two upstreams", "servers:\n  a:\n    command: [x]\n    url: http://h/\n", "not both"},
		{"env on url", "servers:\n  a:\n    url: http://h/\n    env: {A: b}\n", "for a command"},
		{"both policies", "servers:\n  a:\n    command: [x]\n    policy_file: p.yaml\n    policy: {mode: token}\n", "not both"},
		{"bad cel", "servers:\n  a:\n    command: [x]\n    policy:\n      tools:\n        t:\n          deny: ['args.x ==']\n", "deny[0]"},
		{"missing policy file", "servers:\n  a:\n    command: [x]\n    policy_file: nope.yaml\n", "nope.yaml"},
		// A second document (here one that would add a server) is refused,
		// never ignored.
		{"two documents", "servers:\n  a:\n    command: [x]\n---\nservers:\n  b:\n    command: [y]\n", "gw.yaml:4: more than one YAML document"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "gw.yaml")
			writeFile(t, path, c.body)
			_, err := LoadGateway(path)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
	// Control: a policy file relative to the configuration, and defaults.
	path := filepath.Join(dir, "gw.yaml")
	writeFile(t, path, "servers:\n  a:\n    command: [x]\n    policy_file: p.yaml\n  b:\n    url: http://h/\n    prefix: false\n")
	f, err := LoadGateway(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Servers[0].Policy.Tools["x"] == nil || f.Servers[0].Prefix() != "a__" || f.Servers[1].Prefix() != "" {
		t.Fatalf("parsed: %+v %+v", f.Servers[0], f.Servers[1])
	}
	os.Remove(path)
}

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

// unknown_methods takes relay or refuse, and a gateway refuses relay: a
// method nobody knows cannot be routed to one of its servers.
func TestUnknownMethodsPolicy(t *testing.T) {
	for _, c := range []struct {
		src, err string
		relay    bool
	}{
		{"", "", false},
		{"unknown_methods: refuse\n", "", false},
		{"unknown_methods: relay\n", "", true},
		{"unknown_methods: yes\n", "neither relay nor refuse", false},
	} {
		p, err := Parse("p.yaml", []byte(c.src))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err = %v, want %q", c.src, err, c.err)
			}
			continue
		}
		if err != nil || p.RelayUnknownMethods != c.relay {
			t.Errorf("%q: relay = %v, %v; want %v", c.src, p != nil && p.RelayUnknownMethods, err, c.relay)
		}
	}
	gw := "servers:\n  a:\n    command: [\"true\"]\n    policy:\n      unknown_methods: %s\n"
	if _, err := ParseGateway("gw.yaml", []byte(strings.ReplaceAll(gw, "%s", "refuse"))); err != nil {
		t.Fatalf("control: %v", err)
	}
	if _, err := ParseGateway("gw.yaml", []byte(strings.ReplaceAll(gw, "%s", "relay"))); err == nil || !strings.Contains(err.Error(), "unknown_methods: relay is for a single proxy") {
		t.Fatalf("a gateway server relaying unknown methods: %v", err)
	}
}
