package canon

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestRFC8785Numbers(t *testing.T) {
	f, err := os.Open("testdata/numbers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bitsHex, want, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("bad vector line %q", line)
		}
		bits, err := strconv.ParseUint(bitsHex, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		v := math.Float64frombits(bits)
		n++
		if math.IsNaN(v) || math.IsInf(v, 0) {
			// No JSON literal exists; the nearest attempts must be refused.
			for _, in := range []string{"NaN", "Infinity", "-Infinity", "1e999"} {
				if _, err := Canonical([]byte(in)); err == nil {
					t.Errorf("%s: accepted %q", bitsHex, in)
				}
			}
			continue
		}
		// Feed the shortest round-trip form (and, as a second spelling, the
		// 'e' form): both must come out as the RFC's canonical text.
		for _, in := range []string{strconv.FormatFloat(v, 'g', -1, 64), strconv.FormatFloat(v, 'E', -1, 64)} {
			got, err := Canonical([]byte(in))
			if err != nil {
				t.Errorf("%s: Canonical(%s): %v", bitsHex, in, err)
				continue
			}
			if string(got) != want {
				t.Errorf("%s: Canonical(%s) = %s, want %s", bitsHex, in, got, want)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 26 {
		t.Fatalf("read %d vectors, want the 26 of RFC 8785 Appendix B", n)
	}
}

func TestVectors(t *testing.T) {
	ins, err := filepath.Glob("testdata/vectors/*.in.json")
	if err != nil || len(ins) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".in.json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(in, ".in.json") + ".out.json")
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonical(raw)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
			again, err := Canonical(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Fatalf("canonical form is not a fixed point: %s, %v", again, err)
			}
		})
	}
}

