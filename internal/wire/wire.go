// Package wire holds the small checks both ends of the approval channel
// apply to what the other end sent (strict JSON is internal/frame's):
// secrets compared as digests, untrusted text clipped for an error message,
// and the words of a passkey library error. The gate's side is package
// channel, the service's package approvals.
package wire

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"

	"github.com/go-webauthn/webauthn/protocol"
)

// Clip shortens untrusted text for an error message.
func Clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// NonNil returns s, or an empty slice for nil (a JSON list, never null).
func NonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// CTCompare is subtle.ConstantTimeCompare; a test replaces it to check
// that only fixed-length digests reach it.
var CTCompare = subtle.ConstantTimeCompare

// SecretEqual compares two secrets (CSRF tokens, MACs) in constant time
// without revealing their lengths: subtle.ConstantTimeCompare returns at
// once when the lengths differ, so it is given SHA-256 digests, which
// always have 32 bytes. (Approver tokens are compared the same way, with
// their digests computed once, see the approval service's authenticator.)
func SecretEqual(a, b []byte) bool {
	da, db := sha256.Sum256(a), sha256.Sum256(b)
	return CTCompare(da[:], db[:]) == 1
}

// PasskeyError adds the WebAuthn library's detail, which names the failed
// step.
func PasskeyError(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Details != "" {
		if pe.DevInfo != "" {
			return pe.Details + ": " + pe.DevInfo
		}
		return pe.Details
	}
	return err.Error()
}
