package approvals

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// readPrivateFile reads a small file that must not be readable by group or
// others.
func readPrivateFile(what, path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("channel: %s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("channel: %s %s is not a regular file", what, path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("channel: %s %s has mode %04o; it must not be readable by group or others (chmod 600)", what, path, st.Mode().Perm())
	}
	if st.Size() > 1<<20 {
		return nil, fmt.Errorf("channel: %s %s is larger than 1 MiB", what, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("channel: %s: %w", what, err)
	}
	return data, nil
}

// LoadClientSecretFile reads an OIDC client secret: one line, mode 0600.
func LoadClientSecretFile(path string) (string, error) {
	data, err := readPrivateFile("oidc client secret file", path)
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(data), "\r\n")
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("channel: oidc client secret file %s must hold exactly one non-empty line", path)
	}
	return s, nil
}

// LoadOIDCUsersFile reads the single-sign-on mapping: one "VALUE NAME" per
// line (VALUE the ID token's email or sub, NAME the approver name it signs
// in as); blank lines and # comments are ignored. A value listed twice is
// an error, never a silent override.
func LoadOIDCUsersFile(path string) (map[string]string, error) {
	data, err := readPrivateFile("oidc users file", path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("channel: oidc users file %s line %d: want VALUE NAME", path, line)
		}
		if _, dup := out[f[0]]; dup {
			return nil, fmt.Errorf("channel: oidc users file %s line %d: %s listed twice", path, line, f[0])
		}
		out[f[0]] = f[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("channel: oidc users file %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("channel: oidc users file %s maps nobody", path)
	}
	return out, nil
}