func TestEqualArgumentsSameDigest(t *testing.T) {
	groups := [][]string{
		{
			`{"path":"cache.txt","force":true,"n":[1,2]}`,
			`{"force":true,"n":[1,2],"path":"cache.txt"}`,
			" {\n\t\"n\" : [ 1 , 2.0 ] ,\"path\":\"cach\\u0065.txt\",\r\n\"force\":true}\n",
			`{"n":[1E0,0.2e1],"path":"cache\u002etxt","force":true}`,
		},
		{`0`, `-0`, `0.0`, `0e5`},
		{`"\u00e9"`, `"é"`},
	}
	for _, g := range groups {
		want, err := Digest([]byte(g[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range g[1:] {
			got, err := Digest([]byte(in))
			if err != nil {
				t.Fatalf("%s: %v", in, err)
			}
			if got != want {
				t.Errorf("Digest(%s) = %s, want %s (as %s)", in, got, want, g[0])
			}
		}
	}
}

func TestDifferentArgumentsDifferentDigest(t *testing.T) {
	in := []string{
		`{"path":"cache.txt"}`, `{"path":"thesis.txt"}`, `{"path":"cache.txt "}`,
		`{"path":["cache.txt"]}`, `{"Path":"cache.txt"}`, `{"path":"cache.txt","x":null}`,
		`{"n":1}`, `{"n":"1"}`, `{"n":true}`, `{"n":null}`, `{"n":[]}`, `{"n":{}}`,
		`"\u00e9"`, `"e\u0301"`, // JCS does not normalize Unicode, and neither do files systems
		`{"id":9007199254740992}`, `{"id":9007199254740991}`,
	}
	seen := map[string]string{}
	for _, s := range in {
		d, err := Digest([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if len(d) != 64 || strings.ToLower(d) != d {
			t.Fatalf("digest %q is not lowercase hex SHA-256", d)
		}
		if _, err := hex.DecodeString(d); err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[d]; ok {
			t.Errorf("%s and %s share digest %s", prev, s, d)
		}
		seen[d] = s
	}
}

func TestRefused(t *testing.T) {
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	cases := []struct {
		name string
		in   string
		want error
	}{
		{"empty", ``, ErrInvalidJSON},
		{"whitespace only", " \n", ErrInvalidJSON},
		{"trailing value", `{"a":1} {"a":2}`, ErrInvalidJSON},
		{"trailing scalar", `1 2`, ErrInvalidJSON},
		{"trailing garbage", `{"a":1}x`, ErrInvalidJSON},
		{"trailing bracket", `[1]]`, ErrInvalidJSON},
		{"trailing comma", `[1,]`, ErrInvalidJSON},
		{"unterminated", `{"a":1`, ErrInvalidJSON},
		{"single quotes", `{'a':1}`, ErrInvalidJSON},
		{"bare key", `{a:1}`, ErrInvalidJSON},
		{"NaN", `NaN`, ErrInvalidJSON},
		{"leading zero", `01`, ErrInvalidJSON},
		{"plus sign", `+1`, ErrInvalidJSON},
		{"hex number", `0x10`, ErrInvalidJSON},
		{"raw newline in string", "\"a\nb\"", ErrInvalidJSON},
		{"invalid UTF-8 in string", "\"a\xffb\"", ErrInvalidJSON},
		{"invalid UTF-8 in key", "{\"\xc0\xaf\":1}", ErrInvalidJSON},
		{"overlong UTF-8", "\"\xe0\x80\xaf\"", ErrInvalidJSON},
		{"UTF-8 encoded surrogate", "\"\xed\xa0\x80\"", ErrInvalidJSON},
		{"lone high surrogate", `"\ud800"`, ErrInvalidJSON},
		{"lone low surrogate", `"\udc00"`, ErrInvalidJSON},
		{"reversed pair", `"\ude00\ud83d"`, ErrInvalidJSON},
		{"high then letter", `"\ud83dx"`, ErrInvalidJSON},
		{"lone surrogate key", `{"\ud800":1}`, ErrInvalidJSON},
		{"lone surrogate deep", `{"a":[{"b":"\udfff"}]}`, ErrInvalidJSON},
		{"BOM", "\xef\xbb\xbf{}", ErrInvalidJSON},
		{"duplicate key", `{"a":1,"a":2}`, ErrDuplicateKey},
		{"duplicate same value", `{"a":1,"a":1}`, ErrDuplicateKey},
		{"duplicate after unescape", `{"a":1,"\u0061":2}`, ErrDuplicateKey},
		{"duplicate escaped slash", `{"/":1,"\/":2}`, ErrDuplicateKey},
		{"duplicate astral", `{"😀":1,"\ud83d\ude00":2}`, ErrDuplicateKey},
		{"duplicate at depth 2", `{"x":{"a":1,"b":2,"a":3}}`, ErrDuplicateKey},
		{"duplicate in array", `[1,{"k":1,"k":2}]`, ErrDuplicateKey},
		{"duplicate deep", `{"a":[[[[{"b":{"c":1,"c":1}}]]]]}`, ErrDuplicateKey},
		{"duplicate approval_token", `{"approval_token":"x","approval_token":"y"}`, ErrDuplicateKey},
		{"too deep arrays", deep("[", "]", MaxDepth+1), ErrTooDeep},
		{"too deep objects", deep(`{"a":`, "}", MaxDepth+1), ErrTooDeep},
		{"100k open brackets", strings.Repeat("[", 100_000), ErrTooDeep},
		{"100k open objects", strings.Repeat(`{"a":`, 100_000), ErrTooDeep},
		{"too large", `"` + strings.Repeat("a", MaxSize) + `"`, ErrTooLarge},
		{"int beyond 2^53", `{"id":9007199254740993}`, ErrLossyNumber},
		{"exact 2^68 not in shortest form", `295147905179352825856`, ErrLossyNumber},
		{"excess digits", `1.0000000000000001`, ErrLossyNumber},
		{"RFC example's 333333333.33333329", `333333333.33333329`, ErrLossyNumber},
		{"overflow", `1e400`, ErrLossyNumber},
		{"underflow", `1e-400`, ErrLossyNumber},
		{"huge exponent", `1e99999999999999999999`, ErrLossyNumber},
		{"zero huge exponent", `0e99999999999999999999`, ErrLossyNumber},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := Canonical([]byte(c.in))
			if !errors.Is(err, c.want) {
				t.Fatalf("Canonical = %q, %v; want %v", out, err, c.want)
			}
			if _, err := Digest([]byte(c.in)); !errors.Is(err, c.want) {
				t.Fatalf("Digest error %v; want %v", err, c.want)
			}
		})
	}
}

// Each refusal above has a legitimate twin that must pass.
func TestAcceptedTwins(t *testing.T) {
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	for _, in := range []string{
		`{"a":1}`, " 1 \n", `[1]`, `"a\nb"`, `"\ud83d\ude00"`, `{"a":1,"b":1}`,
		`{"a":{"a":{"a":1}}}`, `[{"k":1},{"k":2}]`, `{"x":{"a":1,"b":2}}`,
		deep("[", "]", MaxDepth), deep(`{"a":`, "}", MaxDepth),
		`"` + strings.Repeat("a", MaxSize-2) + `"`,
		`{"id":9007199254740992}`, `{"id":-9007199254740992}`, `295147905179352830000`,
		`1e308`, `5e-324`, `0.1`, `1E30`, `4.50`, `-0.0`,
	} {
		if _, err := Canonical([]byte(in)); err != nil {
			t.Errorf("Canonical(%.60s): %v", in, err)
		}
	}
}

func TestErrorsNameTheDuplicate(t *testing.T) {
	_, err := Canonical([]byte(`{"x":{"path":1,"path":2}}`))
	if err == nil || !strings.Contains(err.Error(), `"path"`) || !strings.Contains(err.Error(), "depth 2") {
		t.Fatalf("error should name the key and depth: %v", err)
	}
	// Attacker-chosen keys are clipped and escaped in messages.
	_, err = Canonical([]byte(`{"` + strings.Repeat("\\n", 500) + `":1,"` + strings.Repeat("\\n", 500) + `":2}`))
	if err == nil || len(err.Error()) > 200 || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error not clipped or not escaped: %q", err)
	}
}

func TestSplitMember(t *testing.T) {
	cases := []struct {
		name, in, member string
		rest, value      string // rest compared after canonicalization; value raw; "<nil>" for absent
	}{
		{"present", `{"path":"a","approval_token":"tok"}`, "approval_token", `{"path":"a"}`, `"tok"`},
		{"absent", `{"path":"a"}`, "approval_token", `{"path":"a"}`, "<nil>"},
		{"only member", `{"approval_token":"tok"}`, "approval_token", `{}`, `"tok"`},
		{"null value", `{"approval_token":null}`, "approval_token", `{}`, `null`},
		{"escaped name", `{"approval\u005ftoken":"tok","b":1}`, "approval_token", `{"b":1}`, `"tok"`},
		{"nested not touched", `{"x":{"approval_token":"t"}}`, "approval_token", `{"x":{"approval_token":"t"}}`, "<nil>"},
		{"empty", ``, "approval_token", `{}`, "<nil>"},
		{"null", ` null `, "approval_token", `{}`, "<nil>"},
		{"empty object", `{}`, "approval_token", `{}`, "<nil>"},
		{"value kept byte for byte", `{"n":1.50,"approval_token":{"a" : 1}}`, "approval_token", `{"n":1.5}`, `{"a" : 1}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rest, value, err := SplitMember([]byte(c.in), c.member)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Canonical(rest)
			if err != nil {
				t.Fatalf("rest %s: %v", rest, err)
			}
			if string(got) != c.rest {
				t.Errorf("rest = %s, want %s", got, c.rest)
			}
			v := "<nil>"
			if value != nil {
				v = string(value)
			}
			if v != c.value {
				t.Errorf("value = %s, want %s", v, c.value)
			}
		})
	}
}

func TestSplitMemberRefuses(t *testing.T) {
	cases := []struct {
		name, in string
		want     error
	}{
		{"duplicate member", `{"approval_token":"a","approval_token":"b"}`, ErrDuplicateKey},
		{"duplicate escaped member", `{"approval_token":"a","approval\u005ftoken":"b"}`, ErrDuplicateKey},
		{"duplicate other", `{"p":1,"p":2,"approval_token":"a"}`, ErrDuplicateKey},
		{"duplicate nested", `{"p":{"q":1,"q":2}}`, ErrDuplicateKey},
		{"array", `[1]`, ErrInvalidJSON},
		{"string", `"x"`, ErrInvalidJSON},
		{"number", `1`, ErrInvalidJSON},
		{"trailing", `{} {}`, ErrInvalidJSON},
		{"lone surrogate in value", `{"a":"\ud800"}`, ErrInvalidJSON},
		{"lone surrogate in key", `{"\ud800":1,"approval_token":"t"}`, ErrInvalidJSON},
		{"too deep", strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100), ErrTooDeep},
		{"lossy", `{"id":9007199254740993}`, ErrLossyNumber},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rest, value, err := SplitMember([]byte(c.in), "approval_token")
			if !errors.Is(err, c.want) {
				t.Fatalf("SplitMember = %s, %s, %v; want %v", rest, value, err, c.want)
			}
		})
	}
}

// The digest of arguments with the token removed must not depend on where
// the token was or whether it was there.
func TestSplitMemberDigestStable(t *testing.T) {
	want, err := Digest([]byte(`{"path":"cache.txt","force":false}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		`{"approval_token":"t1","path":"cache.txt","force":false}`,
		`{"path":"cache.txt","approval_token":"t2","force":false}`,
		`{"force":false,"path":"cache.txt"}`,
		`{"force":false,"path":"cache.txt","approval_token":{"x":[1]}}`,
	} {
		rest, _, err := SplitMember([]byte(in), "approval_token")
		if err != nil {
			t.Fatal(err)
		}
		got, err := Digest(rest)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: digest %s, want %s", in, got, want)
		}
	}
}

func TestCanonicalOutputIsValidJSON(t *testing.T) {
	out, err := Canonical([]byte(`{"s":"<&>\u2028\u0000\u001f\u007f"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) {
		t.Fatalf("not valid JSON: %q", out)
	}
	if want := "{\"s\":\"<&>\u2028\\u0000\\u001f\x7f\"}"; string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

func BenchmarkDeepNesting100k(b *testing.B) {
	in := []byte(strings.Repeat("[", 100_000))
	for b.Loop() {
		if _, err := Canonical(in); !errors.Is(err, ErrTooDeep) {
			b.Fatal(err)
		}
	}
}

func BenchmarkDigestTypicalArgs(b *testing.B) {
	in := []byte(`{"path":"/home/user/thesis/chapter-3.tex","recursive":false,"mode":"0644","tags":["draft","latex"],"size":48213}`)
	for b.Loop() {
		if _, err := Digest(in); err != nil {
			b.Fatal(err)
		}
	}
}
