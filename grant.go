package mcpsafe

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/seal"
)

// grantVersion is the first byte of the sealed plaintext; the seal package
// binds its own format version into the associated data. Version 1 was
// JSON (about 580 characters sealed); version 2 is the binary layout of
// marshalGrant (about 230). A version 1 grant still authenticates but is
// refused as one issued before the upgrade (errGrantOldFormat): grants
// live minutes, and the call asked again gets a new one.
const grantVersion = 2

// grant is what an approval is: the exact call it covers. It travels through
// the client only sealed, and is parsed only after it was authenticated.
type grant struct {
	Version   int
	Tool      string
	Args      string // SHA-256 of the RFC 8785 form, without approval_token (hex)
	Resolved  string // SHA-256 of the resolved context and plan targets (hex)
	Policy    string // hash of the tool's policy at issue time (hex)
	Principal string
	// Audience is not in the plaintext: it is in the AEAD associated data,
	// so a grant opens only for the audience it was sealed for, and
	// openGrant sets it to that audience.
	Audience  string
	IssuedAt  int64  // unix milliseconds
	ExpiresAt int64  // unix milliseconds, exclusive
	Nonce     string // 128 bits (hex)
	Mode      string // the envelope it was issued for: token, elicit, channel, page
}

// Grant modes: the same sealed grant in different envelopes. A grant issued
// for one envelope is refused in another, so a request state cannot be
// replayed as a token.
const (
	grantToken   = "token"
	grantElicit  = "elicit"
	grantChannel = "channel"
	grantPage    = "page"
	// The approval card's two envelopes: the model's handle (looks the
	// outcome up) and the card's decision capability.
	grantCard         = "card"
	grantCardDecision = "card-decision"
)

// maxClockSkew bounds how far in the future an issue time may lie.
const maxClockSkew = 30 * time.Second

func newNonce() (string, error) {
	var b [16]byte // 128 bits
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("mcpsafe: reading randomness: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

func (g *grant) expires() time.Time { return time.UnixMilli(g.ExpiresAt) }

func sealGrant(ring *seal.Keyring, g *grant) (string, error) {
	b, err := marshalGrant(g)
	if err != nil {
		return "", err
	}
	return ring.Seal(g.Audience, b)
}

var (
	errGrantMalformed = errors.New("sealed grant is malformed")
	errGrantOldFormat = errors.New("sealed grant is in the format of an earlier mcpsafe")
)

// openGrant authenticates the sealed value for this audience, then parses it
// strictly: a wrong version or mode, a short or long plaintext or a missing
// nonce are refused.
func openGrant(ring *seal.Keyring, audience, sealed string) (*grant, error) {
	plain, err := ring.Open(audience, sealed)
	if err != nil {
		return nil, err
	}
	if len(plain) > 0 && plain[0] == '{' {
		return nil, errGrantOldFormat // version 1 was a JSON object
	}
	g, err := parseGrant(plain)
	if err != nil {
		return nil, errGrantMalformed
	}
	g.Audience = audience
	return g, nil
}
