package safefs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// The Windows and macOS name traps are pure functions of the string,
// tested here on every platform.
func TestWindowsNameTraps(t *testing.T) {
	refused := []struct{ name, p string }{
		{"raw prefix", `\\?\C:\work\a.txt`},
		{"raw prefix, slashes", `//?/C:/work/a.txt`},
		{"device namespace", `\\.\PhysicalDrive0`},
		{"named pipe", `\\.\pipe\x`},
		{"NT prefix", `\??\C:\work\a.txt`},
		{"UNC", `\\server\share\a.txt`},
		{"UNC, slashes", `//server/share/a.txt`},
		{"drive-relative", `C:a.txt`},
		{"drive-relative, deeper", `C:work\a.txt`},
		{"drive alone", `C:`},
		{"rooted on current drive", `\work\a.txt`},
		{"rooted, slash", `/work/a.txt`},
		{"stream", `a.txt:hidden`},
		{"stream type", `a.txt::$DATA`},
		{"stream on directory", `dir:stream\a.txt`},
		{"stream after drive", `C:\work\a.txt:hidden`},
		{"CON", `CON`},
		{"con lower", `con`},
		{"NUL with extension", `NUL.txt`},
		{"NUL double extension", `nul.tar.gz`},
		{"device with trailing spaces", `AUX  .txt`},
		{"COM1", `dir\COM1`},
		{"COM0", `COM0`},
		{"LPT9", `lpt9.log`},
		{"COM superscript 1", "COM\u00b9"},
		{"LPT superscript 2", "lpt\u00b2.txt"},
		{"LPT superscript 3", "LPT\u00b3"},
		{"CONIN$", `CONIN$`},
		{"CONOUT$", `conout$.txt`},
		{"PRN in the middle", `a\prn\b.txt`},
		{"trailing dot", `a.txt.`},
		{"trailing space", `a.txt `},
		{"trailing dot in directory", `dir.\a.txt`},
		{"trailing space in directory", `dir \a.txt`},
		{"short name", `PROGRA~1\a.txt`},
		{"short name with extension", `REPORT~12.TXT`},
		{"short name lower", `report~1.txt`},
		{"wildcard", `a*.txt`},
		{"question mark", `a?.txt`},
		{"angle", `a<b`},
		{"pipe", `a|b`},
		{"quote", `a"b`},
		{"control character", "a\x01b"},
	}
	for _, c := range refused {
		if err := windowsTrap(c.p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("%s: windowsTrap(%q) = %v, want ErrInvalidPath", c.name, c.p, err)
		}
	}
	// Controls: ordinary names, including ones that look close.
	for _, p := range []string{
		`a.txt`, `dir\a.txt`, `dir/a.txt`, `C:\work\a.txt`, `c:/work/a.txt`, `C:\`,
		`CONSOLE.txt`, `NULL`, `COM10`, `LPT`, `COMX`, `auxiliary.md`, `con-notes.txt`,
		`a~b.txt`, `a~.txt`, `~1a.txt`, `x~1y.txt`, `.hidden`, `..\x`, `.\a.txt`, `a..b`,
		`file.tar.gz`, `caf\u00e9.txt`, `a b.txt`,
	} {
		if err := windowsTrap(p); err != nil {
			t.Errorf("control %q refused: %v", p, err)
		}
	}
}

func TestDarwinNameTraps(t *testing.T) {
	for _, p := range []string{
		"a.txt/..namedfork/rsrc", "a.txt/..NAMEDFORK/data", "._a.txt", "dir/._a.txt", "._dir/a.txt",
	} {
		if err := darwinTrap(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("darwinTrap(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	for _, p := range []string{"a.txt", "._", "_.a", ".a._b", "a/.namedfork", "..namedforkx", "dir/a._txt"} {
		if p == "._" {
			// "._" alone is also an AppleDouble prefix: refused.
			if darwinTrap(p) == nil {
				t.Errorf("%q accepted", p)
			}
			continue
		}
		if err := darwinTrap(p); err != nil {
			t.Errorf("control %q refused: %v", p, err)
		}
	}
}

// The rules each platform enforces: Windows's on Windows, macOS's on
// macOS, none on Linux (a colon is an ordinary character there).
func TestPlatformTrapsChosenPerOS(t *testing.T) {
	for _, c := range []struct {
		goos       string
		stream, ad bool // refuses a.txt:hidden, ._a.txt
	}{
		{"windows", true, false},
		{"darwin", false, true},
		{"linux", false, false},
	} {
		trap := platformTrap(c.goos)
		if got := trap("a.txt:hidden") != nil; got != c.stream {
			t.Errorf("%s refuses a.txt:hidden: %v, want %v", c.goos, got, c.stream)
		}
		if got := trap("._a.txt") != nil; got != c.ad {
			t.Errorf("%s refuses ._a.txt: %v, want %v", c.goos, got, c.ad)
		}
	}
	if platformRootTrap("windows")(`\\server\share`) == nil || platformRootTrap("linux")(`/srv`) != nil {
		t.Error("root traps: a UNC root must be refused on Windows only")
	}
}

// The traps are checked before the file system is touched: with the
// Windows rules in force, an existing file whose name is a trap is not
// even inspected, while the same FS inspects it with the rules off.
func TestTrapsRefusedBeforeLookup(t *testing.T) {
	dir := t.TempDir()
	name := "a.txt~1"
	if filepath.Separator == '/' {
		name = "a.txt:hidden" // an ordinary name on Unix
	}
	mustWrite(t, filepath.Join(dir, name), "x")
	f, err := newFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := pathTrap
	t.Cleanup(func() { pathTrap = saved })
	pathTrap = windowsTrap
	for _, p := range []string{name, filepath.Join(dir, name), `NUL.txt`, `C:x`} {
		if _, err := f.Inspect(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("Inspect(%q) with the Windows rules: %v, want ErrInvalidPath", p, err)
		}
		if _, err := f.CheckDestination(p); !errors.Is(err, ErrInvalidPath) {
			t.Errorf("CheckDestination(%q) with the Windows rules: %v, want ErrInvalidPath", p, err)
		}
	}
	if filepath.Separator == '/' {
		pathTrap = func(string) error { return nil }
		if _, err := f.Inspect(name); err != nil {
			t.Fatalf("control: %q without the Windows rules: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}
