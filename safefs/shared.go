package safefs

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
)

// This file holds what both implementations share: the openat2 one
// (fs_linux.go) and the portable one (portable.go), so that each rule is
// written once.

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a regular file"
}

var errShort = errors.New("file shorter than its size: modified while it was read")

// copyRange hashes exactly n bytes at off.
func copyRange(h hash.Hash, r io.ReaderAt, off, n int64) error {
	buf := make([]byte, 256<<10)
	for n > 0 {
		b := buf
		if int64(len(b)) > n {
			b = b[:n]
		}
		k, err := r.ReadAt(b, off)
		if err != nil {
			return err
		}
		h.Write(b[:k])
		off += int64(k)
		n -= int64(k)
	}
	return nil
}

// hashContent computes the content digest of a regular file of the given
// size read through r (an open descriptor or handle, never a path).
func hashContent(r io.ReaderAt, size int64) (sum, scheme string, hashed int64, err error) {
	h := sha256.New()
	if size <= fullHashLimit {
		if err := copyRange(h, r, 0, size); err != nil {
			return "", "", 0, err
		}
		return hex.EncodeToString(h.Sum(nil)), HashFull, size, nil
	}
	// Domain label and size first, so a sampled digest can never equal a
	// full digest of some other content.
	h.Write([]byte("mcpsafe/safefs sampled v1\x00"))
	var sz [8]byte
	binary.BigEndian.PutUint64(sz[:], uint64(size))
	h.Write(sz[:])
	if err := copyRange(h, r, 0, sampleSize); err != nil {
		return "", "", 0, err
	}
	if err := copyRange(h, r, size-sampleSize, sampleSize); err != nil {
		return "", "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), HashSampled, 2 * sampleSize, nil
}

// changed marks a failure to find the approved file as ErrChanged while
// keeping the specific cause matchable.
func changed(err error) error {
	if err == nil || errors.Is(err, ErrChanged) || errors.Is(err, ErrClosed) ||
		errors.Is(err, ErrInvalidPath) || errors.Is(err, ErrOutsideRoots) {
		// Lexical refusals depend on the path string alone, not on the
		// file system, so they cannot be a change since the preview.
		return err
	}
	return fmt.Errorf("%w: %w", ErrChanged, err)
}

// Test hooks, nil outside tests: they let tests win the races that remain
// deterministically, at the exact points between checks and actions.
var testHookBeforeRename, testHookBeforeUnlink func(path string)

// tempName returns a fresh name that nobody can predict.
func tempName(op string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("safefs: random name: %w", err)
	}
	return ".mcpsafe-" + op + "-" + hex.EncodeToString(b[:]), nil
}
