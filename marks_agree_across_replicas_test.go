package mcpsafe_test

import (
	"bytes"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
)

// Two gates that share a key (replicas, or one process restarted) compute
// the same mark, so a plan that shows one reads the same on each; a gate
// with another key, or for another audience or purpose, computes another.
func TestMarksAgreeAcrossReplicas(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	other := bytes.Repeat([]byte{9}, 32)
	gate := func(audience string, keys ...[]byte) *mcpsafe.Gate {
		t.Helper()
		var k mcpsafe.Keys
		if len(keys) > 0 {
			var err error
			if k, err = mcpsafe.NewKeys(keys...); err != nil {
				t.Fatal(err)
			}
		}
		g, err := mcpsafe.New(mcpsafe.Options{Keys: k, Audience: audience, Journal: journal.Discard})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return g
	}
	data := []byte("sha256:abc")
	a, b := gate("files", key), gate("files", key)
	if !bytes.Equal(a.Mark("p", data), b.Mark("p", data)) {
		t.Fatal("two gates sharing a key compute different marks")
	}
	for name, m := range map[string][]byte{
		"another key":      gate("files", other).Mark("p", data),
		"another audience": gate("other", key).Mark("p", data),
		"another purpose":  a.Mark("q", data),
		"other data":       a.Mark("p", []byte("sha256:abd")),
		"the key rotated":  gate("files", other, key).Mark("p", data),
	} {
		if bytes.Equal(m, a.Mark("p", data)) {
			t.Errorf("%s gives the same mark", name)
		}
	}
	// The zero Keys: a random key per gate, so marks differ between gates.
	z1, z2 := gate("files"), gate("files")
	if bytes.Equal(z1.Mark("p", data), z2.Mark("p", data)) {
		t.Fatal("gates with the zero Keys share marks")
	}
}
