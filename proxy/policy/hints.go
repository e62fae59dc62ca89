package policy

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"text/template/parse"

	"go.yaml.in/yaml/v3"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/toolschema"
)

// Startup help for policy authors: a typo'd key names the key it was
// probably meant to be, and checks that need the upstream's tool list
// (template fields, token mode) run before the proxy serves.

// yamlKeys lists the keys a YAML struct accepts, from its tags.
func yamlKeys(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			out = append(out, k)
		}
	}
	return out
}

var (
	// yamlShapes are the YAML structs of policy and gateway files whose
	// unknown keys explainYAML explains: their keys, and where they stand.
	yamlShapes = map[string]struct {
		keys  []string
		where string
	}{
		"policyFile":      {yamlKeys(policyFile{}), "at the top level"},
		"toolFile":        {yamlKeys(toolFile{}), "in a tool entry"},
		"resolverFile":    {yamlKeys(resolverFile{}), "in a resolver"},
		"gatewayFileYAML": {yamlKeys(gatewayFileYAML{}), "at the top level of the gateway configuration"},
		"serverYAML":      {yamlKeys(serverYAML{}), "in a server entry"},
	}
	// (?s): a decoder message may quote a value that holds a line break.
	lineFirst    = regexp.MustCompile(`(?s)^(?:yaml: )?line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type policy\.(\w+)`)
)

// decodeStrict decodes the one YAML document in data into v: an unknown
// key or a second document is an error. empty: there is no document.
func decodeStrict(source string, data []byte, v any) (empty bool, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		return false, explainYAML(source, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return false, fmt.Errorf("%s:%d: more than one YAML document (a second one starts here)", source, extra.Line)
	}
	return false, nil
}

// explainYAML rewrites the decoder's "field X not found in type
// policy.toolFile" lines into the policy's words with a suggestion, one
// error per line, each starting with source:LINE.
func explainYAML(source string, err error) error {
	te, ok := errors.AsType[*yaml.TypeError](err)
	if !ok {
		// yaml's syntax errors and our UnmarshalYAML errors: "line N: ..."
		if m := lineFirst.FindStringSubmatch(err.Error()); m != nil {
			return fmt.Errorf("%s:%s: %s", source, m[1], m[2])
		}
		return fmt.Errorf("%s: %w", source, err)
	}
	var errs []error
	for _, msg := range te.Errors {
		if m := unknownField.FindStringSubmatch(msg); m != nil {
			shape := yamlShapes[m[3]]
			errs = append(errs, fmt.Errorf("%s:%s: unknown key %q %s (%sknown: %s)", source, m[1], m[2], shape.where, didYouMean(m[2], shape.keys, "%q"), strings.Join(shape.keys, ", ")))
		} else if m := lineFirst.FindStringSubmatch(msg); m != nil {
			errs = append(errs, fmt.Errorf("%s:%s: %s", source, m[1], m[2]))
		} else {
			errs = append(errs, fmt.Errorf("%s: %s", source, msg))
		}
	}
	return errors.Join(errs...)
}

// closest returns the candidate within a small edit distance of s, if
// one is clearly nearest.
func closest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), c); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD <= max(2, len(s)/3) {
		return best
	}
	return ""
}

// didYouMean is "did you mean X? ", X the closest candidate to s shown
// through format ("%q", "args.%s"), or "" when none is close.
func didYouMean(s string, candidates []string, format string) string {
	if c := closest(s, candidates); c != "" {
		return fmt.Sprintf("did you mean "+format+"? ", c)
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// topKey is a top-level key of the document and its value, or nils.
func topKey(root *yaml.Node, key string) (k, v *yaml.Node) {
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		doc := root.Content[0]
		for i := 0; i+1 < len(doc.Content); i += 2 {
			if doc.Content[i].Value == key {
				return doc.Content[i], doc.Content[i+1]
			}
		}
	}
	return nil, nil
}

// keyLine is the line of a top-level key in the document, or 1.
func keyLine(root *yaml.Node, key string) int {
	if k, _ := topKey(root, key); k != nil {
		return k.Line
	}
	return 1
}

// templateFields lists the argument names a preview template reads
// ({{.path}}, {{if .mode}}...).
func templateFields(t *parse.Tree) []string {
	var out []string
	var walk func(parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n != nil {
				for _, c := range n.Nodes {
					walk(c)
				}
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n != nil {
				for _, c := range n.Cmds {
					walk(c)
				}
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			if len(n.Ident) > 0 && !slices.Contains(out, n.Ident[0]) {
				out = append(out, n.Ident[0])
			}
		case *parse.IfNode:
			walk(&n.BranchNode)
		case *parse.RangeNode:
			walk(&n.BranchNode)
		case *parse.WithNode:
			walk(&n.BranchNode)
		case *parse.BranchNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		}
	}
	if t != nil {
		walk(t.Root)
	}
	return out
}

// CheckArgumentNames reports an argument name the upstream tool does not
// have, wherever the policy names one: in the preview template ({{.pth}}:
// every call would fail its preview), in a rule or a resolver argument
// (args.pth: every call would fail the rule, so a deny rule would deny
// them all and an allow or auto-approve rule would never match). One check
// for all three, with the same did-you-mean.
// schema is the upstream tool's input schema.
func (p *Policy) CheckArgumentNames(tp *Tool, schema any) error {
	props, ok := toolschema.Properties(schema)
	if !ok {
		return nil
	}
	var errs []error
	check := func(name, where, hint string, line int) {
		if !slices.Contains(props, name) {
			errs = append(errs, fmt.Errorf("%s:%d: tools.%s.%s: "+hint+" is not an argument of the upstream tool (%sit has: %s)",
				p.Source, line, tp.Name, where, name, didYouMean(name, props, hint), strings.Join(props, ", ")))
		}
	}
	if tp.Preview != nil {
		for _, f := range templateFields(tp.Preview.Tree) {
			check(f, "preview", "{{.%s}}", tp.PreviewLine)
		}
	}
	for _, a := range tp.argRefs {
		check(a.name, a.where, "args.%s", a.line)
	}
	return errors.Join(errs...)
}

// CheckTokenMode reports mode: token on a tool that is irreversible and not
// in allow_token_for: the gate would refuse every call to it.
func (p *Policy) CheckTokenMode(tp *Tool, irreversible bool) error {
	if cmp.Or(tp.Mode, p.Mode) != "token" || !irreversible {
		return nil
	}
	if slices.ContainsFunc(p.AllowTokenFor, func(o mcpsafe.OptIn) bool { return o.Tool == tp.Name }) {
		return nil
	}
	return fmt.Errorf("%s:%d: tools.%s: mode token, but the tool is irreversible and not in allow_token_for, so every call would be refused: add it to allow_token_for, set irreversible: false if it can be undone, or use another mode",
		p.Source, tp.Line, tp.Name)
}
