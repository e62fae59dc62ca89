package safefs

import (
	"testing"

	"golang.org/x/text/unicode/norm"
)

// APFS and HFS+ treat the NFC and NFD spellings of a name as one file:
// a move onto the other form of an existing name is ErrExists.
// Compile-only here (see docs/TESTING.md).
func TestUnicodeNormalizationAliases(t *testing.T) {
	tr := newTree(t)
	nfc := norm.NFC.String("caf\u00e9.txt")
	nfd := norm.NFD.String(nfc)
	mustWrite(t, tr.p(nfc), "mine\n")
	mustWrite(t, tr.p("src.txt"), "src\n")
	info, err := tr.fs.Inspect("src.txt")
	if err != nil {
		t.Fatal(err)
	}
	mustIs(t, tr.fs.Move("src.txt", nfd, info), ErrExists)
	mustContent(t, tr.p(nfc), "mine\n")
	// The resource fork and AppleDouble files are refused by name.
	for _, p := range []string{nfc + "/..namedfork/rsrc", "._" + nfc} {
		_, err := tr.fs.Inspect(p)
		mustIs(t, err, ErrInvalidPath)
	}
}
