package mcpsafe

import (
	"bytes"

	"github.com/mcpsafe/mcpsafe/internal/canon"
)

// fastSchema decides, for the usual shape of an input schema (an object
// with typed properties, required names, additionalProperties false), that
// arguments are valid without the general validator: jsonschema-go's
// validate has a 4 KiB frame per level, so every call it checked grew the
// request goroutine's stack once more, and it needs the arguments decoded
// a second time. It only ever says "valid"; anything it does not model
// exactly (another keyword, a number whose type it cannot tell from its
// spelling, an invalid call) goes to the general validator, which stays
// the judge of every refusal.
type fastSchema struct {
	props    map[string]string // property name → JSON type, "" for any
	required []string
	closed   bool // additionalProperties: false
}

// The keywords fastSchema models; a schema with any other is not fast.
var (
	fastTopKeys  = map[string]bool{"type": true, "properties": true, "required": true, "additionalProperties": true, "description": true, "title": true}
	fastPropKeys = map[string]bool{"type": true, "description": true, "title": true}
	fastTypes    = map[string]bool{"string": true, "boolean": true, "null": true, "object": true, "array": true, "number": true, "integer": true}
)

// newFastSchema returns nil when the schema (as JSON, from withTokenField)
// has anything the fast check does not model.
func newFastSchema(schema map[string]any) *fastSchema {
	for k, v := range schema {
		if !fastTopKeys[k] {
			return nil
		}
		if k == "description" || k == "title" {
			if _, ok := v.(string); !ok {
				return nil
			}
		}
	}
	if schema["type"] != "object" {
		return nil
	}
	f := &fastSchema{props: map[string]string{}}
	switch ap := schema["additionalProperties"].(type) {
	case nil:
		if _, has := schema["additionalProperties"]; has {
			return nil
		}
	case bool:
		f.closed = !ap
	default:
		return nil
	}
	if p, has := schema["properties"]; has {
		props, ok := p.(map[string]any)
		if !ok {
			return nil
		}
		for name, ps := range props {
			m, ok := ps.(map[string]any)
			if !ok {
				return nil
			}
			for k, v := range m {
				s, isStr := v.(string)
				if !fastPropKeys[k] || !isStr || (k == "type" && !fastTypes[s]) {
					return nil
				}
			}
			f.props[name], _ = m["type"].(string)
		}
	}
	if r, has := schema["required"]; has {
		req, ok := r.([]any)
		if !ok {
			return nil
		}
		for _, n := range req {
			s, ok := n.(string)
			if !ok {
				return nil
			}
			f.required = append(f.required, s)
		}
	}
	return f
}

// valid reports whether the members (canonical values) certainly satisfy
// the schema. false means only "not decided here".
func (f *fastSchema) valid(members []canon.Member) bool {
	if f == nil {
		return false
	}
	for _, m := range members {
		want, known := f.props[m.Key]
		if !known {
			if f.closed {
				return false
			}
			continue
		}
		if want != "" && !hasType(m.Value, want) {
			return false
		}
	}
	for _, name := range f.required {
		found := false
		for _, m := range members {
			if m.Key == name {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// hasType reports whether a canonical JSON value certainly has the JSON
// Schema type want. An RFC 8785 number without a fraction or exponent is
// an integer; one with them may still be one (1e+21), so only "number"
// takes it here.
func hasType(v []byte, want string) bool {
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case '"':
		return want == "string"
	case 't', 'f':
		return want == "boolean"
	case 'n':
		return want == "null"
	case '{':
		return want == "object"
	case '[':
		return want == "array"
	}
	if want == "number" {
		return true
	}
	return want == "integer" && bytes.IndexAny(v, ".eE") < 0
}
