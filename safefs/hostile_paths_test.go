package safefs

import (
	"os"
	"strings"
	"testing"
)

// TestHostileStrings: oversized and odd paths are clean refusals, never a
// panic and never a success.
func TestHostileStrings(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("file.txt"), "hello\n")
	for _, p := range []string{
		strings.Repeat("a/", 5000) + "f",
		strings.Repeat("n", 300),
		tr.root + "/" + strings.Repeat("../", 50) + "etc/passwd",
		"file.txt/..",
		"\\..\\..\\etc\\passwd",
		"file.txt\n",
		" file.txt",
	} {
		info, err := tr.fs.Inspect(p)
		if err == nil {
			// Only "file.txt/.." may clean to something real: the root.
			t.Fatalf("%q: Inspect succeeded: %+v", p, info)
		}
		if _, err := tr.fs.List(p); err == nil && p != "file.txt/.." {
			t.Fatalf("%q: List succeeded", p)
		}
	}
	// Paths are cleaned lexically before anything else; the cleaned path is
	// what Info.Path shows and what is acted on.
	for _, p := range []string{"file.txt/", "file.txt/.", "./file.txt//"} {
		info, err := tr.fs.Inspect(p)
		if err != nil || info.Path != tr.p("file.txt") {
			t.Fatalf("%q: %+v %v", p, info, err)
		}
	}
	mustContent(t, tr.p("file.txt"), "hello\n")
	tr.checkOutside(t)
}

func TestEmptyFile(t *testing.T) {
	tr := newTree(t)
	mustWrite(t, tr.p("empty"), "")
	info, err := tr.fs.Inspect("empty")
	if err != nil || info.Size != 0 || info.SHA256 != sha("") || info.HashedBytes != 0 {
		t.Fatalf("%+v %v", info, err)
	}
	if err := tr.fs.Remove("empty", info); err != nil {
		t.Fatal(err)
	}
	mustGone(t, tr.p("empty"))
}

func BenchmarkInspect1MiB(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(dir+"/f", make([]byte, 1<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := newFS(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(1 << 20)
	for b.Loop() {
		if _, err := f.Inspect("f"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkInspectRemoveSmall(b *testing.B) {
	dir := b.TempDir()
	f, err := newFS(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	for b.Loop() {
		if err := os.WriteFile(dir+"/f", []byte("small file\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		info, err := f.Inspect("f")
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Remove("f", info); err != nil {
			b.Fatal(err)
		}
	}
}
