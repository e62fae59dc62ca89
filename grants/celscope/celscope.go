// Package celscope evaluates the CEL of grant scopes with cel-go: the
// grants.Evaluator to set in mcpsafe.Options.GrantCEL when a tool's grant
// policy derives scopes of its own (the files server and the proxy set it
// themselves). It is apart from the root so that a program that offers no
// such scopes does not link cel-go (about 10 MiB).
//
//	opts := mcpsafe.Options{Audience: "notes@host", Journal: j, GrantCEL: celscope.New()}
package celscope

import (
	"context"
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// env is the environment grant scopes are compiled in.
var env = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("principal", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("args_digest", cel.StringType),
		cel.Variable("resolved", cel.MapType(cel.StringType, cel.DynType)),
	)
})

// costLimit bounds one evaluation of a scope.
const costLimit = 100_000

// New returns the evaluator. Compiled scopes are cached by the gate.
func New() grants.Evaluator { return evaluator{} }

type evaluator struct{}

func (evaluator) Compile(src string) (grants.Match, error) {
	e, err := env()
	if err != nil {
		return nil, err
	}
	ast, iss := e.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("CEL %s: %w", prompt.Quote(src), iss.Err())
	}
	prg, err := e.Program(ast, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, in grants.Input) (bool, error) {
		out, _, err := prg.ContextEval(ctx, map[string]any{
			"tool": in.Tool, "principal": in.Principal, "args": in.Args,
			"args_digest": in.ArgsDigest, "resolved": in.Resolved,
		})
		if err != nil {
			return false, err
		}
		b, ok := out.(types.Bool)
		if !ok {
			return false, fmt.Errorf("the scope yielded %v, not a bool", out)
		}
		return b == types.True, nil
	}, nil
}

// Check compiles a scope's CEL as the gate will, so that a policy file can
// refuse a bad one when it loads rather than at the first call.
func Check(src string) error {
	e, err := env()
	if err != nil {
		return err
	}
	if _, iss := e.Compile(src); iss != nil && iss.Err() != nil {
		return iss.Err()
	}
	return nil
}
