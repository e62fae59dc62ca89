package policy

import (
	"encoding/json"

	"cel.dev/cel-go/cel"
	"go.yaml.in/yaml/v3"
)

// Effect is a tool's effect: what the call will change, computed from the
// upstream before the human is asked and shown as a diff (plan.Part).
// The gate previews the call again right before it runs, so the effect is
// computed twice, and a different answer the second time (the file
// changed) voids the approval.
//
// Three kinds, one per tool (effect: in the policy file):
//
//	effect:
//	  write:                        # a file's new content against its current one
//	    path: args.path             # CEL: the file
//	    content: args.content       # CEL: the new content
//	    read: {tool: read_text_file, args: {path: args.path}}
//
//	effect:
//	  dry_run:                      # the same tool, told not to change anything
//	    set: {dryRun: true}         # arguments added to the call's own
//	    shows: [edits]              # the arguments its diff stands for
//
//	effect:
//	  move:                         # a file moved or renamed
//	    source: args.source         # CEL: the file moved
//	    destination: args.destination
//	    read: {tool: get_file_info, args: {path: args.destination}}
//	    replaces: false             # what the tool does to an existing destination
//
// write reads the current content through a read-only upstream tool (one
// the proxy passes through, checked on every call); an error that says the
// file does not exist (ENOENT, "no such file") makes the call a creation,
// any other error refuses it. move looks the destination up the same way
// and says whether it exists. A path (write's path, move's source and
// destination) must be clean, with no "." or ".." element, no empty one
// ("//") and no trailing "/", or the call is refused (invalid_path) before
// anyone is asked: the read tool and the gated tool may resolve such a
// path differently (the read finds nothing at a/nodir/../f, the write
// cleans it to a/f and overwrites it), and the plan would then claim a
// creation where a file is overwritten. dry_run trusts the upstream to
// honour the argument it sets; its answer must be a unified diff, or the
// call is refused: a diff that cannot be read is not shown as if it were
// one.
type Effect struct {
	Read    *Resolver   // write, move: the read-only tool and its arguments
	Path    cel.Program // write: the file
	Content cel.Program // write: the new content
	DryRun  map[string]json.RawMessage
	// Source and Destination are move's paths; Replaces is what its tool
	// does to an existing destination: nil unknown, true replaces it,
	// false refuses (the call is then refused before anyone is asked).
	Source, Destination cel.Program
	Replaces            *bool
	// Shows names the arguments the diff stands for (write: those the
	// content expression reads; dry_run: shows:).
	Shows []string
}

type effectFile struct {
	Write  *writeEffectFile  `yaml:"write"`
	DryRun *dryRunEffectFile `yaml:"dry_run"`
	Move   *moveEffectFile   `yaml:"move"`
}

type moveEffectFile struct {
	Source      yaml.Node     `yaml:"source"`
	Destination yaml.Node     `yaml:"destination"`
	Read        *resolverFile `yaml:"read"`
	Replaces    *bool         `yaml:"replaces"`
}

type writeEffectFile struct {
	Path    yaml.Node     `yaml:"path"`
	Content yaml.Node     `yaml:"content"`
	Read    *resolverFile `yaml:"read"`
}

type dryRunEffectFile struct {
	Set   map[string]any `yaml:"set"`
	Shows []string       `yaml:"shows"`
}

// effect checks and compiles a tool's effect: entry.
func (tc *toolCompiler) effect(line int, f *effectFile) *Effect {
	e := &Effect{}
	switch {
	case countSet(f.Write != nil, f.DryRun != nil, f.Move != nil) != 1:
		tc.fail(line, "effect: give exactly one of write, dry_run and move")
		return nil
	case f.Move != nil:
		m := f.Move
		e.Source, _ = tc.expr(&m.Source, "effect.move.source", line, false)
		e.Destination, _ = tc.expr(&m.Destination, "effect.move.destination", line, false)
		e.Replaces = m.Replaces
		if m.Read == nil || m.Read.Tool == "" {
			tc.fail(line, "effect.move.read: name the read-only upstream tool that looks the destination up, e.g. {tool: get_file_info, args: {path: args.destination}}")
			break
		}
		e.Read = &Resolver{Tool: m.Read.Tool, args: tc.callArgs(m.Read.Args, "effect.move.read.args")}
	case f.DryRun != nil:
		if len(f.DryRun.Set) == 0 {
			tc.fail(line, "effect.dry_run.set: name the argument that makes the call a dry run, e.g. {dryRun: true}")
		}
		e.DryRun = map[string]json.RawMessage{}
		for k, v := range f.DryRun.Set {
			b, err := json.Marshal(v)
			if err != nil {
				tc.fail(line, "effect.dry_run.set.%s: %v", k, err)
			}
			e.DryRun[k] = b
		}
		e.Shows = f.DryRun.Shows
		for _, a := range e.Shows {
			tc.tp.argRefs = append(tc.tp.argRefs, argRef{name: a, where: "effect.dry_run.shows", line: line})
		}
	default:
		w := f.Write
		e.Path, _ = tc.expr(&w.Path, "effect.write.path", line, false)
		e.Content, e.Shows = tc.expr(&w.Content, "effect.write.content", line, false)
		if w.Read == nil || w.Read.Tool == "" {
			tc.fail(line, "effect.write.read: name the read-only upstream tool that returns the current content, e.g. {tool: read_text_file, args: {path: args.path}}")
			break
		}
		e.Read = &Resolver{Tool: w.Read.Tool, args: tc.callArgs(w.Read.Args, "effect.write.read.args")}
	}
	return e
}

func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// callArgs compiles a map of argument names to CEL expressions (a
// resolver's or a read's args:).
func (tc *toolCompiler) callArgs(n yaml.Node, where string) []resolverArg {
	if n.IsZero() {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		tc.fail(n.Line, "%s must map argument names to CEL expressions", where)
		return nil
	}
	var args []resolverArg
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if prg, _ := tc.expr(v, where+"."+k.Value, v.Line, false); prg != nil {
			args = append(args, resolverArg{name: k.Value, prg: prg})
		}
	}
	return args
}
