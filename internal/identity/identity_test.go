package identity

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"pgregory.net/rapid"
)

type identityVector struct {
	Name string  `json:"name"`
	Key  *string `json:"key"`
	Why  string  `json:"why"`
}

func loadIdentityVectors(t *testing.T) []identityVector {
	t.Helper()
	raw, err := os.ReadFile("testdata/identity-keys.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Vectors []identityVector }
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Vectors) < 20 {
		t.Fatalf("only %d vectors", len(f.Vectors))
	}
	return f.Vectors
}

// TestIdentityKeyVectors pins the namespace contract documented in
// docs/SECURITY-MODEL.md: which principals and approver names are one
// identity, and which have no key at all.
func TestIdentityKeyVectors(t *testing.T) {
	for _, v := range loadIdentityVectors(t) {
		k, err := Key(v.Name)
		switch {
		case v.Key == nil && err == nil:
			t.Errorf("IdentityKey(%q) = %q, want no key (%s)", v.Name, k, v.Why)
		case v.Key == nil && !errors.Is(err, errIdentity):
			t.Errorf("IdentityKey(%q): error %v does not wrap errIdentity", v.Name, err)
		case v.Key != nil && (err != nil || k != *v.Key):
			t.Errorf("IdentityKey(%q) = %q, %v; want %q (%s)", v.Name, k, err, *v.Key, v.Why)
		}
	}
}

// TestSameIdentity: the same key is the same identity (attack: every
// spelling of alice is alice), a name without a key is the same as anyone
// (fail closed), and distinct keys are distinct (control).
func TestSameIdentity(t *testing.T) {
	vs := loadIdentityVectors(t)
	for _, a := range vs {
		for _, b := range vs {
			want := a.Key == nil || b.Key == nil || *a.Key == *b.Key
			if got := Same(a.Name, b.Name); got != want {
				t.Errorf("SameIdentity(%q, %q) = %v, want %v", a.Name, b.Name, got, want)
			}
		}
	}
	if Same("user:alice", "bob") || Same("alice", "alice2") {
		t.Error("different approvers are the same identity")
	}
}

// TestIdentityKeyStable: a key is its own key, and the name and its key are
// one identity, whatever the input.
func TestIdentityKeyStable(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringMatching(`(?i)(user:)?[a-z0-9ſK._@+-]{1,12}`)).Draw(t, "name")
		k, err := Key(s)
		if err != nil {
			if !Same(s, "anyone") {
				t.Fatalf("%q has no key but is proven different from anyone", s)
			}
			return
		}
		if k2, err := Key(k); err != nil || k2 != k {
			t.Fatalf("key of %q is %q, whose key is %q, %v", s, k, k2, err)
		}
		if !Same(s, k) || !Same(s, UserPrefix+k) {
			t.Fatalf("%q and its key %q are not one identity", s, k)
		}
	})
}
