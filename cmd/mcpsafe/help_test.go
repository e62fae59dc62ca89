package main

import (
	"bytes"
	"strings"
	"testing"
)

// Every command answers --help with its synopsis and its own flags on
// stdout, exit 0; a bad flag still exits 2.
func TestHelpEverywhere(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"--help"}, []string{"usage: mcpsafe <command>", "files", "proxy", "journal", "version"}, nil},
		{[]string{"help", "files"}, []string{"usage: mcpsafe files --root DIR", "-http-stateless", "-journal"}, nil},
		{[]string{"files", "--help"}, []string{"usage: mcpsafe files --root DIR", "-allow-token-for", "-ttl"}, nil},
		{[]string{"files", "--root", "/x", "-h"}, []string{"usage: mcpsafe files"}, nil},
		{[]string{"proxy", "--help"}, []string{"usage: mcpsafe proxy", "--upstream-url URL", "-upstream-timeout", "-policy"}, nil},
		{[]string{"keygen", "--help"}, []string{"usage: mcpsafe keygen PATH"}, []string{"flags:"}},
		{[]string{"demo", "--help"}, []string{"usage: mcpsafe demo", "-keep"}, nil},
		{[]string{"approvals", "--help"}, []string{"usage: mcpsafe approvals serve", "-secret-file"}, nil},
		{[]string{"approvals", "serve", "--help"}, []string{"-approvers-file", "-require"}, nil},
		{[]string{"journal", "--help"}, []string{"mcpsafe journal verify [PATH]", "mcpsafe journal show"}, nil},
		{[]string{"journal", "verify", "--help"}, []string{"usage: mcpsafe journal verify [PATH]", "-key", "-checkpoints", "-service-key"}, []string{"-tool", "-since"}},
		{[]string{"approvals", "passwd", "--help"}, []string{"usage: mcpsafe approvals passwd", "-convert"}, nil},
		{[]string{"approvals", "keygen", "--help"}, []string{"usage: mcpsafe approvals keygen", "-signing-key-file"}, nil},
		{[]string{"journal", "show", "--help"}, []string{"usage: mcpsafe journal show", "-tool", "-since"}, nil},
		{[]string{"version", "--help"}, []string{"usage: mcpsafe version"}, nil},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != 0 || errb.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errb.String())
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: stdout lacks %q:\n%s", tc.args, w, out.String())
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out.String(), n) {
				t.Errorf("%v: stdout has %q:\n%s", tc.args, n, out.String())
			}
		}
	}
	// Controls: a bad flag is still an error; --help after "--" belongs
	// to the proxy's upstream command.
	for _, args := range [][]string{{"files", "--bogus"}, {"journal", "verify", "--tool", "x"}, {"demo", "extra"}, {"proxy", "--", "srv", "--help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || !strings.HasPrefix(out.String(), "mcpsafe ") || !strings.Contains(out.String(), "go1.") {
			t.Fatalf("%v: exit %d, %q %q", args, code, out.String(), errb.String())
		}
	}
}
