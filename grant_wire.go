package mcpsafe

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
)

// The sealed plaintext of a grant (version 2), in this order:
//
//	version    1 byte (grantVersion)
//	mode       1 byte (grantModes)
//	issued at  8 bytes, big-endian unix milliseconds
//	expires at 8 bytes, big-endian unix milliseconds
//	nonce      16 bytes
//	args       32 bytes (SHA-256)
//	resolved   32 bytes (SHA-256)
//	policy     32 bytes (SHA-256)
//	tool       uvarint length, then the name
//	principal  uvarint length, then the principal
//
// Digests travel as bytes, not hex, and the audience not at all (it is in
// the associated data). parseGrant accepts exactly this layout and nothing
// after it, so one grant has one plaintext.
const (
	grantDigestLen = 32
	grantNonceLen  = 16
	grantFixedLen  = 1 + 1 + 8 + 8 + grantNonceLen + 3*grantDigestLen
)

// grantModes numbers the envelopes on the wire; 0 is no mode.
var grantModes = [...]string{1: grantToken, 2: grantElicit, 3: grantChannel, 4: grantPage, 5: grantCard, 6: grantCardDecision}

var errGrantEncode = errors.New("grant field cannot be encoded")

func marshalGrant(g *grant) ([]byte, error) {
	mode := 0
	for i, m := range grantModes {
		if i > 0 && m == g.Mode {
			mode = i
		}
	}
	if mode == 0 || g.Version != grantVersion {
		return nil, errGrantEncode
	}
	b := make([]byte, 0, grantFixedLen+2*binary.MaxVarintLen64+len(g.Tool)+len(g.Principal))
	b = append(b, grantVersion, byte(mode))
	b = binary.BigEndian.AppendUint64(b, uint64(g.IssuedAt))
	b = binary.BigEndian.AppendUint64(b, uint64(g.ExpiresAt))
	for _, f := range []struct {
		hex string
		n   int
	}{{g.Nonce, grantNonceLen}, {g.Args, grantDigestLen}, {g.Resolved, grantDigestLen}, {g.Policy, grantDigestLen}} {
		raw, err := hex.DecodeString(f.hex)
		// Lowercase only: the opened grant is compared with the hex the
		// gate computes, which is lowercase.
		if err != nil || len(raw) != f.n || hex.EncodeToString(raw) != f.hex {
			return nil, errGrantEncode
		}
		b = append(b, raw...)
	}
	b = binary.AppendUvarint(b, uint64(len(g.Tool)))
	b = append(b, g.Tool...)
	b = binary.AppendUvarint(b, uint64(len(g.Principal)))
	return append(b, g.Principal...), nil
}

// parseGrant reads marshalGrant's layout. It runs only on authenticated
// plaintext, and still refuses anything the gate would not have written.
func parseGrant(b []byte) (*grant, error) {
	if len(b) < grantFixedLen || b[0] != grantVersion || int(b[1]) >= len(grantModes) || b[1] == 0 {
		return nil, errGrantMalformed
	}
	g := &grant{Version: grantVersion, Mode: grantModes[b[1]]}
	g.IssuedAt = int64(binary.BigEndian.Uint64(b[2:]))
	g.ExpiresAt = int64(binary.BigEndian.Uint64(b[10:]))
	p := b[18:]
	field := func(n int) string {
		s := hex.EncodeToString(p[:n])
		p = p[n:]
		return s
	}
	g.Nonce = field(grantNonceLen)
	g.Args = field(grantDigestLen)
	g.Resolved = field(grantDigestLen)
	g.Policy = field(grantDigestLen)
	var ok bool
	if g.Tool, p, ok = lengthPrefixed(p); !ok {
		return nil, errGrantMalformed
	}
	if g.Principal, p, ok = lengthPrefixed(p); !ok || len(p) != 0 || g.Tool == "" {
		return nil, errGrantMalformed
	}
	return g, nil
}

// lengthPrefixed reads a uvarint length (in its shortest form) and that
// many bytes.
func lengthPrefixed(p []byte) (string, []byte, bool) {
	n, w := binary.Uvarint(p)
	if w <= 0 || (w > 1 && p[w-1] == 0) || n > uint64(len(p)-w) {
		return "", nil, false
	}
	return string(p[w : w+int(n)]), p[w+int(n):], true
}
