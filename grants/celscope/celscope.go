// Package celscope evaluates the CEL of grant scopes with cel-go: the
// grants.Evaluator to set in mcpsafe.Options.GrantCEL when a tool's grant
// policy derives scopes of its own (the files server and the proxy set it
// themselves). It is apart from the root so that a program that offers no
// such scopes does not link cel-go (about 10 MiB). Scopes compile in
// mcpsafe's one CEL environment, under its one cost limit
// (internal/celenv), the same a proxy policy's rules compile in.
//
//	opts := mcpsafe.Options{Audience: "notes@host", Journal: j, GrantCEL: celscope.New()}
package celscope

import (
	"context"
	"fmt"

	"cel.dev/cel-go/common/types"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/internal/celenv"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// New returns the evaluator. Compiled scopes are cached by the gate.
func New() grants.Evaluator { return evaluator{} }

type evaluator struct{}

func (evaluator) Compile(src string) (grants.Match, error) {
	e, err := celenv.Env()
	if err != nil {
		return nil, err
	}
	ast, iss := e.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("CEL %s: %w", prompt.Quote(src), iss.Err())
	}
	prg, err := celenv.Program(ast)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, in grants.Input) (bool, error) {
		out, _, err := prg.ContextEval(ctx, celenv.Vars(in))
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
	e, err := celenv.Env()
	if err != nil {
		return err
	}
	if _, iss := e.Compile(src); iss != nil && iss.Err() != nil {
		return iss.Err()
	}
	return nil
}
