// Package celenv is mcpsafe's one CEL environment and its one cost limit.
// Grant scopes (grants/celscope) and a proxy policy's rules, resolver
// arguments and effects (proxy/policy) all compile here, so an expression
// sees the same variables wherever it is written, and none can run longer
// than another.
package celenv

import (
	"sync"

	"cel.dev/cel-go/cel"
	"github.com/mcpsafe/mcpsafe/grants"
)

// Env is the environment. Its variables are a call's: tool (string),
// principal (string), args (the canonical arguments, a map), args_digest
// (string) and resolved (the resolved state, a map; empty without a
// resolver).
var Env = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("principal", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("args_digest", cel.StringType),
		cel.Variable("resolved", cel.MapType(cel.StringType, cel.DynType)),
	)
})

// CostLimit bounds one evaluation, so that an expression cannot stall a
// call.
const CostLimit = 100_000

// Program plans a compiled expression under CostLimit.
func Program(ast *cel.Ast) (cel.Program, error) {
	e, err := Env()
	if err != nil {
		return nil, err
	}
	return e.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
}

// Vars are the variables of one evaluation: in, by the names Env declares.
func Vars(in grants.Input) map[string]any {
	return map[string]any{
		"tool": in.Tool, "principal": in.Principal, "args": in.Args,
		"args_digest": in.ArgsDigest, "resolved": in.Resolved,
	}
}
