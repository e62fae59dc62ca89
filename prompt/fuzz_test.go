package prompt

import "testing"

// FuzzQuote: every rendering is one line without raw control, format or
// invisible characters, decodes back to the value when uncut, and differs
// from the renderings of near twins of the value.
// Seeds live in testdata/fuzz/FuzzQuote.
func FuzzQuote(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1000 || max < -1000 {
			max %= 1000
		}
		out := QuoteN(s, max)
		checkRendering(t, s, max, out)
		for _, twin := range []string{s + " ", " " + s, s + "\x00", s + "\u200b", s + "\x80"} {
			if QuoteN(twin, max) == out {
				t.Fatalf("%q and %q both render as %s", s, twin, out)
			}
		}
		if len(s) > 0 {
			if QuoteN(s[1:], max) == out || QuoteN(s[:len(s)-1], max) == out {
				t.Fatalf("%q renders like a shortened copy: %s", s, out)
			}
		}
	})
}
