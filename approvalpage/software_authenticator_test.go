package approvalpage

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"
)

// authenticator is a WebAuthn authenticator in software: an ES256 key and
// a credential id, answering navigator.credentials.create and .get as a
// browser's PublicKeyCredential.toJSON() would, for the real go-webauthn
// checks of Enroll and the page to judge. Chromium's virtual authenticator
// (the root package's browser tests) is the same thing inside a browser;
// this one needs no browser. Each field a test may want wrong is one.
type authenticator struct {
	key    *ecdsa.PrivateKey
	credID []byte
	// What the next answer claims:
	verified bool   // the UV flag: the person was verified (PIN, biometrics)
	rpID     string // the relying party hashed into the authenticator data
}

func newAuthenticator(t *testing.T) *authenticator {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 16)
	rand.Read(id)
	return &authenticator{key: k, credID: id, verified: true, rpID: LocalRPID}
}

func (a *authenticator) id() string { return base64.RawURLEncoding.EncodeToString(a.credID) }

// authData is the authenticator data: RP ID hash, flags (user present,
// user verified when a.verified, attested credential data when cred is
// set), a sign count, and cred.
func (a *authenticator) authData(cred []byte) []byte {
	h := sha256.Sum256([]byte(a.rpID))
	flags := byte(0x01)
	if a.verified {
		flags |= 0x04
	}
	if cred != nil {
		flags |= 0x40
	}
	out := append(h[:], flags, 0, 0, 0, 1)
	return append(out, cred...)
}

func clientData(typ, challenge, origin string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": origin, "crossOrigin": false})
	return b
}

// create answers registration options (the JSON the enrolment page gets
// from /begin) made at origin.
func (a *authenticator) create(t *testing.T, options []byte, origin string) []byte {
	t.Helper()
	var o struct {
		PublicKey struct {
			Challenge string `json:"challenge"`
		} `json:"publicKey"`
	}
	if err := json.Unmarshal(options, &o); err != nil || o.PublicKey.Challenge == "" {
		t.Fatalf("registration options %s: %v", options, err)
	}
	x, y := a.key.PublicKey.X.FillBytes(make([]byte, 32)), a.key.PublicKey.Y.FillBytes(make([]byte, 32))
	// COSE_Key: kty EC2 (2), alg ES256 (-7), crv P-256 (1), x, y.
	cose := cborMap(
		cborInt(1), cborInt(2),
		cborInt(3), cborInt(-7),
		cborInt(-1), cborInt(1),
		cborInt(-2), cborBytes(x),
		cborInt(-3), cborBytes(y))
	cred := make([]byte, 16) // AAGUID: none
	cred = binary.BigEndian.AppendUint16(cred, uint16(len(a.credID)))
	cred = append(append(cred, a.credID...), cose...)
	att := cborMap(
		cborText("fmt"), cborText("none"),
		cborText("attStmt"), cborMap(),
		cborText("authData"), cborBytes(a.authData(cred)))
	b64 := base64.RawURLEncoding.EncodeToString
	out, _ := json.Marshal(map[string]any{
		"id": a.id(), "rawId": a.id(), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    b64(clientData("webauthn.create", o.PublicKey.Challenge, origin)),
			"attestationObject": b64(att),
			"transports":        []string{"internal"},
		},
		"clientExtensionResults":  map[string]any{},
		"authenticatorAttachment": "platform",
	})
	return out
}

// get answers request options over challenge (base64url, as the page's
// options carry it) made at origin: an assertion signed by a.key.
func (a *authenticator) get(t *testing.T, challenge, origin string) string {
	t.Helper()
	ad := a.authData(nil)
	cd := clientData("webauthn.get", challenge, origin)
	h := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte(nil), ad...), h[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, a.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	out, _ := json.Marshal(map[string]any{
		"id": a.id(), "rawId": a.id(), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    b64(cd),
			"authenticatorData": b64(ad),
			"signature":         b64(sig),
		},
		"clientExtensionResults":  map[string]any{},
		"authenticatorAttachment": "platform",
	})
	return string(out)
}

// The few CBOR items a COSE key and an attestation object need (RFC 8949).
func cborHead(major byte, n uint64) []byte {
	switch {
	case n < 24:
		return []byte{major<<5 | byte(n)}
	case n < 1<<8:
		return []byte{major<<5 | 24, byte(n)}
	default:
		return binary.BigEndian.AppendUint16([]byte{major<<5 | 25}, uint16(n))
	}
}

func cborInt(i int) []byte {
	if i < 0 {
		return cborHead(1, uint64(-1-i))
	}
	return cborHead(0, uint64(i))
}

func cborBytes(b []byte) []byte { return append(cborHead(2, uint64(len(b))), b...) }
func cborText(s string) []byte  { return append(cborHead(3, uint64(len(s))), s...) }

func cborMap(kv ...[]byte) []byte {
	out := cborHead(5, uint64(len(kv)/2))
	for _, b := range kv {
		out = append(out, b...)
	}
	return out
}
