// Package seal protects values that travel through an untrusted client
// (approval tokens, MRTR requestState) with AES-256-GCM, so that the server
// can later accept them back only if they are exactly what it issued.
//
// A sealed value is the unpadded base64url encoding of
//
//	version (1 byte) || key id (8 bytes) || nonce (12 bytes) || ciphertext+tag
//
// The associated data is version || key id || audience, so a value sealed
// for one server identity does not open at another. The key id is the
// first 8 bytes of SHA-256 over a domain label and the key: it lets keys
// rotate (every key in a Keyring opens, only the first seals) without
// revealing anything about the key.
//
// Open verifies before it interprets anything beyond choosing the key: the
// length is bounded before decoding, only the one canonical encoding is
// accepted (an appended character or altered trailing bits are refused, so
// one grant has exactly one spelling), and no plaintext is returned unless
// GCM authentication succeeds. Every failure is the single error ErrInvalid,
// so a caller cannot leak to a client which check failed.
//
// Nonces are random; with 96-bit nonces one key should seal well under 2^32
// values, far above the rate of human approvals, but rotate keys that live
// for years.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
)

// KeySize is the only accepted key length (AES-256).
const KeySize = 32

// MaxSealedLen bounds the encoded length Open will look at; Seal refuses
// plaintext that would exceed it.
const MaxSealedLen = 16 << 10

const (
	version   = 1
	idLen     = 8
	nonceLen  = 12
	tagLen    = 16
	headerLen = 1 + idLen + nonceLen
	idLabel   = "mcpsafe seal key id v1\x00"
	// deriveLabel keys Derive: a sealing key itself never meets HMAC.
	deriveLabel = "mcpsafe seal derive v1\x00"
)

var (
	// ErrInvalid is the only error Open returns.
	ErrInvalid = errors.New("seal: invalid or tampered sealed value")
	// ErrWeakKey is returned (wrapped) for a key of the wrong size or an
	// all-zero key.
	ErrWeakKey = errors.New("seal: weak key")
	// ErrDuplicateKey is returned when a Keyring is given one key twice.
	ErrDuplicateKey = errors.New("seal: duplicate key in keyring")
	// ErrNoKey is returned for an empty Keyring.
	ErrNoKey = errors.New("seal: keyring needs at least one key")
	// ErrTooLong is returned by Seal when the result would exceed
	// MaxSealedLen.
	ErrTooLong = errors.New("seal: plaintext too long to seal")
)

var b64 = base64.RawURLEncoding.Strict()

type key struct {
	id     [idLen]byte
	aead   cipher.AEAD
	derive [sha256.Size]byte // HMAC-SHA256(raw key, deriveLabel): the root of Derive
}

// Keyring seals with its first key and opens with any of them. It is safe
// for concurrent use: nothing in it changes after construction.
type Keyring struct {
	keys []key
}

// NewKeyring builds a Keyring from 32-byte keys, newest first. The keys
// are copied into the ciphers; the caller may wipe its slices afterwards.
func NewKeyring(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, ErrNoKey
	}
	k := &Keyring{keys: make([]key, 0, len(keys))}
	for i, raw := range keys {
		if len(raw) != KeySize {
			return nil, fmt.Errorf("%w: key %d is %d bytes, want %d", ErrWeakKey, i+1, len(raw), KeySize)
		}
		if subtle.ConstantTimeCompare(raw, make([]byte, KeySize)) == 1 {
			return nil, fmt.Errorf("%w: key %d is all zero", ErrWeakKey, i+1)
		}
		id := keyID(raw)
		for j, prev := range k.keys {
			if prev.id == id {
				return nil, fmt.Errorf("%w: keys %d and %d", ErrDuplicateKey, j+1, i+1)
			}
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("seal: key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("seal: key %d: %w", i+1, err)
		}
		m := hmac.New(sha256.New, raw)
		m.Write([]byte(deriveLabel))
		kk := key{id: id, aead: aead}
		m.Sum(kk.derive[:0])
		k.keys = append(k.keys, kk)
	}
	return k, nil
}

