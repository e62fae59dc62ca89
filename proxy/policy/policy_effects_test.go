package policy

import (
	"strings"
	"testing"
)

// An effect: entry that cannot work is a startup error naming its line;
// the controls (the two kinds, as the example policy writes them) parse.
func TestPolicyEffectErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"both kinds", "tools:\n  w:\n    effect:\n      write: {path: args.path, content: args.content, read: {tool: r, args: {path: args.path}}}\n      dry_run: {set: {dryRun: true}}\n", "exactly one of write, dry_run and move"},
		{"neither kind", "tools:\n  w:\n    effect: {}\n", "exactly one of write, dry_run and move"},
		{"write without read", "tools:\n  w:\n    effect:\n      write: {path: args.path, content: args.content}\n", "effect.write.read: name the read-only upstream tool"},
		{"write with bad CEL", "tools:\n  w:\n    effect:\n      write: {path: 'args.path +', content: args.content, read: {tool: r, args: {path: args.path}}}\n", "effect.write.path"},
		{"dry run that sets nothing", "tools:\n  w:\n    effect:\n      dry_run: {shows: [edits]}\n", "effect.dry_run.set"},
		{"a typo", "tools:\n  w:\n    effect:\n      dry_rn: {set: {dryRun: true}}\n", "dry_rn"},
		{"control: write", "tools:\n  w:\n    effect:\n      write: {path: args.path, content: args.content, read: {tool: r, args: {path: args.path}}}\n", ""},
		{"move without read", "tools:\n  w:\n    effect:\n      move: {source: args.source, destination: args.destination}\n", "effect.move.read: name the read-only upstream tool"},
		{"move with bad CEL", "tools:\n  w:\n    effect:\n      move: {source: 'args.source +', destination: args.destination, read: {tool: r, args: {path: args.destination}}}\n", "effect.move.source"},
		{"control: move", "tools:\n  w:\n    effect:\n      move: {source: args.source, destination: args.destination, read: {tool: r, args: {path: args.destination}}, replaces: false}\n", ""},
		{"control: dry run", "tools:\n  w:\n    effect:\n      dry_run: {set: {dryRun: true}, shows: [edits]}\n", ""},
	} {
		p, err := Parse("p.yaml", []byte(c.src))
		if c.want == "" {
			if err != nil || p.Tools["w"].Effect == nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "p.yaml:") {
			t.Errorf("%s: error %v, want one naming the line and %q", c.name, err, c.want)
		}
	}
}
