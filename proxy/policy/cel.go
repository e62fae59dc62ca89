// The policy's CEL: compiling rules, resolver arguments and effects in
// mcpsafe's one environment (internal/celenv), and evaluating them against
// a call and its resolved state.

package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	celast "cel.dev/cel-go/common/ast"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/internal/celenv"
	"go.yaml.in/yaml/v3"
)

// compileExpr compiles one expression, and lists the argument names it
// reads (argNames). Rules must be able to yield a bool: an expression whose
// type is known to be something else is an error.
func compileExpr(env *cel.Env, n *yaml.Node, rule bool) (cel.Program, []string, error) {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return nil, nil, errors.New("expected a CEL expression (a string)")
	}
	ast, iss := env.Compile(n.Value)
	if iss != nil && iss.Err() != nil {
		var msgs []string
		for _, e := range iss.Errors() {
			// Lines inside a block scalar start on the line after its key.
			line := n.Line + e.Location.Line() - 1
			if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
				line++
			}
			msgs = append(msgs, fmt.Sprintf("line %d, column %d of the expression (file line %d): %s", e.Location.Line(), e.Location.Column()+1, line, e.Message))
		}
		return nil, nil, fmt.Errorf("CEL: %s", strings.Join(msgs, "; "))
	}
	if rule {
		if t := ast.OutputType(); !t.IsExactType(types.BoolType) && !t.IsExactType(types.DynType) {
			return nil, nil, fmt.Errorf("a rule must evaluate to a bool, this one is %s", t)
		}
	}
	prg, err := celenv.Program(ast)
	return prg, argNames(ast.NativeRep().Expr()), err
}

// argNames lists the argument names an expression reads by name:
// args.NAME, has(args.NAME) and args["NAME"]. A name computed at run time
// (args[x]) cannot be checked and is not listed.
func argNames(e celast.Expr) []string {
	var out []string
	add := func(name string) {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	isArgs := func(e celast.Expr) bool {
		return e.Kind() == celast.IdentKind && e.AsIdent() == "args"
	}
	celast.PreOrderVisit(e, celast.NewExprVisitor(func(e celast.Expr) {
		switch e.Kind() {
		case celast.SelectKind:
			if sel := e.AsSelect(); isArgs(sel.Operand()) {
				add(sel.FieldName())
			}
		case celast.CallKind:
			c := e.AsCall()
			if (c.FunctionName() == operators.Index || c.FunctionName() == operators.OptIndex) && len(c.Args()) == 2 && isArgs(c.Args()[0]) && c.Args()[1].Kind() == celast.LiteralKind {
				if s, ok := c.Args()[1].AsLiteral().(types.String); ok {
					add(string(s))
				}
			}
		}
	}))
	return out
}

// boolRule matches only when the expression yields exactly the CEL bool
// true. A string "true", a 1, an error or a missing key is no match.
func boolRule(prg cel.Program) func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (bool, error) {
	return func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (bool, error) {
		v, err := eval(ctx, prg, c, r)
		if err != nil {
			return false, err
		}
		b, ok := v.(types.Bool)
		if !ok {
			return false, fmt.Errorf("the rule yielded %s, not a bool", v.Type().TypeName())
		}
		return b == types.True, nil
	}
}

// EvalString evaluates an expression that yields a string (an effect's
// path or content) over a call: the string, or why not.
func EvalString(ctx context.Context, prg cel.Program, c mcpsafe.Call) (string, error) {
	v, err := eval(ctx, prg, c, nil)
	if err != nil {
		return "", err
	}
	if s, ok := v.(types.String); ok {
		return string(s), nil
	}
	return "", errors.New("the expression did not yield a string")
}

// eval runs prg over a call: its tool, principal, arguments and their
// digest, and resolved state.
func eval(ctx context.Context, prg cel.Program, c mcpsafe.Call, r mcpsafe.Resolved) (ref.Val, error) {
	var args map[string]any
	if len(c.Arguments) > 0 {
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
	}
	if args == nil {
		args = map[string]any{}
	}
	if r == nil {
		r = mcpsafe.Resolved{}
	}
	v, _, err := prg.ContextEval(ctx, celenv.Vars(grants.Input{Tool: c.Tool, Principal: c.Principal, Args: args, ArgsDigest: c.ArgsDigest, Resolved: r}))
	if err != nil {
		return nil, err
	}
	if types.IsError(v) || types.IsUnknown(v) {
		return nil, fmt.Errorf("expression yielded %v", v)
	}
	return v, nil
}
