package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultDir is $XDG_STATE_HOME/mcpsafe, or ~/.local/state/mcpsafe when
// XDG_STATE_HOME is unset or not absolute (the XDG spec says to ignore
// relative values): a place outside any project directory an agent is
// given.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcpsafe"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("journal: no default path: %w", err)
	}
	if home == "" || !filepath.IsAbs(home) {
		return "", errors.New("journal: no default path: home directory is not an absolute path")
	}
	return filepath.Join(home, ".local", "state", "mcpsafe"), nil
}

// DefaultPath is DefaultDir()/journal.jsonl: one journal for a program that
// runs one gated server. A journal has one writer, so servers that may run
// side by side use DefaultPathFor instead.
func DefaultPath() (string, error) {
	d, err := DefaultDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "journal.jsonl"), nil
}

// DefaultPathFor is DefaultDir()/journal-NAME.jsonl, the default journal of
// one server instance (mcpsafe files keys it by its audience, mcpsafe proxy
// by audience and upstream). NAME keeps letters, digits, '.', '_' and '-';
// anything else (a path separator, a space) becomes '_' and a short hash of
// the original name is appended, so that two different names never share
// a file.
func DefaultPathFor(name string) (string, error) {
	if name == "" {
		return DefaultPath()
	}
	d, err := DefaultDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "journal-"+fileSafe(name)+".jsonl"), nil
}

// DefaultJournals lists the journals in DefaultDir (journal.jsonl and
// journal-*.jsonl), sorted.
func DefaultJournals() (dir string, paths []string, err error) {
	dir, err = DefaultDir()
	if err != nil {
		return "", nil, err
	}
	for _, pat := range []string{"journal.jsonl", "journal-*.jsonl"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return "", nil, err
		}
		paths = append(paths, m...)
	}
	return dir, paths, nil
}

const maxNameBytes = 64

func fileSafe(name string) string {
	var b strings.Builder
	changed := false
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-',
			r == '.' && b.Len() > 0: // no leading dot: no hidden file, no ".."
			b.WriteRune(r)
		default:
			b.WriteByte('_')
			changed = true
		}
	}
	s := b.String()
	if len(s) > maxNameBytes {
		s, changed = s[:maxNameBytes], true
	}
	if changed {
		sum := sha256.Sum256([]byte(name))
		s += "-" + hex.EncodeToString(sum[:4])
	}
	return s
}
