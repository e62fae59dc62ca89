package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The public key a verifier is given is checked to be one: the signer key
// handed over by mistake (it would let the verifier's reader sign), an
// empty file or a missing one is refused; the control verifies the
// journal its signer signed.
func TestCheckpointVerifierKeyFileMustHoldAPublicKey(t *testing.T) {
	skey, vkey, err := GenerateCheckpointKey("audit.example")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ name, path, want string }{
		{"the signer key", write("signer", skey+"\n"), "checkpoint public key"},
		{"empty", write("empty", "\n"), "checkpoint public key"},
		{"a key cut short", write("short", vkey[:len(vkey)-8]+"\n"), "checkpoint public key"},
		{"missing", filepath.Join(dir, "none"), "no such file"},
	} {
		if v, err := LoadCheckpointVerifier(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v %v, want %q", tc.name, v, err, tc.want)
		}
	}
	keyFile := write("signer-0600", skey+"\n")
	keyDir := t.TempDir()
	if err := os.Rename(keyFile, filepath.Join(keyDir, "ck.key")); err != nil {
		t.Fatal(err)
	}
	path, _ := signedJournal(t, filepath.Join(keyDir, "ck.key"))
	v, err := LoadCheckpointVerifier(write("pub", "  "+vkey+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, rep, err := VerifySigned(path, v); err != nil || rep.Latest.Key != "audit.example" || rep.Latest.Seq != 6 {
		t.Fatalf("control: %+v %v", rep, err)
	}
}
