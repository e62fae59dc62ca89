package mcpsafe

import (
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
