// Package toolschema reads the property names of an upstream tool's input
// schema, as the SDK client decoded it: what the proxy (whether a tool
// owns approval_token) and its policy (the argument names a rule or a
// preview reads) both ask of it.
package toolschema

import (
	"maps"
	"slices"
)

// Properties returns the property names of a JSON Schema object as the
// SDK client decoded it; ok is false when the schema does not list them
// (then nothing can be checked).
func Properties(schema any) (props []string, ok bool) {
	m, _ := schema.(map[string]any)
	p, ok := m["properties"].(map[string]any)
	if !ok {
		return nil, false
	}
	return slices.Sorted(maps.Keys(p)), true
}

// HasProperty reports whether a JSON schema declares the top-level
// property name, under the exact keyword "properties" (encoding/json would
// read "Properties" as it too).
func HasProperty(schema any, name string) bool {
	props, _ := Properties(schema)
	return slices.Contains(props, name)
}
