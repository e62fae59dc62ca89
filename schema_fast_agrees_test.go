package mcpsafe

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpsafe/mcpsafe/internal/canon"
	"pgregory.net/rapid"
)

// The fast schema check never says valid where jsonschema-go says invalid,
// for any schema of the shape it takes and any arguments; and on that
// shape it decides the valid calls itself (else it saves nothing).
func TestPropertyFastSchemaAgreesWithValidator(t *testing.T) {
	types := []string{"", "string", "boolean", "null", "object", "array", "number", "integer"}
	values := []string{`"s"`, `""`, `true`, `false`, `null`, `{}`, `{"a":[1]}`, `[]`, `[1,"x"]`,
		`0`, `-0`, `7`, `-12`, `1.5`, `1e21`, `1E+300`, `2.0`, `9007199254740993e0`, `0.1`}
	names := []string{"path", "mode", "n", "approval_token", "extra"}
	decided := 0
	rapid.Check(t, func(t *rapid.T) {
		props := map[string]any{}
		for _, n := range rapid.SliceOfDistinct(rapid.SampledFrom(names), rapid.ID[string]).Draw(t, "props") {
			p := map[string]any{}
			if ty := rapid.SampledFrom(types).Draw(t, "type"); ty != "" {
				p["type"] = ty
			}
			if rapid.Bool().Draw(t, "described") {
				p["description"] = "d"
			}
			props[n] = p
		}
		schema := map[string]any{"type": "object", "properties": props}
		if req := rapid.SliceOfDistinct(rapid.SampledFrom(names), rapid.ID[string]).Draw(t, "required"); len(req) > 0 {
			r := make([]any, len(req))
			for i, n := range req {
				r[i] = n
			}
			schema["required"] = r
		}
		switch rapid.IntRange(0, 2).Draw(t, "additional") {
		case 1:
			schema["additionalProperties"] = false
		case 2:
			schema["additionalProperties"] = true
		}
		raw, _ := json.Marshal(schema)
		var generic map[string]any
		if err := json.Unmarshal(raw, &generic); err != nil {
			t.Fatal(err)
		}
		fast := newFastSchema(generic)
		if fast == nil {
			t.Fatalf("schema of the fast shape not taken: %s", raw)
		}
		var js jsonschema.Schema
		if err := json.Unmarshal(raw, &js); err != nil {
			t.Fatal(err)
		}
		rs, err := js.Resolve(nil)
		if err != nil {
			t.Fatal(err)
		}
		args := "{"
		for i, n := range rapid.SliceOfDistinct(rapid.SampledFrom(names), rapid.ID[string]).Draw(t, "keys") {
			if i > 0 {
				args += ","
			}
			args += fmt.Sprintf("%q:%s", n, rapid.SampledFrom(values).Draw(t, "value"))
		}
		args += "}"
		obj, err := canon.ReadObject([]byte(args), "approval_token")
		if err != nil {
			return // canon refuses it before any schema (a lossy number)
		}
		var inst any
		if err := json.Unmarshal([]byte(args), &inst); err != nil {
			t.Fatal(err)
		}
		verr := rs.Validate(inst)
		if fast.valid(obj.Members()) {
			decided++
			if verr != nil {
				t.Fatalf("fast check passes what the validator refuses: schema %s, arguments %s: %v", raw, args, verr)
			}
		}
	})
	if decided == 0 {
		t.Fatal("the fast check decided no call")
	}
}

// Schemas with anything the fast check does not model go to the
// validator; the shape it takes (as jsonschema.For infers it) is fast.
func TestFastSchemaShapes(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","properties":{"p":{"type":"string","minLength":3}}}`,
		`{"type":"object","properties":{"p":{"type":["string","null"]}}}`,
		`{"type":"object","properties":{"p":{"enum":["a"]}}}`,
		`{"type":"object","properties":{"p":true}}`,
		`{"type":"object","patternProperties":{"^x":{}}}`,
		`{"type":"object","additionalProperties":{"type":"string"}}`,
		`{"type":"object","$defs":{}}`,
		`{"type":"object","properties":{"p":{"type":"string","default":"x"}}}`,
		`{"type":["object"]}`,
		`{"properties":{}}`,
		`{"type":"object","required":"p"}`,
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		if newFastSchema(m) != nil {
			t.Errorf("fast check takes %s", s)
		}
	}
	type in struct {
		Path  string `json:"path" jsonschema:"the file"`
		Force bool   `json:"force,omitempty"`
		N     int    `json:"n,omitempty"`
	}
	inferred, err := jsonschema.For[in](nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := withTokenField(inferred, true)
	if err != nil {
		t.Fatal(err)
	}
	f := newFastSchema(m)
	if f == nil {
		t.Fatalf("an inferred schema is not fast: %v", m)
	}
	for args, want := range map[string]bool{
		`{"path":"a"}`:                      true,
		`{"path":"a","force":true,"n":3}`:   true,
		`{"path":"a","approval_token":"t"}`: true,
		`{"force":true}`:                    false, // path required
		`{"path":"a","extra":1}`:            false, // closed
		`{"path":1}`:                        false,
		`{"path":"a","n":1.5}`:              false,
		`{"path":"a","approval_token":5}`:   false,
	} {
		obj, err := canon.ReadObject([]byte(args), TokenField)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.valid(obj.Members()); got != want {
			t.Errorf("%s: fast valid %v, want %v", args, got, want)
		}
	}
}
