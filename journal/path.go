package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// DefaultDir is where default journals live: a place outside any project
// directory an agent is given, per platform (DefaultDirRule says it in
// words):
//
//   - $XDG_STATE_HOME/mcpsafe on every platform when XDG_STATE_HOME is set
//     to an absolute path (the XDG spec says to ignore relative values);
//   - otherwise ~/.local/state/mcpsafe on Linux and other Unix systems,
//     ~/Library/Application Support/mcpsafe on macOS, and
//     %LOCALAPPDATA%\mcpsafe on Windows (the per-user, non-roaming
//     application data folder; never the roaming one, which may be synced
//     to other machines).
func DefaultDir() (string, error) {
	return defaultDir(runtime.GOOS, os.Getenv, os.UserHomeDir)
}

func defaultDir(goos string, getenv func(string) string, homeDir func() (string, error)) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" && isAbs(goos, d) {
		return joinFor(goos, d, "mcpsafe"), nil
	}
	if goos == "windows" {
		d := getenv("LOCALAPPDATA")
		if d == "" || !isAbs(goos, d) {
			return "", errors.New("journal: no default path: %LOCALAPPDATA% is not set to an absolute path; give --journal PATH")
		}
		return joinFor(goos, d, "mcpsafe"), nil
	}
	home, err := homeDir()
	if err != nil {
		return "", fmt.Errorf("journal: no default path: %w", err)
	}
	if home == "" || !isAbs(goos, home) {
		return "", errors.New("journal: no default path: home directory is not an absolute path")
	}
	if goos == "darwin" || goos == "ios" {
		return joinFor(goos, home, "Library", "Application Support", "mcpsafe"), nil
	}
	return joinFor(goos, home, ".local", "state", "mcpsafe"), nil
}

// DefaultDirRule says where DefaultDir puts journals on this platform, for
// help texts and error messages.
func DefaultDirRule() string { return defaultDirRule(runtime.GOOS) }

func defaultDirRule(goos string) string {
	switch goos {
	case "windows":
		return `%LOCALAPPDATA%\mcpsafe (or $XDG_STATE_HOME\mcpsafe when XDG_STATE_HOME is set)`
	case "darwin", "ios":
		return "~/Library/Application Support/mcpsafe (or $XDG_STATE_HOME/mcpsafe when XDG_STATE_HOME is set)"
	}
	return "$XDG_STATE_HOME/mcpsafe (default ~/.local/state/mcpsafe)"
}

// isAbs and joinFor are filepath.IsAbs and filepath.Join for goos, so the
// rules of every platform are testable on any one.
func isAbs(goos, p string) bool {
	if goos != "windows" {
		return strings.HasPrefix(p, "/")
	}
	return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') ||
		strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "//")
}

func joinFor(goos string, elem ...string) string {
	if goos == runtime.GOOS {
		return filepath.Join(elem...)
	}
	sep := "/"
	if goos == "windows" {
		sep = `\`
	}
	out := strings.TrimRight(elem[0], `/\`)
	for _, e := range elem[1:] {
		out += sep + e
	}
	return out
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
// one server instance (mcpsafe files keys it by audience and roots, mcpsafe proxy
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

// DefaultSlots is how many servers with the same default journal name may
// run at once: the first writes DefaultPathFor(name), the others
// DefaultSlotPath(name, 2..DefaultSlots).
const DefaultSlots = 8

// DefaultSlotPath is the default journal of the n-th server of the same
// name running at once (the same configuration used by two MCP clients):
// slot 1 is DefaultPathFor(name), slot n > 1 is journal-NAME+n.jsonl. A
// journal keeps one writer; the next server takes the next free slot
// instead of failing to start. fileSafe never keeps a '+', so no name's
// first slot is another's later one.
func DefaultSlotPath(name string, n int) (string, error) {
	p, err := DefaultPathFor(name)
	if err != nil || n <= 1 {
		return p, err
	}
	return strings.TrimSuffix(p, ".jsonl") + fmt.Sprintf("+%d.jsonl", n), nil
}

// ServerNoteSuffix names the file beside a default journal that says which
// server writes it (WriteServerNote), for `mcpsafe journal list`.
const ServerNoteSuffix = ".server"

const maxServerNote = 1024

// WriteServerNote records, beside the journal at path, a line saying which
// server writes it (its audience and instance): default journal names are
// hashes, and a person choosing one needs to know whose it is. The note
// is only ever shown, never trusted.
func WriteServerNote(path, note string) error {
	if len(note) > maxServerNote {
		note = note[:maxServerNote]
	}
	tmp := path + ServerNoteSuffix + ".tmp"
	if err := os.WriteFile(tmp, []byte(note+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path+ServerNoteSuffix)
}

// ServerNote reads what WriteServerNote recorded beside path, or "".
func ServerNote(path string) string {
	f, err := os.Open(path + ServerNoteSuffix)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, maxServerNote+1)
	n, _ := io.ReadFull(f, b)
	return strings.TrimSpace(string(b[:min(n, maxServerNote)]))
}

// DefaultJournals lists the journals in DefaultDir (journal.jsonl and
// journal-*.jsonl, later slots included), sorted.
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
