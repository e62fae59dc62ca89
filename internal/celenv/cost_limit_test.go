package celenv

import (
	"context"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/grants"
)

// One evaluation stops at CostLimit: an expression whose work grows with
// the arguments (a comparison of every pair of a list) fails on a long
// list, with the same expression on a short list as the control. Every
// variable Env declares is bound by Vars: an expression reading all of
// them yields what the input says.
func TestCostLimitStopsAnExpensiveExpression(t *testing.T) {
	env, err := Env()
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(`args.xs.all(x, args.xs.all(y, x + y >= 0))`)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prg, err := Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	list := func(n int) []any {
		xs := make([]any, n)
		for i := range xs {
			xs[i] = int64(i)
		}
		return xs
	}
	eval := func(n int) (any, error) {
		v, _, err := prg.ContextEval(context.Background(), Vars(grants.Input{Args: map[string]any{"xs": list(n)}}))
		if err != nil {
			return nil, err
		}
		return v.Value(), nil
	}
	if v, err := eval(10); err != nil || v != true {
		t.Fatalf("control, 10 elements: %v, %v", v, err)
	}
	if v, err := eval(2000); err == nil || !strings.Contains(err.Error(), "cost") {
		t.Fatalf("2000 elements (4M comparisons): %v, %v; want a cost limit error", v, err)
	}

	ast, iss = env.Compile(`tool == "t" && principal == "user:p" && args.a == 1 && args_digest == "d" && resolved.r == "s"`)
	if iss.Err() != nil {
		t.Fatal(iss.Err())
	}
	prg, err = Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	in := grants.Input{Tool: "t", Principal: "user:p", Args: map[string]any{"a": int64(1)}, ArgsDigest: "d", Resolved: map[string]any{"r": "s"}}
	if v, _, err := prg.Eval(Vars(in)); err != nil || v.Value() != true {
		t.Fatalf("every variable bound: %v, %v", v, err)
	}
	in.Principal = "user:q"
	if v, _, err := prg.Eval(Vars(in)); err != nil || v.Value() != false {
		t.Fatalf("another principal: %v, %v", v, err)
	}
}
