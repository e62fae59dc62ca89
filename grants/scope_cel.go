package grants

import "context"

// Evaluator compiles the CEL of grant scopes (Scope.CEL). Set one in
// mcpsafe.Options.GrantCEL: package grants/celscope provides it, and is the
// only package that links cel-go. Without one, a gate evaluates only the
// scope it always offers, "exactly these arguments" (args_digest == "..."),
// and refuses to register a tool whose grant policy derives other scopes.
type Evaluator interface {
	// Compile checks src and returns its Match, or an error saying what
	// is wrong with it.
	Compile(src string) (Match, error)
}

// Match evaluates one compiled scope on a call. Only true with a nil error
// fits; the gate recovers a panic as an error.
type Match func(ctx context.Context, in Input) (bool, error)

// Input is what a scope sees of a later call: the tool, the principal, the
// canonical arguments and their digest, and the resolved state.
type Input struct {
	Tool       string
	Principal  string
	Args       map[string]any
	ArgsDigest string
	Resolved   map[string]any
}
