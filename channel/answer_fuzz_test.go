package channel

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/frame"
)

// FuzzParseAnswer: whatever an approver sends, parseAnswer approves only
// what an independent strict reading also sees as exactly one JSON object
// with "approved": true, and it never panics.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		`{"approved":true}`, `{"approved":true,"approver":"alice"}`, `{"approved":false}`,
		`{"approved":"true"}`, `{"approved":1}`, `{"approved":"yes"}`, `{}`, `null`, `[]`,
		`{"approved":false,"approved":true}`, `{"approved":true} {"approved":true}`,
		`{"approved":true,"approvers":["a","b"]}`, `{"a":{"b":1,"b":2},"approved":true}`,
		"{\"approved\":true}\n", ` {"approved" : true } `, `{"approved":TRUE}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := parseAnswer(raw)
		if err != nil {
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("error %v does not wrap ErrBadResponse", err)
			}
			if a.Approved {
				t.Fatal("an error came with Approved=true")
			}
			return
		}
		if !a.Approved {
			return
		}
		// Independent reading: exactly one object, approved the boolean true.
		dec := json.NewDecoder(bytes.NewReader(raw))
		var m map[string]any
		if err := dec.Decode(&m); err != nil || m == nil {
			t.Fatalf("approved %q, which is not a JSON object", raw)
		}
		if dec.More() {
			t.Fatalf("approved %q, which has data after the object", raw)
		}
		if v, ok := m["approved"].(bool); !ok || !v {
			t.Fatalf("approved %q, whose approved field is %#v", raw, m["approved"])
		}
		if frame.Check(raw, frame.Rules{}) != nil {
			t.Fatalf("approved %q, which has duplicate keys", raw)
		}
	})
}
