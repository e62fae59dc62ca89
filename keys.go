package mcpsafe

import (
	"crypto/hmac"
	"crypto/sha256"

	"github.com/mcpsafe/mcpsafe/internal/seal"
)

// Keys seal the grants that travel through the client (approval tokens and
// request state). The first key seals; every key opens, so keys can rotate.
// The zero Keys (Keys{}) means a fresh random key for this process: tokens
// then die with the process and no other replica can redeem them. Create a
// key file with `mcpsafe keygen FILE`.
type Keys struct {
	ring *seal.Keyring
}

// NewKeys returns Keys from raw 32-byte keys, newest first.
func NewKeys(keys ...[]byte) (Keys, error) {
	r, err := seal.NewKeyring(keys...)
	if err != nil {
		return Keys{}, err
	}
	return Keys{ring: r}, nil
}

// LoadKeys reads a key file: one base64 key per line, newest first, mode 0600.
func LoadKeys(path string) (Keys, error) {
	r, err := seal.LoadKeyFile(path)
	if err != nil {
		return Keys{}, err
	}
	return Keys{ring: r}, nil
}

// Mark returns a keyed digest of data for purpose: HMAC-SHA256 under a key
// derived from the gate's sealing key (Options.Keys) and its Audience.
// Every replica that shares the key file computes the same mark, so a
// plan that shows one reads the same on each of them (an approval service
// compares what it was asked, byte for byte, when a retry re-attaches);
// nobody without the key can compute one. A plan shows a prefix of a mark
// where a plain digest would let the model confirm guesses of content it
// cannot read (package files does). With the zero Keys, marks hold for
// this process only, like its grants. A key rotation changes every mark.
func (g *Gate) Mark(purpose string, data []byte) []byte {
	m := hmac.New(sha256.New, g.ring.Derive("mcpsafe mark v1\x00"+g.opts.Audience+"\x00"+purpose))
	m.Write(data)
	return m.Sum(nil)
}
