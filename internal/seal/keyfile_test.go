package seal

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func keyLine(b byte) string { return base64.StdEncoding.EncodeToString(testKey(b)) }

func writeFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mcpsafe.key")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; set it exactly.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadKeyFileGood(t *testing.T) {
	cases := map[string]string{
		"one line":          keyLine(1) + "\n",
		"no final newline":  keyLine(1),
		"blank lines":       "\n\n" + keyLine(1) + "\n\n",
		"CRLF and spaces":   "  " + keyLine(1) + " \r\n",
		"two keys":          keyLine(1) + "\n" + keyLine(2) + "\n",
		"three with blanks": keyLine(1) + "\n\n" + keyLine(2) + "\n" + keyLine(3) + "\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			k, err := LoadKeyFile(writeFile(t, content, 0o600))
			if err != nil {
				t.Fatal(err)
			}
			if want := mustRing(t, testKey(1)).KeyIDs()[0]; k.KeyIDs()[0] != want {
				t.Fatalf("sealing key id %s, want the first line's %s", k.KeyIDs()[0], want)
			}
		})
	}
	// 0400 is fine too.
	if _, err := LoadKeyFile(writeFile(t, keyLine(1), 0o400)); err != nil {
		t.Fatal(err)
	}
}

func TestLoadKeyFileRotationOrder(t *testing.T) {
	old := mustRing(t, testKey(1))
	issued := mustSeal(t, old, aud, []byte("grant"))
	k, err := LoadKeyFile(writeFile(t, keyLine(2)+"\n"+keyLine(1)+"\n", 0o600))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Open(aud, issued); err != nil {
		t.Fatalf("second line does not open: %v", err)
	}
	if id := sealedKeyID(t, mustSeal(t, k, aud, []byte("x"))); id != mustRing(t, testKey(2)).KeyIDs()[0] {
		t.Fatalf("sealed with %s, not the first line's key", id)
	}
}

func TestLoadKeyFileRefuses(t *testing.T) {
	zero := base64.StdEncoding.EncodeToString(make([]byte, KeySize))
	k31 := base64.StdEncoding.EncodeToString(testKey(1)[:31])
	k33 := base64.StdEncoding.EncodeToString(append(testKey(1), 1))
	url := base64.URLEncoding.EncodeToString(append(testKey(0xfb), 0xff)[:KeySize])
	cases := []struct {
		name, content string
		mode          os.FileMode
		want          []string
	}{
		{"world readable", keyLine(1), 0o604, []string{"chmod 600", "0604"}},
		{"group readable", keyLine(1), 0o640, []string{"chmod 600"}},
		{"group writable", keyLine(1), 0o620, []string{"chmod 600"}},
		{"world writable", keyLine(1), 0o602, []string{"chmod 600"}},
		{"empty", "", 0o600, []string{"at least one key"}},
		{"blank only", "\n \n", 0o600, []string{"at least one key"}},
		{"not base64", "not a key at all!\n", 0o600, []string{"line 1", "base64"}},
		{"bad base64 on line 3", keyLine(1) + "\n\n" + keyLine(2)[:20] + "*" + keyLine(2)[21:] + "\n", 0o600, []string{"line 3", "base64"}},
		{"unpadded", strings.TrimRight(keyLine(1), "="), 0o600, []string{"line 1", "base64"}},
		{"url alphabet", url, 0o600, []string{"line 1", "base64"}},
		{"31-byte key", k31, 0o600, []string{"line 1", "31 bytes"}},
		{"33-byte key on line 2", keyLine(1) + "\n" + k33, 0o600, []string{"line 2", "33 bytes"}},
		{"all-zero key", keyLine(1) + "\n" + zero, 0o600, []string{"line 2", "all zero"}},
		{"duplicate key", keyLine(1) + "\n" + keyLine(2) + "\n" + keyLine(1), 0o600, []string{"line 3", "line 1", "duplicate"}},
		{"two keys on a line", keyLine(1) + " " + keyLine(2), 0o600, []string{"line 1"}},
		{"comment", "# my key\n" + keyLine(1), 0o600, []string{"line 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, err := LoadKeyFile(writeFile(t, c.content, c.mode))
			if err == nil || k != nil {
				t.Fatalf("accepted: %v", k)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			// Errors must not echo key material.
			if strings.Contains(err.Error(), keyLine(1)[:12]) || strings.Contains(err.Error(), keyLine(2)[:12]) {
				t.Errorf("error leaks key material: %q", err)
			}
		})
	}
}

func TestLoadKeyFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	target := writeFile(t, keyLine(1), 0o600)
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeyFile(link); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Fatalf("symlink: %v", err)
	}
	if _, err := LoadKeyFile(dir); err == nil || !strings.Contains(err.Error(), "regular file") {
		t.Fatalf("directory: %v", err)
	}
	if _, err := LoadKeyFile(filepath.Join(dir, "missing.key")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	big := writeFile(t, strings.Repeat(keyLine(1)+"\n", 2000), 0o600)
	if _, err := LoadKeyFile(big); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("oversize file: %v", err)
	}
	// Control: the target itself loads.
	if _, err := LoadKeyFile(target); err != nil {
		t.Fatal(err)
	}
}

func TestWriteKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.key")
	if err := WriteKeyFile(path); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode %04o, want 0600", info.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if lines := strings.Split(string(data), "\n"); len(lines) != 2 || lines[1] != "" || len(lines[0]) != 44 {
		t.Fatalf("want one base64 line of 44 characters, got %q", data)
	}
	k, err := LoadKeyFile(path)
	if err != nil {
		t.Fatalf("written file does not load: %v", err)
	}
	s := mustSeal(t, k, aud, []byte("grant"))
	if _, err := k.Open(aud, s); err != nil {
		t.Fatal(err)
	}

	// Never overwrite: an existing key file, another file, or a symlink.
	if err := WriteKeyFile(path); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("overwrite: %v", err)
	}
	again, _ := os.ReadFile(path)
	if string(again) != string(data) {
		t.Fatal("refused overwrite still changed the file")
	}
	dangling := filepath.Join(t.TempDir(), "dangling.key")
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.Symlink(victim, dangling); err != nil {
		t.Fatal(err)
	}
	if err := WriteKeyFile(dangling); err == nil {
		t.Fatal("followed a dangling symlink")
	}
	if _, err := os.Lstat(victim); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("symlink target was created")
	}

	// Two fresh files hold different keys.
	other := filepath.Join(t.TempDir(), "other.key")
	if err := WriteKeyFile(other); err != nil {
		t.Fatal(err)
	}
	k2, err := LoadKeyFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if k2.KeyIDs()[0] == k.KeyIDs()[0] {
		t.Fatal("two generated key files hold the same key")
	}
	if err := WriteKeyFile(filepath.Join(t.TempDir(), "no", "such", "dir.key")); err == nil {
		t.Fatal("wrote into a missing directory")
	}
}
