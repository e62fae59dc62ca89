// Package canon turns JSON arguments into one canonical byte string and a
// digest, so that an approval can name exactly one call.
//
// The canonical form is RFC 8785 (JSON Canonicalization Scheme), produced by
// github.com/gowebpki/jcs. Reordered keys and different whitespace give the
// same bytes; any change of a value gives different bytes.
//
// A digest is only useful when it means one call, so canon refuses every
// input that different JSON parsers could read differently, before JCS sees
// it:
//
//   - duplicate object keys at any depth, compared after unescaping
//     ({"a":1,"\u0061":2} is a duplicate): one parser keeps the first value,
//     another the last, so the digest would not say which one runs;
//   - two keys of one object that are equal under Unicode simple case
//     folding (ErrFoldedKey), at any depth: {"source":…, "ſource":…}
//     (U+017F), {"kind":…, "Kind":…} (U+212A KELVIN SIGN), {"Path":…,
//     "path":…}. Go's encoding/json matches a key to a struct field
//     exactly first and then case-insensitively, so both keys land in the
//     same field and the last one wins, while a rule or preview reading
//     the map sees the exact key: the call approved and the call run
//     would differ. Folding is the one encoding/json uses (each rune to the
//     smallest rune of its unicode.SimpleFold orbit; see FoldKey), so
//     full-folding pairs such as "ß" and "ss", which it keeps apart, pass;
//   - invalid UTF-8 and lone surrogate escapes such as "\ud800", which some
//     parsers turn into U+FFFD and others keep;
//   - numbers whose decimal value is not exactly the value of their
//     canonical form (ErrLossyNumber). RFC 8785 writes numbers as IEEE 754
//     doubles, so 9007199254740993 and 9007199254740992 share one canonical
//     form, while a tool that decodes into int64 sees two different ids.
//     Accepting only numbers that survive the round trip keeps "same digest"
//     equal to "same decimal values". 0.1, 1E30 and 4.50 are accepted;
//     333333333.33333329 (RFC 8785's own example) is refused, since it
//     would be approved as 333333333.3333333. Minus zero is read as zero;
//   - anything but exactly one JSON value (trailing data is refused);
//   - documents nested deeper than MaxDepth or larger than MaxSize, so that
//     hostile input fails fast and in bounded memory.
package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
	"github.com/mcpsafe/mcpsafe/internal/frame"
)

// Limits on input. Tool arguments are small; anything near these limits is
// more likely an attack on the parser than a real call.
const (
	MaxDepth = 64      // nested arrays and objects
	MaxSize  = 1 << 20 // bytes of input
)

// Errors returned (wrapped with detail) by Canonical, Digest and
// SplitMember. Use errors.Is.
var (
	ErrInvalidJSON  = errors.New("canon: invalid JSON")
	ErrDuplicateKey = errors.New("canon: duplicate object key")
	ErrFoldedKey    = errors.New("canon: object keys equal under case folding")
	ErrTooDeep      = errors.New("canon: JSON nested too deeply")
	ErrTooLarge     = errors.New("canon: JSON too large")
	ErrLossyNumber  = errors.New("canon: number not exactly representable")
)

// Canonical returns the RFC 8785 canonical form of raw, which must hold
// exactly one JSON value and pass the checks described in the package doc.
func Canonical(raw []byte) ([]byte, error) {
	if err := check(raw); err != nil {
		return nil, err
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		// jcs is stricter than encoding/json on a few points (lone
		// surrogate escapes, for one); its verdict is final.
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	return out, nil
}

// Digest returns the lowercase hex SHA-256 of Canonical(raw).
func Digest(raw []byte) (string, error) {
	c, err := Canonical(raw)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:]), nil
}

