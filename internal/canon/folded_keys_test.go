package canon

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

type foldVectors struct {
	Refused  map[string]string `json:"refused"`
	Accepted map[string]string `json:"accepted"`
}

func loadFoldVectors(t *testing.T) foldVectors {
	t.Helper()
	b, err := os.ReadFile("testdata/folded_keys.json")
	if err != nil {
		t.Fatal(err)
	}
	var v foldVectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Refused) == 0 || len(v.Accepted) == 0 {
		t.Fatal("no vectors")
	}
	return v
}

// TestFoldedKeyVectors: two keys of one object that encoding/json would
// match to one struct field are refused at every depth; keys that it
// keeps apart (full folding only, dotless i, siblings) are the controls.
func TestFoldedKeyVectors(t *testing.T) {
	v := loadFoldVectors(t)
	for name, in := range v.Refused {
		t.Run("refused/"+name, func(t *testing.T) {
			out, err := Canonical([]byte(in))
			if !errors.Is(err, ErrFoldedKey) {
				t.Fatalf("Canonical(%s) = %s, %v; want ErrFoldedKey", in, out, err)
			}
			if _, _, err := SplitMember([]byte(in), "approval_token"); !errors.Is(err, ErrFoldedKey) {
				t.Fatalf("SplitMember: %v; want ErrFoldedKey", err)
			}
		})
	}
	for name, in := range v.Accepted {
		t.Run("accepted/"+name, func(t *testing.T) {
			if _, err := Canonical([]byte(in)); err != nil {
				t.Fatalf("Canonical(%s): %v", in, err)
			}
		})
	}
}

