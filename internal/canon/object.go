package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// Object is a JSON object read once: checked as Canonical checks, put in
// RFC 8785 form once, and split into its top-level members, so that a
// caller needing the canonical form without one member, that member's
// value and the members themselves does not read the input three times.
type Object struct {
	canonical []byte
	members   []Member
}

// Member is a top-level member of an Object: its key (unescaped) and its
// value in canonical form.
type Member struct {
	Key   string
	Value []byte
	start int // span of `"key":value` in the canonical form
	end   int
}

// ReadObject reads raw as SplitMember does (empty input and null are {};
// anything but an object is refused, and so is a top-level key equal to
// name only under case folding) and returns it split.
func ReadObject(raw []byte, name string) (Object, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return Object{canonical: []byte("{}")}, nil
	}
	c, err := Canonical(raw)
	if err != nil {
		return Object{}, err
	}
	if trimmed[0] != '{' {
		return Object{}, fmt.Errorf("%w: arguments must be a JSON object", ErrInvalidJSON)
	}
	o := Object{canonical: c}
	if o.members, err = topMembers(c); err != nil {
		return Object{}, err
	}
	for _, m := range o.members {
		if m.Key != name && FoldKey(m.Key) == FoldKey(name) {
			return Object{}, fmt.Errorf("%w: %s is not spelled %s", ErrFoldedKey, strconv.QuoteToASCII(clip(m.Key)), strconv.QuoteToASCII(name))
		}
	}
	return o, nil
}

// Members returns the top-level members in canonical (RFC 8785) order.
func (o Object) Members() []Member { return o.members }

// Canonical returns the whole object in RFC 8785 form.
func (o Object) Canonical() []byte { return o.canonical }

// Without returns the canonical form of the object without the member
// name (it is canonical too: members keep their order) and that member's
// canonical value, nil when absent.
func (o Object) Without(name string) (rest []byte, value []byte) {
	for i, m := range o.members {
		if m.Key != name {
			continue
		}
		c := o.canonical
		switch {
		case len(o.members) == 1:
			return []byte("{}"), m.Value
		case i < len(o.members)-1: // drop the member and the comma after it
			next := o.members[i+1].start
			return append(append(make([]byte, 0, len(c)-(next-m.start)), c[:m.start]...), c[next:]...), m.Value
		default: // the last: drop the comma before it
			prev := o.members[i-1].end
			return append(append(make([]byte, 0, len(c)-(m.end-prev)), c[:prev]...), c[m.end:]...), m.Value
		}
	}
	return o.canonical, nil
}

// SHA256 returns the lowercase hex SHA-256 of canonical bytes, as Digest
// does for bytes that are canonical already.
func SHA256(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// topMembers splits jcs output (no whitespace, valid JSON: it was checked
// and transformed) into its top-level members.
func topMembers(c []byte) ([]Member, error) {
	bad := fmt.Errorf("%w: unexpected canonical form", ErrInvalidJSON)
	if len(c) < 2 || c[0] != '{' || c[len(c)-1] != '}' {
		return nil, bad
	}
	if len(c) == 2 {
		return nil, nil
	}
	var ms []Member
	for i := 1; ; {
		kEnd := skipString(c, i)
		if kEnd < 0 || kEnd >= len(c) || c[kEnd] != ':' {
			return nil, bad
		}
		key := c[i:kEnd]
		vEnd := skipValue(c, kEnd+1)
		if vEnd < 0 || vEnd >= len(c) {
			return nil, bad
		}
		m := Member{Value: c[kEnd+1 : vEnd], start: i, end: vEnd}
		if bytes.IndexByte(key, '\\') < 0 {
			m.Key = string(key[1 : len(key)-1])
		} else if err := json.Unmarshal(key, &m.Key); err != nil {
			return nil, bad
		}
		ms = append(ms, m)
		switch {
		case c[vEnd] == ',':
			i = vEnd + 1
		case vEnd == len(c)-1:
			return ms, nil
		default:
			return nil, bad
		}
	}
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
		case ',':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return -1
}
