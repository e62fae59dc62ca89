package policy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"cel.dev/cel-go/cel"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/mcpsafe/mcpsafe"
)

// Resolver names a read-only upstream tool that looks up the current state
// of what a call points at, and how to build its arguments from the call.
type Resolver struct {
	Tool string
	Line int
	args []resolverArg
	// Bind names the fields of the resolver's report that bind an
	// approval (bind: in the file). Empty: the whole report is bound, so
	// any change to it voids the approval, including a change that
	// reading the target makes (a last-access time).
	Bind []string
}

type resolverArg struct {
	name string
	prg  cel.Program
}

// Arguments evaluates the resolver's argument expressions over the call
// and returns the upstream call's arguments as JSON.
func (rs *Resolver) Arguments(ctx context.Context, c mcpsafe.Call) (json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	for _, a := range rs.args {
		v, err := eval(ctx, a.prg, c, nil)
		if err != nil {
			return nil, fmt.Errorf("resolver argument %s: %w", a.name, err)
		}
		native, err := v.ConvertToNative(reflect.TypeFor[*structpb.Value]())
		if err != nil {
			return nil, fmt.Errorf("resolver argument %s: %w", a.name, err)
		}
		b, err := protojson.Marshal(native.(*structpb.Value))
		if err != nil {
			return nil, fmt.Errorf("resolver argument %s: %w", a.name, err)
		}
		out[a.name] = b
	}
	return json.Marshal(out)
}

// bindFields checks a resolver's bind: list: field names as the resolver
// reports them ("size", "modified"), each once.
func bindFields(n yaml.Node) ([]string, error) {
	if n.IsZero() {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		return nil, errors.New("want a list of the report's field names, e.g. [size, modified] (leave bind out to bind the whole report)")
	}
	var out []string
	for _, v := range n.Content {
		name := strings.TrimSpace(v.Value)
		if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || name == "" || name != v.Value || strings.ContainsAny(name, " \t\n:") {
			return nil, fmt.Errorf("line %d: %q is not a field name (a word such as size or modified)", v.Line, v.Value)
		}
		if slices.Contains(out, name) {
			return nil, fmt.Errorf("line %d: %q is named twice", v.Line, name)
		}
		out = append(out, name)
	}
	return out, nil
}
