package mcpsafe

import (
	"strings"
	"testing"
)

// marshalGrant writes only what parseGrant gives back unchanged: digests
// and nonces in lowercase hex of their exact length. Attack cases: an
// uppercase, short, long or non-hex field would open as a different
// string than the one sealed, so sealing it is refused.
func TestMarshalGrantFieldsRoundTrip(t *testing.T) {
	digest := strings.Repeat("ab", grantDigestLen)
	good := grant{Version: grantVersion, Mode: grantToken, Tool: "touch", Principal: "alice",
		Args: digest, Resolved: digest, Policy: digest, Nonce: strings.Repeat("0f", grantNonceLen),
		IssuedAt: 1, ExpiresAt: 2}
	b, err := marshalGrant(&good)
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	back, err := parseGrant(b)
	if err != nil || *back != good {
		t.Fatalf("control: round trip %+v, %v; want %+v", back, err, good)
	}
	for name, change := range map[string]func(*grant){
		"uppercase":  func(g *grant) { g.Args = strings.ToUpper(g.Args) },
		"short":      func(g *grant) { g.Resolved = g.Resolved[2:] },
		"long":       func(g *grant) { g.Policy += "00" },
		"odd length": func(g *grant) { g.Nonce = g.Nonce[1:] },
		"not hex":    func(g *grant) { g.Nonce = strings.Repeat("zz", grantNonceLen) },
	} {
		g := good
		change(&g)
		if _, err := marshalGrant(&g); err != errGrantEncode {
			t.Errorf("%s: marshalGrant = %v, want errGrantEncode", name, err)
		}
	}
}
