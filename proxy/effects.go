package proxy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"go.yaml.in/yaml/v3"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Effect is a tool's effect: what the call will change, computed from the
// upstream before the human is asked and shown as a diff (plan.Part).
// The gate previews the call again right before it runs, so the effect is
// computed twice, and a different answer the second time (the file
// changed) voids the approval.
//
// Two kinds, one per tool (effect: in the policy file):
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
// write reads the current content through a read-only upstream tool (one
// the proxy passes through, checked on every call); an error that says the
// file does not exist (ENOENT, "no such file") makes the call a creation,
// any other error refuses it. dry_run trusts the upstream to honour the
// argument it sets; its answer must be a unified diff, or the call is
// refused: a diff that cannot be read is not shown as if it were one.
type Effect struct {
	Read    *Resolver   // write: the read-only tool and its arguments
	Path    cel.Program // write: the file
	Content cel.Program // write: the new content
	DryRun  map[string]json.RawMessage
	// Shows names the arguments the diff stands for (write: those the
	// content expression reads; dry_run: shows:).
	Shows []string
}

type effectFile struct {
	Write  *writeEffectFile  `yaml:"write"`
	DryRun *dryRunEffectFile `yaml:"dry_run"`
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
	case (f.Write == nil) == (f.DryRun == nil):
		tc.fail(line, "effect: give exactly one of write and dry_run")
		return nil
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

func (s *Server) effect(ctx context.Context, name string, e *Effect, c mcpsafe.Call) ([]string, []plan.Part, error) {
	if e.DryRun != nil {
		return s.dryRun(ctx, name, e, c)
	}
	return s.writeEffect(ctx, e, c)
}

func (s *Server) writeEffect(ctx context.Context, e *Effect, c mcpsafe.Call) ([]string, []plan.Part, error) {
	path, err := evalString(ctx, e.Path, c, "path")
	if err != nil {
		return nil, nil, err
	}
	content, err := evalString(ctx, e.Content, c, "content")
	if err != nil {
		return nil, nil, err
	}
	old, exists, err := s.readCurrent(ctx, e.Read, c)
	if err != nil {
		return nil, nil, err
	}
	n := lineCount(content)
	part := plan.Part{Diff: &plan.Diff{Path: path, Old: old, New: content}, Shows: e.Shows}
	var detail string
	if exists {
		part.Title = "Overwrite " + prompt.Quote(path)
		detail = fmt.Sprintf("effect: overwrites %s, which exists (%s now, %d after)", prompt.Quote(path), lineWord(lineCount(old)), n)
	} else {
		part.Title = "Create " + prompt.Quote(path)
		detail = fmt.Sprintf("effect: creates %s, which does not exist yet (%s)", prompt.Quote(path), lineWord(n))
	}
	return []string{detail}, []plan.Part{part}, nil
}

func (s *Server) readCurrent(ctx context.Context, r *Resolver, c mcpsafe.Call) (string, bool, error) {
	res, text, err := s.callReadOnly(ctx, r, c, mcpsafe.ReasonPreviewFailed, "effect.write.read")
	if err != nil {
		return "", false, err
	}
	if res.IsError {
		if missing(text) {
			return "", false, nil
		}
		return "", false, mcpsafe.Refuse(mcpsafe.ReasonPreviewFailed, "effect.write.read %s reported an error: %s", r.Tool, prompt.Quote(text))
	}
	if m, ok := res.StructuredContent.(map[string]any); ok {
		if v, ok := m["content"].(string); ok {
			return v, true, nil
		}
	}
	return text, true, nil
}

func missing(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "enoent") || strings.Contains(t, "no such file")
}

