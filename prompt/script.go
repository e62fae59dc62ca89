package prompt

import (
	"slices"
	"unicode"
)

// scriptOrder lists the scripts to try first, so that the usual letters
// are found in one or two table lookups; the rest follow by name.
var scriptOrder = func() []string {
	first := []string{"Latin", "Cyrillic", "Greek", "Han", "Hiragana", "Katakana", "Hangul",
		"Arabic", "Hebrew", "Devanagari", "Thai", "Armenian", "Georgian", "Cherokee", "Bopomofo"}
	rest := make([]string, 0, len(unicode.Scripts))
	for name := range unicode.Scripts {
		if name != "Common" && name != "Inherited" && !slices.Contains(first, name) {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	return append(first, rest...)
}()

// compatible lists script sets that are one writing system in practice
// (UTS #39 "Highly Restrictive"): Japanese, Chinese with Bopomofo, and
// Korean, each also with Latin. Flagging every Japanese name as mixed
// would teach people to ignore the flag.
var compatible = [][]string{
	{"Han", "Hiragana", "Katakana", "Latin"},
	{"Bopomofo", "Han", "Latin"},
	{"Hangul", "Han", "Latin"},
}

// MixedScript returns the scripts, sorted by name, when the letters of s
// come from more than one script in a way no single writing system uses
// (Cyrillic "а" in an otherwise Latin "cаche.txt"), and nil otherwise.
// Common and Inherited characters (digits, punctuation, combining marks)
// belong to no script here.
func MixedScript(s string) []string {
	var found []string
	last := ""
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		name := ""
		switch {
		case r < 0x80:
			name = "Latin"
		case last != "" && unicode.Is(unicode.Scripts[last], r):
			name = last
		default:
			for _, n := range scriptOrder {
				if unicode.Is(unicode.Scripts[n], r) {
					name = n
					break
				}
			}
		}
		if name == "" {
			continue // a letter of Common (none today) or of no known script
		}
		last = name
		if !slices.Contains(found, name) {
			found = append(found, name)
		}
	}
	if len(found) < 2 {
		return nil
	}
	slices.Sort(found)
	for _, set := range compatible {
		if subset(found, set) {
			return nil
		}
	}
	return found
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
