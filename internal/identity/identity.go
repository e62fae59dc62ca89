// Package identity is the one comparison of identities for separation of
// duties: principals (who asked for a call) and approver names (who
// approved it) live in one namespace, compared by Key, and Same fails
// closed on a name that has no key.
package identity

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// UserPrefix starts the principal the gate reports for a caller the
// transport authenticated: "user:" followed by the auth info's user id.
const UserPrefix = "user:"

// errIdentity is wrapped when a principal or approver name has no
// identity key, so it cannot be compared with anyone.
var errIdentity = errors.New("mcpsafe: not a comparable identity")

// maxIdentityBytes bounds the input normalised; nothing longer is a name.
const maxIdentityBytes = 1024

// identityRE is the alphabet of identity keys: the approval service's
// approver-name alphabet, lower case, up to 256 characters. Keeping keys
// ASCII is what makes the comparison immune to cross-script confusables:
// a Cyrillic "а" has no key at all instead of a key that looks like "a".
var identityRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._@+-]{0,255}$`)

// Key returns the key under which separation of duties compares
// principals (who asked for a call) and approver names (who approved it).
// Both live in one namespace: the gate names an authenticated caller
// "user:<id>", and the approver "<id>" is that same person. The key is:
//
//   - NFKC, Unicode full case folding, NFKC again (the compatibility
//     caseless match), so "ALICE", "Alice", fullwidth "ａｌｉｃｅ" and
//     "alice" are one key, and so are "ſ" and "s", or the Kelvin sign and "k";
//   - then one leading "user:" removed, so "user:alice" and "alice" are one key;
//   - and the result must be 1-256 characters of a-z 0-9 . _ @ + - starting
//     with a letter or digit.
//
// Anything else (empty, "user:" alone, spaces, control or invisible
// characters, letters outside ASCII after folding, "user:user:x",
// invalid UTF-8) has no key and returns an error: such a name cannot be
// compared, so it must be treated as possibly anyone (see Same).
func Key(name string) (string, error) {
	if len(name) > maxIdentityBytes {
		return "", fmt.Errorf("%w: %d bytes", errIdentity, len(name))
	}
	if !utf8.ValidString(name) {
		return "", fmt.Errorf("%w: not valid UTF-8", errIdentity)
	}
	k := norm.NFKC.String(cases.Fold().String(norm.NFKC.String(name)))
	k = strings.TrimPrefix(k, UserPrefix)
	if !identityRE.MatchString(k) {
		return "", fmt.Errorf("%w: %q (after normalisation %q) is not 1-256 characters of a-z 0-9 . _ @ + -", errIdentity, name, k)
	}
	return k, nil
}

// Same reports whether a and b may name the same identity: their
// keys are equal, or either has no key. It fails closed on purpose: every
// use (may this approver approve this principal's request? is this a
// second vote by the same approver?) must refuse when it cannot tell.
func Same(a, b string) bool {
	ka, errA := Key(a)
	kb, errB := Key(b)
	return errA != nil || errB != nil || ka == kb
}