// SplitMember removes the top-level member name from the JSON object raw.
// It returns the object without that member and the member's raw value
// (nil when absent). Empty input and null count as {}. raw is checked as
// strictly as by Canonical, and a top-level member that equals name only
// under case folding ("Approval_Token" for "approval_token") is refused
// with ErrFoldedKey. rest is not canonical (canonicalize it before
// digesting) and carries the other members' values byte for byte.
func SplitMember(raw []byte, name string) (rest []byte, value []byte, err error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return []byte("{}"), nil, nil
	}
	// The full check first: the standard decoder below would quietly keep
	// the last of two duplicate keys and turn lone surrogates into U+FFFD.
	if _, err := Canonical(raw); err != nil {
		return nil, nil, err
	}
	if trimmed[0] != '{' {
		return nil, nil, fmt.Errorf("%w: arguments must be a JSON object", ErrInvalidJSON)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	// A lone variant such as "Approval_Token" is no collision, but a
	// case-insensitive decoder would take it for name while this split
	// would not: refuse it rather than guess which reading was meant.
	for k := range members {
		if k != name && FoldKey(k) == FoldKey(name) {
			return nil, nil, fmt.Errorf("%w: %s is not spelled %s", ErrFoldedKey, strconv.QuoteToASCII(clip(k)), strconv.QuoteToASCII(name))
		}
	}
	v, ok := members[name]
	if ok {
		value = []byte(v)
		delete(members, name)
	}
	rest, err = json.Marshal(members)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	return rest, value, nil
}

// FoldKey returns the form under which encoding/json matches an object key
// to a struct field: two keys collide exactly when their FoldKeys are
// equal (the same relation as strings.EqualFold). It is frame.FoldKey.
func FoldKey(key string) string { return frame.FoldKey(key) }

// check applies the one strict reading (frame.Check: valid UTF-8, no lone
// surrogate escape, duplicate keys compared after unescaping, keys equal
// under case folding, exactly one value, the depth limit) with canon's own
// rules: the size limit and exact numbers. The walk allocates nothing for
// hostile nesting: it stops at MaxDepth+1.
func check(raw []byte) error {
	if len(raw) > MaxSize {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(raw), MaxSize)
	}
	err := frame.Check(raw, frame.Rules{MaxDepth: MaxDepth, Number: exactNumber})
	var e *frame.Error
	if err == nil || !errors.As(err, &e) {
		return err
	}
	switch e.Kind {
	case frame.ErrDuplicate:
		return fmt.Errorf("%w: %s", ErrDuplicateKey, e.Detail)
	case frame.ErrFolded:
		return fmt.Errorf("%w: %s", ErrFoldedKey, e.Detail)
	case frame.ErrTooDeep:
		return fmt.Errorf("%w: limit %d", ErrTooDeep, MaxDepth)
	case frame.ErrNumber:
		return e.Err
	}
	return fmt.Errorf("%w: %s", ErrInvalidJSON, e.Detail)
}

// clip keeps error messages short: keys are attacker-chosen.
func clip(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// exactNumber refuses a number literal whose decimal value differs from
// the value of the double RFC 8785 will write for it.
func exactNumber(lit string) error {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return fmt.Errorf("%w: %s out of range", ErrLossyNumber, clip(lit))
	}
	want, ok := decimal(lit)
	if !ok {
		return fmt.Errorf("%w: %s", ErrLossyNumber, clip(lit))
	}
	got, _ := decimal(strconv.FormatFloat(f, 'e', -1, 64))
	if want != got {
		return fmt.Errorf("%w: %s would be read as %s", ErrLossyNumber, clip(lit), strconv.FormatFloat(f, 'g', -1, 64))
	}
	return nil
}

// decNum is a decimal number as significant digits times ten to exp, with
// no leading or trailing zero digits. Zero is the zero value (no sign).
type decNum struct {
	neg    bool
	digits string
	exp    int
}

// decimal normalizes a JSON number literal (already validated by the
// decoder) or a strconv 'e' format. ok is false when the exponent does not
// fit an int.
func decimal(lit string) (decNum, bool) {
	var d decNum
	if strings.HasPrefix(lit, "-") {
		d.neg = true
		lit = lit[1:]
	}
	mant, exp := lit, 0
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+"))
		if err != nil || e > 1<<30 || e < -(1<<30) {
			return decNum{}, false
		}
		mant, exp = lit[:i], e
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	if trimmed == "" {
		return decNum{}, true
	}
	d.digits, d.exp = trimmed, exp
	return d, true
}
