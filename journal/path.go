package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// DefaultPath is $XDG_STATE_HOME/mcpsafe/journal.jsonl, or
// ~/.local/state/mcpsafe/journal.jsonl when XDG_STATE_HOME is unset or not
// absolute (the XDG spec says to ignore relative values): a place outside
// any project directory an agent is given.
func DefaultPath() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mcpsafe", "journal.jsonl"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("journal: no default path: %w", err)
	}
	if home == "" || !filepath.IsAbs(home) {
		return "", errors.New("journal: no default path: home directory is not an absolute path")
	}
	return filepath.Join(home, ".local", "state", "mcpsafe", "journal.jsonl"), nil
}
