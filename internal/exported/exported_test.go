package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Every kind is counted once, and nothing unexported, nothing reachable
// only through an unexported type, and nothing in a test file is.
func TestExportedCountsEachKind(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "io"

func F() {}
func f() {}

type T struct {
	A, b int
	io.Reader
	*U
	c struct{ D int }
}
type U[X any] struct{ E X }
type I interface {
	M()
	m()
	io.Closer
}
type t struct{ G int }

func (T) N()     {}
func (*U[X]) O() {}
func (t) P()     {}
func (T) q()     {}

const C, c = 1, 2

var (
	V = 1
	v = 2
)
`
	test := "package p\n\nfunc FromTest() {}\n"
	for name, body := range map[string]string{"p.go": src, "p_test.go": test} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := exported(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"const C", "field T.A", "field T.Reader", "field T.U", "field U.E", "func F",
		"method I.M", "method T.N", "method U.O", "type I", "type T", "type U", "var V",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}