func (s *Server) dryRun(ctx context.Context, name string, e *Effect, c mcpsafe.Call) ([]string, []plan.Part, error) {
	args := map[string]json.RawMessage{}
	if len(c.Arguments) > 0 {
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			return nil, nil, err
		}
	}
	maps.Copy(args, e.DryRun)
	res, err := s.Upstream.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, nil, mcpsafe.Refuse(mcpsafe.ReasonPreviewFailed, "the dry run of %s failed: %v", name, err)
	}
	text := resultText(res)
	if res.IsError {
		return nil, nil, mcpsafe.Refuse(mcpsafe.ReasonPreviewFailed, "the dry run of %s reported an error, so the call would fail: %s", name, prompt.Quote(text))
	}
	keys := slices.Sorted(maps.Keys(e.DryRun))
	part := plan.Part{Title: "The change, as a dry run of " + prompt.Quote(name) + " shows it", Diff: &plan.Diff{Unified: text}, Shows: e.Shows}
	return []string{"effect: as " + prompt.Quote(name) + " reports it when called with " + strings.Join(keys, ", ") + " set (it changed nothing)"}, []plan.Part{part}, nil
}

// evalString evaluates effect.write's key: a string, or a refusal.
func evalString(ctx context.Context, prg cel.Program, c mcpsafe.Call, key string) (string, error) {
	v, err := eval(ctx, prg, c, nil)
	if err == nil {
		if str, ok := v.(types.String); ok {
			return string(str), nil
		}
		err = errors.New("the expression did not yield a string")
	}
	return "", mcpsafe.Refuse(mcpsafe.ReasonPreviewFailed, "effect.write.%s: %v", key, err)
}

func lineCount(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// previewFor describes a call: the policy's template when there is one
// (argument values quoted by prompt.Quote), the server by the name a
// person knows it by, the effect when the policy computes one, and the
// state a resolver reported. The arguments themselves are not listed
// here: the gate shows every one of them, in full, once.
func (s *Server) previewFor(name string, tp *ToolPolicy) func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
	return func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
		var args map[string]json.RawMessage
		if err := json.Unmarshal(previewArguments(c, tp), &args); err != nil {
			return mcpsafe.Plan{}, fmt.Errorf("arguments: %w", err)
		}
		quoted := make(map[string]string, len(args))
		for k, v := range args {
			quoted[k] = quoteJSON(v)
		}
		plan := mcpsafe.Plan{
			Summary: fmt.Sprintf("Call %s on %s", prompt.Quote(name), prompt.Quote(s.serverName)),
			Details: []string{s.serverLine},
		}
		if tp != nil && tp.Preview != nil {
			var b strings.Builder
			if err := tp.Preview.Execute(&b, quoted); err != nil {
				return mcpsafe.Plan{}, mcpsafe.Refuse(mcpsafe.ReasonPreviewFailed, "the policy's preview template failed: %v", err)
			}
			plan.Summary = oneLine(b.String())
		}
		if m := s.member; m.name != "" && m.prefix == "" {
			// The journal keeps the summary and the tool's name; a bare
			// name does not say which server of the gateway it was.
			plan.Summary += " (gateway server " + prompt.Quote(m.name) + ")"
		}
		if tp != nil && tp.Effect != nil {
			details, parts, err := s.effect(ctx, name, tp.Effect, c)
			if err != nil {
				return mcpsafe.Plan{}, err
			}
			plan.Details = append(plan.Details, details...)
			plan.Parts = parts
		}
		plan.Details = append(plan.Details, stateLines(r)...)
		return plan, nil
	}
}

// personName is the upstream server as a person knows it: the name the
// operator gave it (the policy's name:, the gateway's name for it), else
// the upstream's own title or name, else the audience (which, derived,
// ends in a hash: only when there is nothing better).
func personName(given string, info *mcp.Implementation, audience string) string {
	if info == nil {
		info = &mcp.Implementation{}
	}
	return cmp.Or(given, info.Title, info.Name, audience)
}

func lineWord(n int) string {
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

// quoteJSON renders a string argument as its quoted value and anything
// else as its quoted compact JSON.
func quoteJSON(v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return prompt.Quote(s)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return prompt.Quote(string(v))
	}
	return prompt.Quote(b.String())
}

// oneLine keeps an operator's multi-line template on one line. Argument
// values are already escaped by prompt.Quote and hold no raw line breaks,
// and their spaces are left alone.
func oneLine(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}
