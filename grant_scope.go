package mcpsafe

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// celEnv is the environment grant scopes are compiled in.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("principal", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("args_digest", cel.StringType),
		cel.Variable("resolved", cel.MapType(cel.StringType, cel.DynType)),
	)
})

// celCostLimit bounds one evaluation of a scope.
const celCostLimit = 100_000

func (g *Gate) program(src string) (cel.Program, error) {
	if p, ok := g.programs.Load(src); ok {
		return p.(cel.Program), nil
	}
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("CEL %s: %w", prompt.Quote(src), iss.Err())
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err
	}
	g.programs.Store(src, prg)
	return prg, nil
}

// CheckGrantScope compiles a scope's CEL as the gate will, so that a policy
// file can refuse a bad one when it loads rather than at the first call.
func CheckGrantScope(src string) error {
	env, err := celEnv()
	if err != nil {
		return err
	}
	if _, iss := env.Compile(src); iss != nil && iss.Err() != nil {
		return iss.Err()
	}
	return nil
}

// fits evaluates a scope on this call. Only the exact bool true fits.
func (g *Gate) fits(ctx context.Context, src string, k *call) (bool, error) {
	prg, err := g.program(src)
	if err != nil {
		return false, err
	}
	args := map[string]any{}
	if err := json.Unmarshal(k.c.Arguments, &args); err != nil || args == nil {
		return false, fmt.Errorf("arguments: %v", err)
	}
	res := map[string]any(k.st.resolved)
	if res == nil {
		res = map[string]any{}
	}
	var v any
	err = safely(func() error {
		out, _, err := prg.ContextEval(ctx, map[string]any{
			"tool": k.t.Name, "principal": k.c.Principal, "args": args,
			"args_digest": k.c.ArgsDigest, "resolved": res,
		})
		v = out
		return err
	})
	if err != nil {
		return false, err
	}
	b, ok := v.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the scope yielded %v, not a bool", v)
	}
	return b == types.True, nil
}
