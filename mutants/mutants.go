// Package mutants is mcpsafe's catalogue of curated mutants: deliberate
// breaks of the security code (a reusable token, an approval on timeout, a
// loose "accept", a followed symlink...) that the tests must catch.
//
// Each [Mutant] is a list of text edits to source files and the go test
// command that must fail once they are applied. The catalogue is data, in
// catalogue_<area>.go; cmd/mutate runs it (see docs/TESTING.md), applying
// each mutant with go test -overlay, so the working tree is never modified.
// The package's own test checks that every edit's Old text occurs exactly
// once in its file, so a change that moves an anchor fails at once instead
// of leaving a mutant that silently tests nothing.
package mutants

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A Mutant is one deliberate break.
type Mutant struct {
	// Name is unique and stable: scripts and docs refer to it.
	Name string
	// Packages are the go test package patterns (./proxy, .) whose tests
	// must catch the break, relative to the repository root.
	Packages []string
	// Run, if set, is go test's -run filter.
	Run string
	// Why says what the break stands for.
	Why string
	// Edits are applied in order; each Old must occur exactly once in its
	// file as the earlier edits left it.
	Edits []Edit
}

// An Edit replaces Old by New in File (slash-separated, relative to the
// repository root). Anchor Old on conditions and identifiers, not on long
// blocks of code, so that unrelated changes leave it alone.
type Edit struct {
	File string
	Old  string
	New  string
}

// All returns the catalogue, in a stable order.
func All() []Mutant {
	return slices.Concat(catalogue...)
}

// Apply returns the mutated contents of each file the mutant edits, reading
// the originals under root. It fails when an Old text does not occur
// exactly once.
func (m Mutant) Apply(root string) (map[string][]byte, error) {
	files := map[string]string{}
	for i, e := range m.Edits {
		if _, ok := files[e.File]; !ok {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e.File)))
			if err != nil {
				return nil, fmt.Errorf("mutant %s: %w", m.Name, err)
			}
			files[e.File] = string(b)
		}
		src := files[e.File]
		if n := strings.Count(src, e.Old); n != 1 {
			return nil, fmt.Errorf("mutant %s: edit %d: Old occurs %d times in %s (want once): %.80q", m.Name, i+1, n, e.File, e.Old)
		}
		files[e.File] = strings.Replace(src, e.Old, e.New, 1)
	}
	out := make(map[string][]byte, len(files))
	for f, s := range files {
		out[f] = []byte(s)
	}
	return out, nil
}
