package canon

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
)

// flatCanonical may only say yes where the general transform is the
// identity: every input it accepts comes out of jcs.Transform unchanged.
// Attack cases: inputs one step off canonical (key order, whitespace,
// escapes, number spellings, nesting) must be left to the transform.
func TestFlatCanonicalAgreesWithTransform(t *testing.T) {
	accepted := []string{
		`{}`, `{"path":"cache.txt"}`, `{"a":1,"b":-42,"c":0,"d":true,"e":false,"f":null}`,
		`{"A":"x","_":"y","a":"<&>/'"}`, `{"n":999999999999999}`, `{"n":-999999999999999}`,
		`{"":""}`, `{" ":"~"}`,
	}
	for _, in := range accepted {
		if !flatCanonical([]byte(in)) {
			t.Errorf("control: %s is canonical and flat, but was not recognised", in)
		}
		checkIdentity(t, in)
	}
	refused := []string{
		`{"b":1,"a":2}`,                    // key order
		`{"a":1,"a":2}`,                    // not strictly ascending
		`{ "a":1}`, `{"a": 1}`, `{"a":1 }`, // whitespace
		`{"a":"\u0041"}`, `{"a":"\n"}`, `{"a\\"}`, // escapes
		`{"a":"é"}`, `{"é":1}`, // non-ASCII: left to the transform
		`{"a":1.0}`, `{"a":1e2}`, `{"a":1E2}`, `{"a":-0}`, `{"a":01}`, `{"a":00}`,
		`{"a":1000000000000000}`, `{"a":-1000000000000000}`, // 16 digits
		`{"a":{}}`, `{"a":[]}`, `{"a":[1]}`, `{"a":{"b":1}}`, // nesting
		`{"a":tru}`, `{"a":nul}`, `{"a":"x"`, `{"a"}`, `{"a":}`, `{,}`, `{"a":1,}`, `[]`, `"a"`,
	}
	for _, in := range refused {
		if flatCanonical([]byte(in)) {
			t.Errorf("attack: %s was taken as canonical", in)
		}
	}
	// Random flat objects over an alphabet of the characters that matter.
	r := rand.New(rand.NewPCG(1, 2))
	keys := []string{"a", "b", "B", "_", "path", "Path", "a b", "~", "0", "é", "x\\\"y"}
	vals := []string{`"x"`, `"<>&/"`, `"é"`, `"\u00e9"`, `"\t"`, `1`, `-7`, `0`, `1.5`, `1e3`, `true`, `false`, `null`, `[]`, `{}`, `123456789012345`, `1234567890123456`}
	seen := 0
	for range 20000 {
		var b strings.Builder
		b.WriteByte('{')
		n := r.IntN(4)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(keys[r.IntN(len(keys))]))
			b.WriteByte(':')
			b.WriteString(vals[r.IntN(len(vals))])
		}
		b.WriteByte('}')
		in := b.String()
		if check([]byte(in)) != nil {
			continue // duplicate keys and the like: never reach transform
		}
		if flatCanonical([]byte(in)) {
			seen++
			checkIdentity(t, in)
		}
	}
	if seen < 1000 {
		t.Fatalf("only %d random inputs took the flat path", seen)
	}
}

func checkIdentity(t *testing.T, in string) {
	t.Helper()
	want, err := jcs.Transform([]byte(in))
	if err != nil {
		t.Fatalf("jcs.Transform(%s): %v", in, err)
	}
	got, err := transform([]byte(in))
	if err != nil || !bytes.Equal(got, want) || !bytes.Equal(got, []byte(in)) {
		t.Fatalf("%s: transform %s (%v), jcs %s", in, got, err, want)
	}
}

// The bytes transform returns are the caller's: a flat input is copied,
// so that changing the request's bytes later cannot change them.
func TestFlatCanonicalCopies(t *testing.T) {
	in := []byte(`{"path":"cache.txt"}`)
	out, err := transform(in)
	if err != nil {
		t.Fatal(err)
	}
	in[2] = 'X'
	if string(out) != `{"path":"cache.txt"}` {
		t.Fatalf("the output changed with the input: %s", out)
	}
}
