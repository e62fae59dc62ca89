package mcpsafe

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/internal/seal"
)

// grantVersion is bound into the sealed plaintext; the seal package binds its
// own format version into the associated data.
const grantVersion = 1

// grant is what an approval is: the exact call it covers. It travels through
// the client only sealed, and is parsed only after it was authenticated.
type grant struct {
	Version   int    `json:"v"`
	Tool      string `json:"tool"`
	Args      string `json:"args"`     // SHA-256 of the RFC 8785 form, without approval_token
	Resolved  string `json:"resolved"` // SHA-256 of the resolved context and plan targets
	Policy    string `json:"policy"`   // hash of the tool's policy at issue time
	Principal string `json:"sub"`
	Audience  string `json:"aud"`
	IssuedAt  int64  `json:"iat"` // unix milliseconds
	ExpiresAt int64  `json:"exp"` // unix milliseconds, exclusive
	Nonce     string `json:"nonce"`
	Mode      string `json:"mode"` // the envelope it was issued for: token, elicit, channel
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
	// outcome up) and the card's decision capability ("card", the path
	// the observer times).
	grantCard         = "card-handle"
	grantCardDecision = "card"
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
	b, err := json.Marshal(g)
	if err != nil {
		return "", err
	}
	return ring.Seal(g.Audience, b)
}

var errGrantMalformed = errors.New("sealed grant is malformed")

// openGrant authenticates the sealed value for this audience, then parses it
// strictly: unknown fields, trailing data or a wrong version are refused.
func openGrant(ring *seal.Keyring, audience, sealed string) (*grant, error) {
	plain, err := ring.Open(audience, sealed)
	if err != nil {
		return nil, err
	}
	var g grant
	if err := frame.Decode(plain, &g); err != nil {
		return nil, errGrantMalformed
	}
	if g.Version != grantVersion || g.Nonce == "" || g.Audience != audience {
		return nil, errGrantMalformed
	}
	return &g, nil
}
