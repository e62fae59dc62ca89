package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/gowebpki/jcs"
)

// Object is a JSON object read once: checked as Canonical checks and split
// into its top-level members, so that a caller needing the canonical form
// without one member, that member's value and the members themselves
// does not read the input three times. Only what is asked for is put in
// RFC 8785 form: the rest without a member is transformed without it.
type Object struct {
	raw     []byte // the checked input, trimmed
	members []Member
}

// Member is a top-level member of an Object: its key (unescaped) and its
// value as the input spells it (checked: valid, exact numbers, no
// duplicate or folded keys inside).
type Member struct {
	Key   string
	Value []byte
	start int // span of `"key" : value` in the input
	end   int
}

// ReadObject reads raw as SplitMember does (empty input and null are {};
// anything but an object is refused, and so is a top-level key equal to
// name only under case folding) and returns it split.
func ReadObject(raw []byte, name string) (Object, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return Object{raw: []byte("{}")}, nil
	}
	if err := check(raw); err != nil {
		return Object{}, err
	}
	if trimmed[0] != '{' {
		return Object{}, fmt.Errorf("%w: arguments must be a JSON object", ErrInvalidJSON)
	}
	o := Object{raw: trimmed}
	var err error
	if o.members, err = topMembers(trimmed); err != nil {
		return Object{}, err
	}
	for _, m := range o.members {
		if m.Key != name && FoldKey(m.Key) == FoldKey(name) {
			return Object{}, fmt.Errorf("%w: %s is not spelled %s", ErrFoldedKey, strconv.QuoteToASCII(clip(m.Key)), strconv.QuoteToASCII(name))
		}
	}
	return o, nil
}

// Members returns the top-level members in input order.
func (o Object) Members() []Member { return o.members }

// Canonical returns the whole object in RFC 8785 form.
func (o Object) Canonical() ([]byte, error) { return transform(o.raw) }

// Without returns the RFC 8785 form of the object without the member name,
// and that member's value as the input spells it (nil when absent). The
// member is cut from the input before the transform, so it is never put
// in canonical form.
func (o Object) Without(name string) (rest []byte, value []byte, err error) {
	for i, m := range o.members {
		if m.Key != name {
			continue
		}
		c := o.raw
		var cut []byte
		switch {
		case len(o.members) == 1:
			cut = []byte("{}")
		case i < len(o.members)-1: // the member, the comma after it
			next := o.members[i+1].start
			cut = append(append(make([]byte, 0, len(c)-(next-m.start)), c[:m.start]...), c[next:]...)
		default: // the last: the comma before it
			prev := o.members[i-1].end
			cut = append(append(make([]byte, 0, len(c)-(m.end-prev)), c[:prev]...), c[m.end:]...)
		}
		rest, err = transform(cut)
		return rest, m.Value, err
	}
	rest, err = transform(o.raw)
	return rest, nil, err
}

// transform is the RFC 8785 step of Canonical, for input check passed. A
// flat object already in that form (flatCanonical) comes back as a copy:
// the caller keeps it, and the input may be the request's own bytes.
func transform(b []byte) ([]byte, error) {
	if flatCanonical(b) {
		return append([]byte(nil), b...), nil
	}
	out, err := jcs.Transform(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidJSON, err)
	}
	return out, nil
}

// SHA256 returns the lowercase hex SHA-256 of canonical bytes, as Digest
// does for bytes that are canonical already.
func SHA256(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// errObjectForm is topMembers' refusal, made once: an error built per
// call would be two allocations on every call that succeeds.
var errObjectForm = fmt.Errorf("%w: unexpected object form", ErrInvalidJSON)

// topMembers splits a checked JSON object into its top-level members.
func topMembers(c []byte) ([]Member, error) {
	if len(c) < 2 || c[0] != '{' || c[len(c)-1] != '}' {
		return nil, errObjectForm
	}
	i := skipSpace(c, 1)
	if i == len(c)-1 {
		return nil, nil
	}
	var ms []Member
	for {
		kEnd := skipString(c, i)
		if kEnd < 0 {
			return nil, errObjectForm
		}
		colon := skipSpace(c, kEnd)
		if colon >= len(c) || c[colon] != ':' {
			return nil, errObjectForm
		}
		vStart := skipSpace(c, colon+1)
		vEnd := skipValue(c, vStart)
		if vEnd < 0 || vEnd >= len(c) {
			return nil, errObjectForm
		}
		key := c[i:kEnd]
		m := Member{Value: c[vStart:vEnd], start: i, end: vEnd}
		if bytes.IndexByte(key, '\\') < 0 {
			m.Key = string(key[1 : len(key)-1])
		} else if err := json.Unmarshal(key, &m.Key); err != nil {
			return nil, errObjectForm
		}
		ms = append(ms, m)
		next := skipSpace(c, vEnd)
		switch {
		case next < len(c)-1 && c[next] == ',':
			i = skipSpace(c, next+1)
		case next == len(c)-1:
			return ms, nil
		default:
			return nil, errObjectForm
		}
	}
}

func skipSpace(c []byte, i int) int {
	for i < len(c) && (c[i] == ' ' || c[i] == '\t' || c[i] == '\n' || c[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string starting at c[i], or -1.
func skipString(c []byte, i int) int {
	if i >= len(c) || c[i] != '"' {
		return -1
	}
	for i++; i < len(c); i++ {
		switch c[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the value starting at c[i], or -1.
func skipValue(c []byte, i int) int {
	depth := 0
	for i < len(c) {
		switch c[i] {
		case '"':
			if i = skipString(c, i); i < 0 {
				return -1
			}
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return -1
}