// RandomKeyring returns a Keyring with one fresh random key: values it
// seals open only in this process.
func RandomKeyring() (*Keyring, error) {
	raw := make([]byte, KeySize)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("seal: random key: %w", err)
	}
	return NewKeyring(raw)
}

func keyID(raw []byte) [idLen]byte {
	h := sha256.New()
	h.Write([]byte(idLabel))
	h.Write(raw)
	var id [idLen]byte
	copy(id[:], h.Sum(nil))
	return id
}

// KeyIDs returns the hex key ids, sealing key first, for diagnostics.
func (k *Keyring) KeyIDs() []string {
	if k == nil {
		return nil
	}
	ids := make([]string, len(k.keys))
	for i, key := range k.keys {
		ids[i] = hex.EncodeToString(key.id[:])
	}
	return ids
}

// Derive returns a 32-byte key for purpose, derived from the sealing key
// (the first): HMAC-SHA256 over purpose under a per-key root that is
// itself an HMAC of the key, so no derived key reveals the sealing key or
// another purpose's key. Every process holding the same key file derives
// the same keys; a zero Keyring derives nothing (nil).
func (k *Keyring) Derive(purpose string) []byte {
	if k == nil || len(k.keys) == 0 {
		return nil
	}
	m := hmac.New(sha256.New, k.keys[0].derive[:])
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

func associatedData(id [idLen]byte, audience string) []byte {
	ad := make([]byte, 0, 1+idLen+len(audience))
	ad = append(ad, version)
	ad = append(ad, id[:]...)
	return append(ad, audience...)
}

// Seal encrypts and authenticates plaintext for audience with the newest
// key.
func (k *Keyring) Seal(audience string, plaintext []byte) (string, error) {
	if k == nil || len(k.keys) == 0 {
		return "", ErrNoKey // a zero Keyring must fail, not panic
	}
	if b64.EncodedLen(headerLen+len(plaintext)+tagLen) > MaxSealedLen {
		return "", fmt.Errorf("%w: %d bytes", ErrTooLong, len(plaintext))
	}
	sk := k.keys[0]
	buf := make([]byte, headerLen, headerLen+len(plaintext)+tagLen)
	buf[0] = version
	copy(buf[1:], sk.id[:])
	if _, err := rand.Read(buf[1+idLen : headerLen]); err != nil {
		return "", fmt.Errorf("seal: random nonce: %w", err)
	}
	buf = sk.aead.Seal(buf, buf[1+idLen:headerLen], plaintext, associatedData(sk.id, audience))
	return b64.EncodeToString(buf), nil
}

// Open returns the plaintext of a value sealed for audience by a key in
// the ring. Any problem at all yields ErrInvalid and no plaintext.
func (k *Keyring) Open(audience string, sealed string) ([]byte, error) {
	if k == nil {
		return nil, ErrInvalid
	}
	if len(sealed) > MaxSealedLen || len(sealed) < b64.EncodedLen(headerLen+tagLen) {
		return nil, ErrInvalid
	}
	raw, err := b64.DecodeString(sealed)
	if err != nil || len(raw) < headerLen+tagLen {
		return nil, ErrInvalid
	}
	// Strict decoding already refuses padding and non-zero trailing bits;
	// comparing the re-encoding also pins the one accepted spelling against
	// anything the decoder might tolerate (such as line breaks).
	if b64.EncodeToString(raw) != sealed {
		return nil, ErrInvalid
	}
	if raw[0] != version {
		return nil, ErrInvalid
	}
	var id [idLen]byte
	copy(id[:], raw[1:1+idLen])
	for _, key := range k.keys {
		if key.id != id {
			continue
		}
		plain, err := key.aead.Open(nil, raw[1+idLen:headerLen], raw[headerLen:], associatedData(id, audience))
		if err != nil {
			return nil, ErrInvalid
		}
		if plain == nil {
			plain = []byte{}
		}
		return plain, nil
	}
	return nil, ErrInvalid
}
