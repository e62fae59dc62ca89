package approvalpage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/channel"
)

// The passkeys file is trusted as configuration: one that others may
// write, one made for another relying party (an approval service's), or
// one with no passkey is refused; the control, a 0600 file for
// "localhost", is taken, and the page is then addressed as localhost.
func TestPasskeysFileIsCheckedBeforeItIsTrusted(t *testing.T) {
	dir := t.TempDir()
	key := channel.RegisteredPasskey{Approver: "ada", CredentialID: "QURBLWtleTE", PublicKey: "cHVibGlj"}
	write := func(name string, reg channel.PasskeyRegistry, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := reg.Save(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	local := channel.PasskeyRegistry{RPID: "localhost", Origin: "http://localhost:5555", Passkeys: []channel.RegisteredPasskey{key}}
	for _, c := range []struct {
		name, path, want string
	}{
		{"writable by others", write("open.json", local, 0o666), "writable by others"},
		{"writable by the group", write("group.json", local, 0o620), "writable by others"},
		{"an approval service's file", write("service.json", channel.PasskeyRegistry{RPID: "approvals.example.com", Origin: "https://approvals.example.com", Passkeys: []channel.RegisteredPasskey{key}}, 0o600), "approval-page enroll"},
		{"no passkey", write("empty.json", channel.PasskeyRegistry{RPID: "localhost", Origin: "http://localhost:5555", Passkeys: []channel.RegisteredPasskey{}}, 0o600), "lists no passkey"},
	} {
		if _, err := LoadPasskeys(c.path); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
	reg, err := LoadPasskeys(write("mine.json", local, 0o600))
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	p, err := Listen(Options{Addr: "127.0.0.1:0", Passkeys: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !strings.HasPrefix(p.URL(), "http://localhost:") {
		t.Fatalf("a page with passkeys at %s (WebAuthn takes no IP address)", p.URL())
	}
}
