package frame

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Decode reads raw strictly into v: Check's rules (with the default depth
// limit), then every object member must be a field of v's type spelt
// exactly (encoding/json would also match a key that differs only in case,
// and ignore an unknown one), then exactly one value. It is the reading for
// data mcpsafe sealed or signed itself and for answers whose every member
// it knows.
func Decode(raw []byte, v any) error {
	if err := Check(raw, Rules{}); err != nil {
		return err
	}
	if err := exactFields(raw, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the JSON value")
	}
	return nil
}

// exactFields refuses a key of raw that names a field of t only under case
// folding. Unknown keys are left to DisallowUnknownFields.
func exactFields(raw []byte, t reflect.Type) error {
	for t != nil && (t.Kind() == reflect.Pointer) {
		t = t.Elem()
	}
	if t == nil {
		return nil
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if _, ok := reflect.New(t).Interface().(json.Unmarshaler); ok {
		return nil // the type reads itself
	}
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil // the decoder says what is wrong
		}
		fields := jsonFields(t)
		for k, v := range m {
			ft, exact := fields[k]
			if !exact {
				for name := range fields {
					if strings.EqualFold(name, k) {
						return fmt.Errorf("key %s is not spelt %s", quote([]byte(k)), quote([]byte(name)))
					}
				}
				continue
			}
			if err := exactFields(v, ft); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var a []json.RawMessage
		if json.Unmarshal(raw, &a) != nil {
			return nil
		}
		for _, v := range a {
			if err := exactFields(v, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		for _, v := range m {
			if err := exactFields(v, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields maps the JSON names of t's fields (embedded structs' fields
// promoted, as encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}
