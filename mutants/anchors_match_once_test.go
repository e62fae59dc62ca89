package mutants

import (
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository root, seen from this package's directory.
const root = ".."

// TestAnchorsMatchOnce applies every mutant in memory: each edit's Old text
// must occur exactly once in its file (as the mutant's earlier edits left
// it), and a mutated Go file must still parse. A change to the source that
// moves an anchor fails here, in the commit that moved it.
func TestAnchorsMatchOnce(t *testing.T) {
	for _, m := range All() {
		files, err := m.Apply(root)
		if err != nil {
			t.Error(err)
			continue
		}
		for f, b := range files {
			if !strings.HasSuffix(f, ".go") {
				continue
			}
			if _, err := parser.ParseFile(token.NewFileSet(), f, b, parser.SkipObjectResolution); err != nil {
				t.Errorf("mutant %s: %s does not parse once mutated: %v", m.Name, f, err)
			}
		}
	}
}

// TestApplyRefusesAmbiguousAnchors is the control for the check above: an
// anchor found twice, or not at all, is an error, and one found once is
// replaced.
func TestApplyRefusesAmbiguousAnchors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nvar x, y = 1, 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		old, want string
	}{
		{"1", ""},     // twice
		{"2", ""},     // nowhere
		{"y = 1", ""}, // once
	} {
		m := Mutant{Name: "m", Edits: []Edit{{File: "a.go", Old: c.old, New: "y = 2"}}}
		files, err := m.Apply(dir)
		once := c.old == "y = 1"
		if once != (err == nil) {
			t.Errorf("Old %q: err = %v", c.old, err)
		}
		if once && string(files["a.go"]) != "package a\n\nvar x, y = 2, 1\n" {
			t.Errorf("Old %q: got %q", c.old, files["a.go"])
		}
	}
	// Edits apply in order: the second sees the first's result.
	m := Mutant{Name: "m", Edits: []Edit{{File: "a.go", Old: "x, y", New: "x, z"}, {File: "a.go", Old: "z", New: "w"}}}
	files, err := m.Apply(dir)
	if err != nil || string(files["a.go"]) != "package a\n\nvar x, w = 1, 1\n" {
		t.Errorf("sequential edits: %q, %v", files["a.go"], err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.go")); string(b) != "package a\n\nvar x, y = 1, 1\n" {
		t.Errorf("Apply wrote to the file: %q", b)
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// TestCatalogueWellFormed: names are unique and usable as -run substrings,
// every mutant says why, names packages that exist, has a valid -run
// filter and edits that change something in a file of the repository.
func TestCatalogueWellFormed(t *testing.T) {
	all := All()
	if len(all) == 0 {
		t.Fatal("empty catalogue")
	}
	seen := map[string]bool{}
	for _, m := range all {
		if !nameRE.MatchString(m.Name) {
			t.Errorf("mutant %q: name must be lower-case words joined by -", m.Name)
		}
		if seen[m.Name] {
			t.Errorf("mutant %s: duplicate name", m.Name)
		}
		seen[m.Name] = true
		if strings.TrimSpace(m.Why) == "" {
			t.Errorf("mutant %s: no Why", m.Name)
		}
		if len(m.Packages) == 0 {
			t.Errorf("mutant %s: no Packages", m.Name)
		}
		for _, p := range m.Packages {
			if err := goPackageDir(p); err != nil {
				t.Errorf("mutant %s: package %q: %v", m.Name, p, err)
			}
		}
		if m.Run != "" {
			for _, part := range strings.Split(m.Run, "/") {
				if _, err := regexp.Compile(part); err != nil {
					t.Errorf("mutant %s: Run %q: %v", m.Name, m.Run, err)
				}
			}
		}
		if len(m.Edits) == 0 {
			t.Errorf("mutant %s: no Edits", m.Name)
		}
		for _, e := range m.Edits {
			if e.File == "" || path.Clean(e.File) != e.File || path.IsAbs(e.File) || strings.HasPrefix(e.File, "../") {
				t.Errorf("mutant %s: File %q must be a clean path inside the repository", m.Name, e.File)
			}
			if e.Old == "" || e.Old == e.New {
				t.Errorf("mutant %s: edit of %s changes nothing", m.Name, e.File)
			}
		}
	}
}

// goPackageDir checks that a go test package pattern names a directory of
// the repository holding Go files.
func goPackageDir(p string) error {
	if p != "." && !strings.HasPrefix(p, "./") || strings.Contains(p, "...") || path.Clean(p) != p && p != "./"+path.Clean(p) {
		return errBadPattern
	}
	ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(p)))
	if err != nil {
		return err
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".go") {
			return nil
		}
	}
	return errNoGoFiles
}

type patternError string

func (e patternError) Error() string { return string(e) }

const (
	errBadPattern = patternError("want . or ./dir (no ..., no ..)")
	errNoGoFiles  = patternError("no Go files")
)
