package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// ReadObject + Without is SplitMember + Canonical read once: for any
// object, in any spelling, with or without the member, the canonical rest,
// the member's value and the errors agree, and the members are the
// object's own.
func TestPropertyReadObjectIsSplitMember(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 1)
		m, isObj := v.(map[string]any)
		if isObj && rapid.Bool().Draw(t, "with member") {
			m["tok"] = genValue(t, 3)
		}
		var b strings.Builder
		encode(t, v, &b)
		raw := []byte(b.String())

		rest, val, err := SplitMember(raw, "tok")
		var want []byte
		if err == nil {
			want, err = Canonical(rest)
		}
		o, gotErr := ReadObject(raw, "tok")
		if (err == nil) != (gotErr == nil) {
			t.Fatalf("SplitMember error %v, ReadObject error %v for %s", err, gotErr, raw)
		}
		if err != nil {
			for _, kind := range []error{ErrInvalidJSON, ErrFoldedKey, ErrDuplicateKey, ErrLossyNumber, ErrTooDeep} {
				if errors.Is(err, kind) != errors.Is(gotErr, kind) {
					t.Fatalf("errors differ in kind: %v / %v", err, gotErr)
				}
			}
			return
		}
		gotRest, gotVal, err := o.Without("tok")
		if err != nil {
			t.Fatalf("Without: %v (input %s)", err, raw)
		}
		if !bytes.Equal(gotRest, want) {
			t.Fatalf("rest %s, want %s (input %s)", gotRest, want, raw)
		}
		if (val == nil) != (gotVal == nil) || val != nil && !bytes.Equal(canonicalOf(t, gotVal), canonicalOf(t, val)) {
			t.Fatalf("member %s, want %s", gotVal, val)
		}
		whole, err := o.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(whole, &members); err != nil {
			t.Fatal(err)
		}
		if len(members) != len(o.Members()) {
			t.Fatalf("%d members, want %d", len(o.Members()), len(members))
		}
		for _, mm := range o.Members() {
			// The value as the input spells it, the same value.
			if !bytes.Equal(canonicalOf(t, mm.Value), members[mm.Key]) {
				t.Fatalf("member %q = %s, want %s", mm.Key, mm.Value, members[mm.Key])
			}
		}
		if SHA256(gotRest) != mustDigest(t, rest) {
			t.Fatal("SHA256 of the canonical rest is not Digest of the rest")
		}
	})
}

func canonicalOf(t *rapid.T, b []byte) []byte {
	c, err := Canonical(b)
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return c
}

func mustDigest(t *rapid.T, b []byte) string {
	d, err := Digest(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Members whose keys hold escapes, and the member first, middle and last.
func TestReadObjectWithout(t *testing.T) {
	for _, tc := range []struct{ in, rest, val string }{
		{`{"tok":"x"}`, `{}`, `"x"`},
		{`{"a":1,"tok":[1,{"b":"}"}]}`, `{"a":1}`, `[1,{"b":"}"}]`},
		{`{"tok":{"c":[]},"z\"q":"\\"}`, `{"z\"q":"\\"}`, `{"c":[]}`},
		{`{"a":true,"tok":null,"z":"a,b"}`, `{"a":true,"z":"a,b"}`, `null`},
		{`{"a":1}`, `{"a":1}`, ``},
		{` null `, `{}`, ``},
		{" {\n \"z\" : 2 ,\t\"tok\" : \"t\" ,\r\n \"a\":[ 1 , 2 ] } ", `{"a":[1,2],"z":2}`, `"t"`},
		{`{"z":1.50,"tok":"t"}`, `{"z":1.5}`, `"t"`},
		{`{ "tok" : 7 }`, `{}`, `7`},
	} {
		o, err := ReadObject([]byte(tc.in), "tok")
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		rest, val, err := o.Without("tok")
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if string(rest) != tc.rest || string(val) != tc.val {
			t.Errorf("%s: rest %s value %s, want %s %s", tc.in, rest, val, tc.rest, tc.val)
		}
	}
	for _, bad := range []string{`[1]`, `"s"`, `{"Tok":1}`, `{"a":1,"a":2}`, `{"a":1} {}`} {
		if _, err := ReadObject([]byte(bad), "tok"); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
