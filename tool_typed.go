package mcpsafe

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolFor is a gated tool with typed arguments and state, the way
// mcp.AddTool types a handler: the gate decodes the checked arguments into
// In, and Resolve returns a State, which Preview and Execute receive as it
// is. Register it with Register.
//
// The State is bound into the approval as its JSON encoding
// (encoding/json): two States that encode alike are the same state to the
// gate, and a field that does not encode (unexported, or tagged "-") is
// not part of what the approval binds. Resolve runs again right before
// Execute, and Execute receives that State, so anything it acts on must be
// in the encoding. Rules, GrantPolicy.Scopes and the CEL of grant scopes
// read the State as a Resolved: its JSON object, decoded (nil when it does
// not encode as an object).
type ToolFor[In, State any] struct {
	// Tool names and describes the tool and holds its policy. Its
	// InputSchema, when nil, is inferred from In as mcp.AddTool infers
	// it (jsonschema.For, of the element type for a pointer: the
	// struct's json tags, descriptions from jsonschema tags, fields
	// without omitempty required, no other properties). Its Resolve,
	// Preview and Execute must be nil: the typed ones below replace them.
	Tool

	// Resolve looks up what the arguments point at. Optional; when set,
	// an error or a zero State (a nil or empty map or slice) refuses the
	// call. Without it, Preview and Execute get the zero State and the
	// approval binds no state.
	Resolve func(ctx context.Context, c Call, in In) (State, error)
	// Preview describes the call. It must change nothing.
	Preview func(ctx context.Context, c Call, in In, s State) (Plan, error)
	// Execute runs the approved call with the State resolved again right
	// before it, which matched the approved one. Approval.Resolved is nil.
	// Its errors are handled as Tool.Execute's (a *Refusal is that
	// refusal, a *jsonrpc.Error reaches the client as it is).
	Execute func(ctx context.Context, c Call, in In, s State, a Approval) (*mcp.CallToolResult, error)
}

// Register adds a typed tool to server behind g, as Gate.Register does
// for a Tool, and as mcp.AddTool does for a typed handler: the input
// schema is inferred from In unless t.InputSchema is set, the checked
// arguments (canonical, strict, schema-valid) are decoded into In once per
// call (arguments that do not decode refuse it, arguments_invalid), and
// the State is bound into the approval as its JSON (see ToolFor).
func Register[In, State any](g *Gate, server *mcp.Server, t ToolFor[In, State]) error {
	if t.Tool.Resolve != nil || t.Tool.Preview != nil || t.Tool.Execute != nil {
		return fmt.Errorf("mcpsafe: tool %q: set Resolve, Preview and Execute on the ToolFor, not on its Tool", t.Name)
	}
	if t.Preview == nil || t.Execute == nil {
		return fmt.Errorf("mcpsafe: tool %q needs Preview and Execute", t.Name)
	}
	tool := t.Tool
	if tool.InputSchema == nil {
		rt := reflect.TypeFor[In]()
		if rt.Kind() == reflect.Pointer {
			rt = rt.Elem() // as mcp.AddTool: a *T takes T's schema
		}
		s, err := jsonschema.ForType(rt, nil)
		if err != nil {
			return fmt.Errorf("mcpsafe: tool %q: input schema from %v: %w", t.Name, rt, err)
		}
		tool.InputSchema = s
	}
	return g.register(server, tool, typedSteps(t))
}

// steps are a gated tool's functions over untyped arguments and state: a
// Tool's own (its state a Resolved), or a ToolFor's (In and State).
type steps struct {
	// decode reads the checked arguments as a ToolFor's In; nil for a
	// Tool, whose functions read Call.Arguments.
	decode  func(args json.RawMessage) (any, error)
	resolve func(ctx context.Context, c Call, in any) (any, error) // nil: no Resolve
	preview func(ctx context.Context, c Call, in, st any) (Plan, error)
	// execute takes the call and the approval by pointer: they are large,
	// and each by-value hop on the way to Execute is stack while it runs.
	execute func(ctx context.Context, c *Call, in, st any, a *Approval) (*mcp.CallToolResult, error)
}

func untypedSteps(t Tool) steps {
	s := steps{
		preview: func(ctx context.Context, c Call, _, st any) (Plan, error) {
			return t.Preview(ctx, c, as[Resolved](st))
		},
		execute: func(ctx context.Context, c *Call, _, _ any, a *Approval) (*mcp.CallToolResult, error) {
			return t.Execute(ctx, *c, *a)
		},
	}
	if t.Resolve != nil {
		s.resolve = func(ctx context.Context, c Call, _ any) (any, error) {
			r, err := t.Resolve(ctx, c)
			return r, err
		}
	}
	return s
}

func typedSteps[In, State any](t ToolFor[In, State]) steps {
	s := steps{
		decode: func(args json.RawMessage) (any, error) {
			var in In
			err := json.Unmarshal(args, &in)
			return in, err
		},
		preview: func(ctx context.Context, c Call, in, st any) (Plan, error) {
			return t.Preview(ctx, c, as[In](in), as[State](st))
		},
		execute: func(ctx context.Context, c *Call, in, st any, a *Approval) (*mcp.CallToolResult, error) {
			return t.Execute(ctx, *c, as[In](in), as[State](st), *a)
		},
	}
	if t.Resolve != nil {
		s.resolve = func(ctx context.Context, c Call, in any) (any, error) {
			return t.Resolve(ctx, c, as[In](in))
		}
	}
	return s
}

// as is v as a T, or T's zero value when v is nil (no state resolved).
// The gate only ever hands a step what the same tool's steps produced.
func as[T any](v any) T {
	t, _ := v.(T)
	return t
}

// state is what a tool's Resolve returned, and the same as rules, grant
// scopes and CEL read it.
type state struct {
	v        any      // a Tool's Resolved, a ToolFor's State; nil without Resolve
	resolved Resolved // v itself for a Tool; v's JSON object for a ToolFor that has rules or grants
}

// empty reports whether a resolved state is nothing: nil, a zero value, or
// an empty map or slice.
func empty(v any) bool {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() {
		return true
	}
	switch rv.Kind() {
	case reflect.Map, reflect.Slice:
		return rv.Len() == 0
	}
	return rv.IsZero()
}

// stateOf pairs a resolved value with its Resolved view. A ToolFor's State
// is converted only when something reads it as a Resolved.
func (t *gatedTool) stateOf(v any) (state, error) {
	if r, ok := v.(Resolved); ok {
		return state{v: v, resolved: r}, nil
	}
	if v == nil || !t.readsResolved() {
		return state{v: v}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return state{}, err
	}
	var r Resolved
	if json.Unmarshal(b, &r) != nil {
		r = nil // not a JSON object
	}
	return state{v: v, resolved: r}, nil
}

// readsResolved reports whether anything reads t's state as a Resolved.
func (t *gatedTool) readsResolved() bool {
	return len(t.Deny)+len(t.Allow)+len(t.AutoApprove) > 0 || t.Grants != nil
}
