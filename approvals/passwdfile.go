package approvals

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// SetPassword stores the argon2id hash of password for approver name in
// the approvers file at path, replacing the approver's line or adding one.
// The file is created (mode 0600) when missing; other lines, comments
// included, are kept as they are. The file is replaced atomically, so a
// crash leaves the old or the new file, never half of one.
func SetPassword(path, name, password string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("channel: approver name %q: use letters, digits and ._@+- (at most 64)", name)
	}
	hash, err := HashPassword(password)
	if err != nil {
		return err
	}
	lines, err := readApproverLines(path)
	if err != nil {
		return err
	}
	replaced := false
	for i, l := range lines {
		if n, _, ok := entryOf(l); ok && sameApprover(n, name) {
			if replaced {
				return fmt.Errorf("channel: approvers file %s lists %s twice; fix it by hand first", path, name)
			}
			lines[i], replaced = name+":"+hash+slackTail(l), true
		}
	}
	if !replaced {
		lines = append(lines, name+":"+hash)
	}
	return writeApproverLines(path, lines)
}

// ConvertApproversFile replaces every plain-text password in the approvers
// file with its argon2id hash and reports how many it converted. Every
// password must still meet MinTokenLen, or nothing is written.
func ConvertApproversFile(path string) (int, error) {
	lines, err := readApproverLines(path)
	if err != nil {
		return 0, err
	}
	n := 0
	for i, l := range lines {
		name, secret, ok := entryOf(l)
		if !ok || IsPasswordHash(secret) {
			continue
		}
		hash, err := HashPassword(secret)
		if err != nil {
			return 0, fmt.Errorf("channel: approvers file %s line %d (%s): %w; set a new one with `mcpsafe approvals passwd`", path, i+1, prompt.Visible(wire.Clip(name)), err)
		}
		lines[i] = name + ":" + hash + slackTail(l)
		n++
	}
	if n == 0 {
		return 0, nil
	}
	return n, writeApproverLines(path, lines)
}

func sameApprover(a, b string) bool {
	return a == b || identity.Same(a, b)
}

// entryOf splits a non-comment line into name and secret.
func entryOf(line string) (name, secret string, ok bool) {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(t, "#") {
		return "", "", false
	}
	name, secret, ok = strings.Cut(t, ":")
	secret, _ = splitSlackID(secret) // the Slack id is no part of the secret
	return name, secret, ok
}

func readApproverLines(path string) ([]string, error) {
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("channel: approvers file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("channel: approvers file %s is not a regular file", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("channel: approvers file: %w", err)
	}
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil, nil
	}
	return strings.Split(text, "\n"), nil
}

func writeApproverLines(path string, lines []string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".approvers-*")
	if err != nil {
		return fmt.Errorf("channel: approvers file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("channel: approvers file: %w", err)
	}
	if _, err := tmp.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		tmp.Close()
		return fmt.Errorf("channel: approvers file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("channel: approvers file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("channel: approvers file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("channel: approvers file: %w", err)
	}
	return nil
}
