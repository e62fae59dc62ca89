package mcpsafe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"

	"github.com/mcpsafe/mcpsafe/grants"
)

// exactScope is the CEL of the scope every grant offer includes, "exactly
// these arguments" (see offerWords), which the gate evaluates itself when
// Options.GrantCEL is nil.
var exactScope = regexp.MustCompile(`^args_digest == "([0-9a-f]+)"$`)

// errNoCEL: a scope other than "exactly these arguments" with no evaluator.
var errNoCEL = errors.New("this gate evaluates no grant scope CEL but \"exactly these arguments\": set Options.GrantCEL (package grants/celscope)")

func (g *Gate) program(src string) (grants.Match, error) {
	if p, ok := g.programs.Load(src); ok {
		return p.(grants.Match), nil
	}
	var m grants.Match
	switch sub := exactScope.FindStringSubmatch(src); {
	case g.opts.GrantCEL != nil:
		var err error
		if m, err = g.opts.GrantCEL.Compile(src); err != nil {
			return nil, err
		}
	case sub != nil:
		digest := sub[1]
		m = func(_ context.Context, in grants.Input) (bool, error) { return in.ArgsDigest == digest, nil }
	default:
		return nil, errNoCEL
	}
	g.programs.Store(src, m)
	return m, nil
}

// fits evaluates a scope on this call. Only the exact bool true fits.
func (g *Gate) fits(ctx context.Context, src string, k *call) (bool, error) {
	match, err := g.program(src)
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
	var fit bool
	err = safely(func() error {
		var err error
		fit, err = match(ctx, grants.Input{
			Tool: k.t.Name, Principal: k.c.Principal, Args: args,
			ArgsDigest: k.c.ArgsDigest, Resolved: res,
		})
		return err
	})
	if err != nil {
		return false, err
	}
	return fit, nil
}
