package safefs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestLexicalResolveVectors(t *testing.T) {
	f, err := os.Open("testdata/resolve.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		cols := strings.Split(text, "\t")
		if len(cols) != 3 {
			t.Fatalf("testdata/resolve.txt:%d: want 3 columns, got %d", line, len(cols))
		}
		roots := strings.Split(cols[0], ",")
		p, err := strconv.Unquote(cols[1])
		if err != nil {
			t.Fatalf("testdata/resolve.txt:%d: %v", line, err)
		}
		n++
		t.Run(fmt.Sprintf("%d", line), func(t *testing.T) {
			i, rel, err := lexicalResolve(roots, p)
			var got string
			switch {
			case errors.Is(err, ErrOutsideRoots):
				got = "outside"
			case errors.Is(err, ErrInvalidPath):
				got = "invalid"
			case err != nil:
				got = "error: " + err.Error()
			default:
				got = fmt.Sprintf("%d:%s", i, rel)
			}
			if got != cols[2] {
				t.Errorf("roots %v path %q: got %s, want %s", roots, p, got, cols[2])
			}
		})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 30 {
		t.Fatalf("only %d vectors read", n)
	}
}

func TestInfoDiff(t *testing.T) {
	a := Info{Path: "/r/f", Dev: 1, Ino: 2, Size: 3, Nlink: 1, SHA256: "ab", HashScheme: HashFull, HashedBytes: 3, Mode: 0o644}
	if d := a.Diff(a); d != nil {
		t.Fatalf("identical: %v", d)
	}
	cases := map[string]func(*Info){
		"path":   func(i *Info) { i.Path = "/r/g" },
		"device": func(i *Info) { i.Dev++ },
		"inode":  func(i *Info) { i.Ino++ },
		"type":   func(i *Info) { i.Mode |= 1 << 31 },
		"mode":   func(i *Info) { i.Mode = 0o600 },
		"size":   func(i *Info) { i.Size++ },
		"mtime":  func(i *Info) { i.ModTime = i.ModTime.Add(1) },
		"ctime":  func(i *Info) { i.ChangeTime = i.ChangeTime.Add(1) },
		"nlink":  func(i *Info) { i.Nlink++ },
		"sha256": func(i *Info) { i.SHA256 = "cd" },
		"hash_scheme": func(i *Info) {
			i.HashScheme = HashSampled
		},
	}
	for name, mut := range cases {
		b := a
		mut(&b)
		if d := a.Diff(b); len(d) != 1 || d[0] != name {
			t.Errorf("%s: Diff = %v", name, d)
		}
	}
}
