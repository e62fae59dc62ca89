// Package wire holds the small checks both ends of the approval channel
// apply to what the other end sent: JSON objects without repeated keys,
// secrets compared as digests, untrusted text clipped for an error message,
// and the words of a passkey library error. The gate's side is package
// channel, the service's package approvals.
package wire

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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

// NoDuplicateKeys walks the JSON tokens and fails on any object that
// repeats a key.
func NoDuplicateKeys(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		obj  bool
		keys map[string]bool
		key  bool // next string token in this object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{obj: t == '{', keys: map[string]bool{}, key: true})
				if len(stack) > 32 {
					return errors.New("nested too deeply")
				}
			case '}', ']':
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.obj && top.key {
				if top.keys[t] {
					return fmt.Errorf("duplicate key %q", Clip(t))
				}
				top.keys[t] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.obj {
			top.key = true
		}
	}
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
