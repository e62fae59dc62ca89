package proxy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (s *Server) effect(ctx context.Context, name string, e *policy.Effect, c mcpsafe.Call) ([]string, []plan.Part, error) {
	switch {
	case e.DryRun != nil:
		return s.dryRun(ctx, name, e, c)
	case e.Source != nil:
		return s.moveEffect(ctx, name, e, c)
	}
	return s.writeEffect(ctx, e, c)
}

func (s *Server) writeEffect(ctx context.Context, e *policy.Effect, c mcpsafe.Call) ([]string, []plan.Part, error) {
	path, err := evalPath(ctx, e.Path, c, "effect.write.path")
	if err != nil {
		return nil, nil, err
	}
	content, err := evalString(ctx, e.Content, c, "effect.write.content")
	if err != nil {
		return nil, nil, err
	}
	old, exists, err := s.readCurrent(ctx, e.Read, c, "effect.write.read")
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
		detail = fmt.Sprintf("effect: creates %s, which does not exist yet, as %s reports (%s)", prompt.Quote(path), prompt.Quote(e.Read.Tool), lineWord(n))
	}
	return []string{detail}, []plan.Part{part}, nil
}

// moveEffect says where a file goes and whether the destination exists:
// the move replaces it, is refused, or (replaces: not set) may replace
// it, in those words.
func (s *Server) moveEffect(ctx context.Context, name string, e *policy.Effect, c mcpsafe.Call) ([]string, []plan.Part, error) {
	src, err := evalPath(ctx, e.Source, c, "effect.move.source")
	if err != nil {
		return nil, nil, err
	}
	dst, err := evalPath(ctx, e.Destination, c, "effect.move.destination")
	if err != nil {
		return nil, nil, err
	}
	_, exists, err := s.readCurrent(ctx, e.Read, c, "effect.move.read")
	if err != nil {
		return nil, nil, err
	}
	move := fmt.Sprintf("effect: moves %s to %s, ", prompt.Quote(src), prompt.Quote(dst))
	switch {
	case !exists:
		return []string{move + "which does not exist yet, as " + prompt.Quote(e.Read.Tool) + " reports"}, nil, nil
	case e.Replaces == nil:
		return []string{move + "which exists, as " + prompt.Quote(e.Read.Tool) + " reports: " + prompt.Quote(name) + " may replace it (the policy does not say whether it does)"}, nil, nil
	case *e.Replaces:
		return []string{move + "which exists, as " + prompt.Quote(e.Read.Tool) + " reports, and is replaced: what it holds now is lost"}, nil, nil
	}
	return nil, nil, mcpsafe.Refuse(mcpsafe.ReasonPreviewFailed, "the destination %s exists, and %s does not replace it (effect.move.replaces: false), so the call would fail; choose another destination", prompt.Quote(dst), prompt.Quote(name))
}

// readCurrent reads through r: what the tool answered and true, or false
// when its error says there is nothing there (ENOENT, "no such file").
// Any other error refuses the call.
func (s *Server) readCurrent(ctx context.Context, r *policy.Resolver, c mcpsafe.Call, what string) (string, bool, error) {
	res, text, err := s.callReadOnly(ctx, r, c, mcpsafe.ReasonPreviewFailed, what)
	if err != nil {
		return "", false, err
	}
	if res.IsError {
		if missing(text) {
			return "", false, nil
		}
		return "", false, mcpsafe.Refuse(mcpsafe.ReasonPreviewFailed, "%s %s reported an error: %s", what, r.Tool, prompt.Quote(text))
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

func (s *Server) dryRun(ctx context.Context, name string, e *policy.Effect, c mcpsafe.Call) ([]string, []plan.Part, error) {
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

// evalString evaluates an effect's key: a string, or a refusal.
func evalString(ctx context.Context, prg cel.Program, c mcpsafe.Call, key string) (string, error) {
	str, err := policy.EvalString(ctx, prg, c)
	if err != nil {
		return "", mcpsafe.Refuse(mcpsafe.ReasonPreviewFailed, "%s: %v", key, err)
	}
	return str, nil
}

// evalPath evaluates an effect's path: a clean one, or a refusal.
func evalPath(ctx context.Context, prg cel.Program, c mcpsafe.Call, key string) (string, error) {
	p, err := evalString(ctx, prg, c, key)
	if err != nil {
		return "", err
	}
	if why := unclean(p); why != "" {
		return "", mcpsafe.Refuse(mcpsafe.ReasonInvalidPath, "%s %s %s: the tool that reads it and the tool that changes it may resolve it differently, so what the call changes cannot be shown; give the path without it", key, prompt.Quote(p), why)
	}
	return p, nil
}

// unclean says why p is not a clean path ("" when it is): no "." or ".."
// element and no empty one (no "//", no trailing separator), with "/" and
// "\" both separators (an upstream on Windows takes either). A UNC path
// (\\host\share) is refused with the rest.
func unclean(p string) string {
	if p == "/" || p == `\` {
		return ""
	}
	parts := strings.Split(strings.ReplaceAll(p, `\`, "/"), "/")
	for i, el := range parts {
		switch {
		case p == "":
			return "is empty"
		case el == "." || el == "..":
			return "has a " + prompt.Quote(el) + " element"
		case el == "" && i == len(parts)-1:
			return "ends in a separator"
		case el == "" && i > 0:
			return "has two separators in a row"
		}
	}
	return ""
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
func (s *Server) previewFor(name string, tp *policy.Tool) func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
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

// previewArguments is the copy of a call's arguments that its plan (the
// policy's preview template and the argument lines) is built from:
// sensitive values redacted by name, the tool's secret_fields and the
// common names journal.Redact knows. By name and not only by value (as the
// gate does): a template may show part of a value ({{printf "%.6s"
// .password}}), which no value match would catch.
func previewArguments(c mcpsafe.Call, tp *policy.Tool) json.RawMessage {
	var extra []string
	if tp != nil {
		extra = tp.SecretFields
	}
	return journal.Redact(c.Arguments, extra)
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
