package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzCanonical checks that hostile input never panics, and that whatever
// is accepted comes out as valid, UTF-8, idempotent canonical JSON whose
// top-level object SplitMember agrees with.
func FuzzCanonical(f *testing.F) {
	// Seeds live in testdata/fuzz/FuzzCanonical.
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := Canonical(raw)
		if err != nil {
			known := errors.Is(err, ErrInvalidJSON) || errors.Is(err, ErrDuplicateKey) ||
				errors.Is(err, ErrFoldedKey) || errors.Is(err, ErrTooDeep) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrLossyNumber)
			if !known {
				t.Fatalf("error outside the documented set: %v", err)
			}
			return
		}
		if !json.Valid(out) || !utf8.Valid(out) {
			t.Fatalf("accepted %q, produced invalid %q", raw, out)
		}
		again, err := Canonical(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q -> %q (%v)", out, again, err)
		}
		if bytes.HasPrefix(out, []byte("{")) {
			rest, _, err := SplitMember(raw, "approval_token")
			if errors.Is(err, ErrFoldedKey) {
				// A key spelt like the member under case folding: a valid
				// object, which SplitMember refuses on purpose (the gate
				// never guesses which spelling was meant).
				return
			}
			if err != nil {
				t.Fatalf("Canonical accepted an object SplitMember refuses: %v", err)
			}
			if _, err := Canonical(rest); err != nil {
				t.Fatalf("SplitMember produced uncanonicalizable %q: %v", rest, err)
			}
		}
	})
}
