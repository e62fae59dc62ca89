// Resolvers: the read-only upstream tools that report the current state
// of what a gated call points at, and how a plan shows that state.
package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// resolverFor calls a read-only upstream tool for the current state of
// what a call points at. An upstream error, an error result or an empty
// result refuses the call (the gate makes any error a refusal).
func (s *Server) resolverFor(r *policy.Resolver) func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) {
	return func(ctx context.Context, c mcpsafe.Call) (mcpsafe.Resolved, error) {
		res, text, err := s.callReadOnly(ctx, r, c, mcpsafe.ReasonResolverFailed, "resolver")
		if err != nil {
			return nil, err
		}
		if res.IsError {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s reported an error: %s", r.Tool, prompt.Quote(text))
		}
		out := mcpsafe.Resolved{}
		if strings.TrimSpace(text) != "" {
			out["text"] = text
		}
		if res.StructuredContent != nil {
			// Round-trip so that the value is plain JSON data for CEL and
			// for the digest.
			var v any
			b, err := json.Marshal(res.StructuredContent)
			if err == nil {
				err = json.Unmarshal(b, &v)
			}
			if err != nil {
				return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s: %v", r.Tool, err)
			}
			if v != nil {
				out["structured"] = v
			}
		}
		if len(out) == 0 {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s returned nothing", r.Tool)
		}
		out["tool"] = r.Tool
		if out, err = bound(r, out); err != nil {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "%v", err)
		}
		return out, nil
	}
}

// callReadOnly calls r's tool over c for a resolver or an effect's read
// (what), which refuses the call with reason unless the tool still passes
// through, read-only (checked at startup, and again here: upstream may have
// dropped its readOnlyHint since, and neither may run a tool that changes
// something without approval) and answers on its own. An error result is
// the caller's to judge.
func (s *Server) callReadOnly(ctx context.Context, r *policy.Resolver, c mcpsafe.Call, reason, what string) (*mcp.CallToolResult, string, error) {
	refuse := func(format string, a ...any) (*mcp.CallToolResult, string, error) {
		return nil, "", mcpsafe.Refuse(reason, "%s %s"+format, append([]any{what, r.Tool}, a...)...)
	}
	if !s.passesThrough(r.Tool) {
		return refuse(" is not a read-only upstream tool")
	}
	args, err := r.Arguments(ctx, c)
	if err != nil {
		return refuse(": %v", err)
	}
	res, err := s.Upstream.CallTool(ctx, &mcp.CallToolParams{Name: r.Tool, Arguments: args})
	if err != nil {
		return refuse(" failed: %v", err)
	}
	if res.NeedsInput() {
		return refuse(" asked for input; it must answer on its own")
	}
	return res, resultText(res), nil
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// stateLines shows what a resolver reported, one field a line and each
// whole: a state cut down to one line could hide the part that matters
// (the gate refuses a plan too large to show whole instead). A line of
// text that is no field is shown as it is.
func stateLines(r mcpsafe.Resolved) []string {
	tool, _ := r["tool"].(string)
	var out []string
	reportEntries(r, func(k string, v any) {
		s, isString := v.(string)
		if !isString {
			b, _ := json.Marshal(v)
			s = string(b)
		}
		if k == "" {
			out = append(out, "state: "+prompt.QuoteWhole(s))
		} else {
			out = append(out, "state "+prompt.QuoteWhole(k)+" = "+prompt.QuoteWhole(s))
		}
	})
	if len(out) == 0 {
		return nil
	}
	return append([]string{"current state, as " + prompt.Quote(tool) + " reports it:"}, out...)
}

// reportEntries walks a resolver's report r: the fields the policy binds
// (resolver.bind), else its structured content m, else its text: the keys
// of m in order, where a string value holding several lines (one field
// wrapping a text report, as server-filesystem's "content") is read as
// lines of text. A line "key: value", the key one word, is that field; any
// other line that is not blank comes with the key "".
func reportEntries(r mcpsafe.Resolved, f func(k string, v any)) {
	m, _ := r["structured"].(map[string]any)
	if fields, bound := r["fields"].(map[string]any); bound {
		m = fields
	}
	text, _ := r["text"].(string)
	lines := func(s string) {
		for _, line := range strings.Split(s, "\n") {
			line = strings.TrimRight(line, "\r")
			if k, v, ok := strings.Cut(line, ": "); ok && k != "" && !strings.ContainsAny(k, " \t") {
				f(k, v)
			} else if strings.TrimSpace(line) != "" {
				f("", line)
			}
		}
	}
	if len(m) == 0 {
		lines(text)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if s, ok := m[k].(string); ok && strings.Contains(s, "\n") {
			lines(s)
		} else {
			f(k, m[k])
		}
	}
}

// bound keeps, of a resolver's report, only the fields the policy binds
// (Bind): the state the approval is bound to and checked against again
// before execute. A bound field the report lacks is an error (the gate
// refuses the call): binding nothing would approve any state.
func bound(rs *policy.Resolver, r mcpsafe.Resolved) (mcpsafe.Resolved, error) {
	if len(rs.Bind) == 0 {
		return r, nil
	}
	all := map[string]any{}
	reportEntries(r, func(k string, v any) {
		if k != "" {
			all[k] = v
		}
	})
	fields := make(map[string]any, len(rs.Bind))
	for _, name := range rs.Bind {
		v, ok := all[name]
		if !ok {
			return nil, fmt.Errorf("resolver %s reported no field %q, which the policy binds", rs.Tool, name)
		}
		fields[name] = v
	}
	return mcpsafe.Resolved{"tool": r["tool"], "fields": fields}, nil
}
