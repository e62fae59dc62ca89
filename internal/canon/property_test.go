package canon

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"pgregory.net/rapid"
)

// num is a JSON number leaf, kept as its shortest literal.
type num string

func genValue(t *rapid.T, depth int) any {
	top := 6
	if depth >= 4 {
		top = 3 // leaves only
	}
	switch rapid.IntRange(0, top).Draw(t, "kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, "bool")
	case 2:
		if rapid.Bool().Draw(t, "int") {
			return num(strconv.FormatInt(rapid.Int64Range(-1<<53, 1<<53).Draw(t, "i"), 10))
		}
		f := rapid.Float64().Filter(func(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }).Draw(t, "f")
		return num(strconv.FormatFloat(f, 'g', -1, 64))
	case 3:
		return rapid.String().Draw(t, "s")
	case 4:
		n := rapid.IntRange(0, 4).Draw(t, "len")
		a := make([]any, n)
		for i := range a {
			a[i] = genValue(t, depth+1)
		}
		return a
	default:
		// Distinct under case folding: two keys equal under it are refused
		// (folded_keys_test.go covers that).
		keys := rapid.SliceOfNDistinct(rapid.StringN(0, 6, -1), 0, 5, FoldKey).Draw(t, "keys")
		m := make(map[string]any, len(keys))
		for _, k := range keys {
			m[k] = genValue(t, depth+1)
		}
		return m
	}
}

// encode writes v as JSON with randomly chosen key order, whitespace,
// string escapes and number spellings, all of which canonicalization must
// erase.
func encode(t *rapid.T, v any, b *strings.Builder) {
	ws := func() {
		b.WriteString(rapid.SampledFrom([]string{"", "", " ", "\n", "\t ", "\r\n"}).Draw(t, "ws"))
	}
	ws()
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case num:
		b.WriteString(spellNumber(t, string(v)))
	case string:
		encodeString(t, v, b)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			encode(t, e, b)
		}
		ws()
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		keys = rapid.Permutation(keys).Draw(t, "order")
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			ws()
			encodeString(t, k, b)
			ws()
			b.WriteByte(':')
			encode(t, v[k], b)
		}
		ws()
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("unexpected %T", v))
	}
	ws()
}

func spellNumber(t *rapid.T, lit string) string {
	f, _ := strconv.ParseFloat(lit, 64)
	choices := []string{lit, strconv.FormatFloat(f, 'E', -1, 64), strconv.FormatFloat(f, 'e', -1, 64)}
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		choices = append(choices, lit+".0", lit+"e0", lit+".000E+0")
		if i != 0 {
			choices = append(choices, lit+"0e-1")
		}
	}
	return rapid.SampledFrom(choices).Draw(t, "spelling")
}

func encodeString(t *rapid.T, s string, b *strings.Builder) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			if rapid.Bool().Draw(t, "short") {
				b.WriteByte('\\')
				b.WriteRune(r)
				continue
			}
			fmt.Fprintf(b, `\u%04x`, r)
		case r < 0x20 || rapid.IntRange(0, 3).Draw(t, "escape") == 0:
			if r > 0xffff {
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(b, `\u%04x\u%04X`, hi, lo)
			} else {
				fmt.Fprintf(b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// mutate changes exactly one leaf (or grows an empty container).
func mutate(t *rapid.T, v any) any {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return !v
	case num:
		return string(v) // same text, other type
	case string:
		return v + rapid.SampledFrom([]string{" ", "x", "\u200b", "\x00"}).Draw(t, "suffix")
	case []any:
		if len(v) == 0 {
			return []any{nil}
		}
		c := slices.Clone(v)
		i := rapid.IntRange(0, len(c)-1).Draw(t, "index")
		c[i] = mutate(t, c[i])
		return c
	case map[string]any:
		c := make(map[string]any, len(v)+1)
		keys := make([]string, 0, len(v))
		for k, e := range v {
			c[k] = e
			keys = append(keys, k)
		}
		if len(keys) == 0 {
			c[""] = nil
			return c
		}
		slices.Sort(keys)
		k := rapid.SampledFrom(keys).Draw(t, "key")
		c[k] = mutate(t, c[k])
		return c
	}
	panic("unreachable")
}

func TestPropertyEqualValuesSameDigest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 0)
		var a, b strings.Builder
		encode(t, v, &a)
		encode(t, v, &b)
		da, err := Digest([]byte(a.String()))
		if err != nil {
			t.Fatalf("Digest(%q): %v", a.String(), err)
		}
		db, err := Digest([]byte(b.String()))
		if err != nil {
			t.Fatalf("Digest(%q): %v", b.String(), err)
		}
		if da != db {
			t.Fatalf("equal values, different digests:\n%q\n%q", a.String(), b.String())
		}
	})
}

func TestPropertyMutationChangesDigest(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genValue(t, 0)
		w := mutate(t, v)
		var a, b strings.Builder
		encode(t, v, &a)
		encode(t, w, &b)
		da, err := Digest([]byte(a.String()))
		if err != nil {
			t.Fatal(err)
		}
		db, err := Digest([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if da == db {
			t.Fatalf("mutated value, same digest:\n%q\n%q", a.String(), b.String())
		}
	})
}