// TestFoldedKeyAttackOnEncodingJSON documents why: with both spellings in
// one object, encoding/json fills the field from whichever comes last,
// exact match or not, while a map (what rules and previews read) keeps
// both. RFC 8785 sorts "source" before "ſource", so a tool decoding the
// canonical arguments would act on the long-s value.
func TestFoldedKeyAttackOnEncodingJSON(t *testing.T) {
	var a struct {
		Source string `json:"source"`
	}
	in := `{"ſource":"/etc/shadow","source":"/tmp/ok"}`
	if err := json.Unmarshal([]byte(in), &a); err != nil || a.Source != "/tmp/ok" {
		t.Fatalf("precondition: exact key last: %q %v", a.Source, err)
	}
	c, err := canonicalUnchecked([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	a.Source = ""
	if err := json.Unmarshal(c, &a); err != nil || a.Source != "/etc/shadow" {
		t.Fatalf("precondition: after JCS sorting the folded key wins: %q %v", a.Source, err)
	}
	var m map[string]any
	if err := json.Unmarshal(c, &m); err != nil || m["source"] != "/tmp/ok" {
		t.Fatalf("precondition: a map reads the exact key: %v %v", m, err)
	}
	if _, err := Canonical([]byte(in)); !errors.Is(err, ErrFoldedKey) {
		t.Fatalf("Canonical accepted %s: %v", in, err)
	}
	// The message names both keys, escaped.
	_, err = Canonical([]byte(in))
	if msg := err.Error(); !strings.Contains(msg, `"\u017fource"`) || !strings.Contains(msg, `"source"`) {
		t.Fatalf("error does not name both keys: %q", msg)
	}
}

// canonicalUnchecked is JCS without canon's checks, to show what a
// digest would have covered.
func canonicalUnchecked(raw []byte) ([]byte, error) {
	var v map[string]json.RawMessage
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	// Every key here is in the BMP, where UTF-16 order is code point order.
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(v[k])
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// jsonMatches reports whether encoding/json decodes key into a struct
// field tagged tag. ok is false when tag is not a valid field tag (the
// field then keeps its Go name), so the question cannot be asked.
func jsonMatches(t *testing.T, tag, key string) (match, ok bool) {
	t.Helper()
	typ := reflect.StructOf([]reflect.StructField{{
		Name: "F", Type: reflect.TypeOf(0), Tag: reflect.StructTag(`json:"` + tag + `"`),
	}})
	decode := func(k string) bool {
		p := reflect.New(typ)
		kb, _ := json.Marshal(k)
		if err := json.Unmarshal([]byte(`{`+string(kb)+`:1}`), p.Interface()); err != nil {
			t.Fatal(err)
		}
		return p.Elem().Field(0).Int() == 1
	}
	if !decode(tag) {
		return false, false
	}
	return decode(key), true
}

// TestFoldedKeysAgreeWithEncodingJSON checks canon against the real
// encoding/json over every rune that has a case fold, and over
// neighbouring runes that do not share one: canon refuses a pair of keys
// exactly when encoding/json would put both into one field.
func TestFoldedKeysAgreeWithEncodingJSON(t *testing.T) {
	asked, refused := 0, 0
	check := func(a, b string) {
		if a == b {
			return
		}
		match, ok := jsonMatches(t, a, b)
		if !ok {
			if match, ok = jsonMatches(t, b, a); !ok {
				// Neither is a valid tag (combining marks): compare with
				// the relation encoding/json documents instead.
				match = strings.EqualFold(a, b)
			}
		}
		asked++
		in, _ := json.Marshal(map[string]int{a: 1, b: 2})
		_, err := Canonical(in)
		if got := errors.Is(err, ErrFoldedKey); got != match {
			t.Errorf("keys %+q and %+q: encoding/json matches=%v, canon refuses=%v (%v)", a, b, match, got, err)
		}
		if match {
			refused++
		}
		if (FoldKey(a) == FoldKey(b)) != match {
			t.Errorf("FoldKey(%+q)=%+q, FoldKey(%+q)=%+q; encoding/json matches=%v", a, FoldKey(a), b, FoldKey(b), match)
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		if f := unicode.SimpleFold(r); f != r {
			check("x"+string(r), "x"+string(f))
			check(string(r)+"y", string(r+1)+"y") // usually another orbit
		}
	}
	for _, p := range [][2]string{{"ß", "ss"}, {"ı", "i"}, {"İ", "i"}, {"ﬁ", "fi"}, {"K", "k"}, {"ſ", "S"}} {
		check(p[0], p[1])
	}
	if asked < 5000 || refused < 2500 {
		t.Fatalf("only %d pairs asked, %d refused: the walk over the fold table is broken", asked, refused)
	}
}

func BenchmarkCanonicalKeys(b *testing.B) {
	in := []byte(`{"source":"/tmp/a","destination":"/tmp/b","options":{"overwrite":false,"mode":"0644","Ωmega":1}}`)
	for b.Loop() {
		if _, err := Canonical(in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSplitMemberRefusesSpellingVariants: a lone case variant of the
// member is neither taken for it nor passed on as an ordinary argument.
// The exact spelling, and the variant nested deeper (where the member is
// not looked for), are the controls.
func TestSplitMemberRefusesSpellingVariants(t *testing.T) {
	for _, in := range []string{
		`{"Approval_Token":"t","path":"a"}`,
		`{"APPROVAL_TOKEN":"t"}`,
		`{"approval_to` + "\u212a" + `en":"t"}`, // Kelvin sign for k
		`{"approval_tokeN":"t"}`,
	} {
		if rest, v, err := SplitMember([]byte(in), "approval_token"); !errors.Is(err, ErrFoldedKey) {
			t.Errorf("SplitMember(%s) = %s, %s, %v; want ErrFoldedKey", in, rest, v, err)
		}
	}
	for in, want := range map[string]string{
		`{"approval_token":"t","path":"a"}`:           `"t"`,
		`{"x":{"Approval_Token":"t"},"path":"a"}`:     ``,
		`{"approval_tokens":"t","approval_toke":"u"}`: ``,
	} {
		_, v, err := SplitMember([]byte(in), "approval_token")
		if err != nil || string(v) != want {
			t.Errorf("SplitMember(%s) = %s, %v; want %s", in, v, err, want)
		}
	}
}
