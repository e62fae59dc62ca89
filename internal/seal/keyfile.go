package seal

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxKeyFileSize bounds what LoadKeyFile reads: a key line is 45 bytes, so
// this allows hundreds of rotated keys and refuses a wrong path pointing
// at a large file.
const maxKeyFileSize = 64 << 10

// LoadKeyFile reads a key file: one key per line, standard base64 of
// exactly 32 bytes, newest first (the first line seals, all open). Blank
// lines and surrounding spaces are ignored. The file must be a regular
// file (not a symlink) that neither group nor others may read or write,
// because replicas share it and anyone who reads it can mint approvals.
// Errors name the line, never its content.
func LoadKeyFile(path string) (*Keyring, error) {
	before, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("seal: key file: %w", err)
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("seal: key file %s is not a regular file (symlinks are refused)", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("seal: key file: %w", err)
	}
	defer f.Close()
	// Check the opened file itself: the path may have been swapped (for a
	// symlink or another file) between Lstat and Open.
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("seal: key file: %w", err)
	}
	if !os.SameFile(before, info) || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("seal: key file %s changed while being opened", path)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("seal: key file %s has mode %04o, readable or writable by group or others; run chmod 600 %s", path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("seal: key file %s: %w", path, err)
	}
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("seal: key file %s is larger than %d bytes", path, maxKeyFileSize)
	}
	var keys [][]byte
	defer func() {
		for _, key := range keys {
			clear(key)
		}
	}()
	firstLine := map[[idLen]byte]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		key, err := base64.StdEncoding.Strict().DecodeString(string(text))
		if err != nil {
			return nil, fmt.Errorf("seal: key file %s line %d: not standard base64", path, line)
		}
		if len(key) != KeySize {
			return nil, fmt.Errorf("seal: key file %s line %d: %w: %d bytes, want %d", path, line, ErrWeakKey, len(key), KeySize)
		}
		if bytes.Count(key, []byte{0}) == KeySize {
			return nil, fmt.Errorf("seal: key file %s line %d: %w: all zero", path, line, ErrWeakKey)
		}
		if prev, dup := firstLine[keyID(key)]; dup {
			return nil, fmt.Errorf("seal: key file %s line %d: %w (same as line %d)", path, line, ErrDuplicateKey, prev)
		}
		firstLine[keyID(key)] = line
		keys = append(keys, key)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("seal: key file %s: %w", path, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("seal: key file %s: %w", path, ErrNoKey)
	}
	k, err := NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("seal: key file %s: %w", path, err)
	}
	return k, nil
}

// WriteKeyFile creates path (mode 0600, never overwriting) holding one
// fresh random key. To rotate, put the new key's line above the old ones.
func WriteKeyFile(path string) error {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("seal: random key: %w", err)
	}
	line := base64.StdEncoding.EncodeToString(key) + "\n"
	clear(key)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("seal: key file %s already exists; refusing to overwrite it", path)
		}
		return fmt.Errorf("seal: key file: %w", err)
	}
	_, werr := f.WriteString(line)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return fmt.Errorf("seal: writing key file %s: %w", path, werr)
	}
	return nil
}
