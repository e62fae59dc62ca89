package seal

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// vectors reads testdata/sealed.txt: values Seal produced, and their
// plaintexts.
func vectors(t testing.TB) map[string]string {
	t.Helper()
	f, err := os.Open("testdata/sealed.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sealed, plain, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("bad vector line %q", line)
		}
		out[sealed] = plain
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func vectorRing(t testing.TB) *Keyring { return mustRing(t, testKey(2), testKey(1)) }

func TestFormatStable(t *testing.T) {
	k := vectorRing(t)
	vs := vectors(t)
	if len(vs) == 0 {
		t.Fatal("no vectors")
	}
	checkedStd := false
	for sealed, plain := range vs {
		got, err := k.Open(aud, sealed)
		if err != nil || string(got) != plain {
			t.Errorf("Open(%s) = %q, %v; want %q", sealed, got, err, plain)
		}
		wantInvalid(t, k, "files@host-b", sealed, "vector, other audience")
		if std := strings.NewReplacer("-", "+", "_", "/").Replace(sealed); std != sealed {
			wantInvalid(t, k, aud, std, "vector in the standard alphabet")
			checkedStd = true
		}
	}
	if !checkedStd {
		t.Fatal("no vector contains - or _; add one so the alphabet check runs")
	}
}

// FuzzOpen: Open never panics, and only values Seal produced ever open.
// Seeds live in testdata/fuzz/FuzzOpen and include the genuine values of
// testdata/sealed.txt. (Fresh seals cannot be seeds: fuzz workers are
// separate processes and would not know them as issued.)
func FuzzOpen(f *testing.F) {
	k := vectorRing(f)
	issued := vectors(f)
	f.Fuzz(func(t *testing.T, audience, sealed string) {
		plain, err := k.Open(audience, sealed)
		if err != nil {
			if err != ErrInvalid || plain != nil {
				t.Fatalf("Open = %q, %v; want nil, ErrInvalid", plain, err)
			}
			return
		}
		want, ok := issued[sealed]
		if !ok || audience != aud {
			t.Fatalf("opened a value Seal never produced: Open(%q, %q) = %q", audience, sealed, plain)
		}
		if string(plain) != want {
			t.Fatalf("Open(%q) = %q, want %q", sealed, plain, want)
		}
	})
}
