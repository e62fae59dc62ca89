// Package frame reads JSON strictly, once, for every part of mcpsafe that
// must not be read one way here and another way elsewhere.
//
// Two things live here:
//
//   - Check and Decode, the one strict JSON reading ("strict JSON"): exactly
//     one value, valid UTF-8, no lone surrogate escape, no two keys of one
//     object that are equal or equal under Unicode simple case folding (as
//     encoding/json matches names) at any depth, a bounded depth; Decode adds
//     that every member is a field of the target spelt exactly (nothing
//     unknown, nothing matched only by case folding).
//   - Read, the JSON-RPC frame reader: it classifies a frame once (kind, id,
//     method, tool name, progress token) and says whether its bytes may pass
//     raw, that is whether it reads alike to every parser it will meet. The
//     rule is documented on Read.
package frame

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind is what a Check failure is about.
type ErrKind uint8

const (
	ErrInvalid   ErrKind = iota // not exactly one JSON value in valid UTF-8
	ErrDuplicate                // an object repeats a key (after unescaping)
	ErrFolded                   // two keys of an object are equal under case folding
	ErrTooDeep                  // nested deeper than the limit
	ErrNumber                   // Rules.Number refused a number
)

// Error is a Check failure. Detail names what was found; the keys in it
// are clipped and quoted, since they are the sender's.
type Error struct {
	Kind   ErrKind
	Detail string
	Err    error // Rules.Number's error, for ErrNumber
}

func (e *Error) Error() string {
	switch e.Kind {
	case ErrDuplicate:
		return "duplicate key " + e.Detail
	case ErrFolded:
		return "keys " + e.Detail
	case ErrTooDeep:
		return "JSON nested too deeply: " + e.Detail
	case ErrNumber:
		return e.Err.Error()
	}
	return "invalid JSON: " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Rules are what a caller adds to the strict reading.
type Rules struct {
	// MaxDepth bounds nested arrays and objects (0: DefaultMaxDepth).
	MaxDepth int
	// Number, when set, is called with every number literal.
	Number func(lit string) error

	// foldedKeys lets keys equal only under case folding pass (exact
	// duplicates are still refused), for a value every reader keeps as a
	// map (see Read).
	foldedKeys bool
}

// DefaultMaxDepth is the depth limit when Rules.MaxDepth is 0.
const DefaultMaxDepth = 64

// Check reads raw strictly (see the package doc) and reports the first
// thing that fails, as an *Error.
func Check(raw []byte, r Rules) error {
	if !utf8.Valid(raw) {
		return &Error{Kind: ErrInvalid, Detail: "not valid UTF-8"}
	}
	if r.MaxDepth <= 0 {
		r.MaxDepth = DefaultMaxDepth
	}
	w := walker{b: raw, rules: r}
	w.skipSpace()
	if err := w.value(0); err != nil {
		return err
	}
	w.skipSpace()
	if w.i < len(w.b) {
		return w.invalid("data after the top-level value")
	}
	return nil
}

// walker reads JSON (RFC 8259's grammar, as encoding/json does) by
// recursive descent, comparing the keys of every object as it goes.
type walker struct {
	b     []byte
	i     int
	rules Rules
	// grammar: only the grammar and the depth, no keys compared.
	grammar bool
}

// invalid is a grammar error at the walker's offset.
func (w *walker) invalid(what string) error {
	if w.i >= len(w.b) {
		return &Error{Kind: ErrInvalid, Detail: "unexpected end of JSON input"}
	}
	if what == "" {
		what = "invalid character " + strconv.QuoteRune(rune(w.b[w.i]))
	}
	return &Error{Kind: ErrInvalid, Detail: what + " at offset " + strconv.Itoa(w.i)}
}

// next is the byte at the walker's offset, or 0 at the end.
func (w *walker) next() byte {
	if w.i < len(w.b) {
		return w.b[w.i]
	}
	return 0
}

// literal reads true, false or null.
func (w *walker) literal(lit string) error {
	if len(w.b)-w.i < len(lit) || string(w.b[w.i:w.i+len(lit)]) != lit {
		return w.invalid("")
	}
	w.i += len(lit)
	return nil
}

// number reads a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (w *walker) number() error {
	start := w.i
	if w.next() == '-' {
		w.i++
	}
	switch c := w.next(); {
	case c == '0':
		w.i++
	case c >= '1' && c <= '9':
		w.digits()
	default:
		return w.invalid("")
	}
	if w.next() == '.' {
		w.i++
		if !w.digits() {
			return w.invalid("")
		}
	}
	if c := w.next(); c == 'e' || c == 'E' {
		w.i++
		if c := w.next(); c == '+' || c == '-' {
			w.i++
		}
		if !w.digits() {
			return w.invalid("")
		}
	}
	if w.rules.Number != nil {
		if err := w.rules.Number(string(w.b[start:w.i])); err != nil {
			return &Error{Kind: ErrNumber, Err: err}
		}
	}
	return nil
}

func (w *walker) digits() bool {
	start := w.i
	for w.i < len(w.b) && w.b[w.i] >= '0' && w.b[w.i] <= '9' {
		w.i++
	}
	return w.i > start
}

func (w *walker) skipSpace() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (w *walker) value(depth int) error {
	switch c := w.next(); {
	case c == '{' || c == '[':
		if depth >= w.rules.MaxDepth {
			return &Error{Kind: ErrTooDeep, Detail: "limit " + strconv.Itoa(w.rules.MaxDepth)}
		}
		if c == '{' {
			return w.object(depth + 1)
		}
		return w.array(depth + 1)
	case c == '"':
		_, err := w.str()
		return err
	case c == '-' || (c >= '0' && c <= '9'):
		return w.number()
	case c == 't':
		return w.literal("true")
	case c == 'f':
		return w.literal("false")
	case c == 'n':
		return w.literal("null")
	}
	return w.invalid("")
}

func (w *walker) array(depth int) error {
	w.i++ // '['
	w.skipSpace()
	if w.next() == ']' {
		w.i++
		return nil
	}
	for {
		if err := w.value(depth); err != nil {
			return err
		}
		w.skipSpace()
		switch w.next() {
		case ']':
			w.i++
			return nil
		case ',':
			w.i++
			w.skipSpace()
		default:
			return w.invalid("")
		}
	}
}

// smallObject is how many keys are compared pairwise before a map is used.
const smallObject = 16

func (w *walker) object(depth int) error {
	w.i++ // '{'
	w.skipSpace()
	if w.next() == '}' {
		w.i++
		return nil
	}
	var small [smallObject][]byte
	keys := small[:0]
	var folded map[string][]byte // once there are more keys than smallObject
	for {
		if w.next() != '"' {
			return w.invalid("")
		}
		key, err := w.str()
		if err != nil {
			return err
		}
		if w.grammar {
			// keys not compared
		} else if folded == nil {
			for _, k := range keys {
				if err := collide(k, key, depth); err != nil && !w.foldedOnly(err) {
					return err
				}
			}
			keys = append(keys, key)
			if len(keys) > smallObject {
				folded = make(map[string][]byte, 2*len(keys))
				for _, k := range keys {
					folded[FoldKey(string(k))] = k
				}
				if w.rules.foldedKeys {
					clear(folded)
					for _, k := range keys {
						folded[string(k)] = k
					}
				}
			}
		} else {
			f := FoldKey(string(key))
			if w.rules.foldedKeys {
				f = string(key)
			}
			if k, ok := folded[f]; ok {
				return collide(k, key, depth)
			}
			folded[f] = key
		}
		w.skipSpace()
		if w.next() != ':' {
			return w.invalid("")
		}
		w.i++
		w.skipSpace()
		if err := w.value(depth); err != nil {
			return err
		}
		w.skipSpace()
		switch w.next() {
		case '}':
			w.i++
			return nil
		case ',':
			w.i++
			w.skipSpace()
		default:
			return w.invalid("")
		}
	}
}

// foldedOnly: err is keys equal only under folding, which the rules let
// pass.
func (w *walker) foldedOnly(err error) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == ErrFolded && w.rules.foldedKeys
}

// collide reports two keys of one object that name one member to some
// parser: equal, or equal under simple case folding (as encoding/json
// matches a key to a struct field).
func collide(first, key []byte, depth int) error {
	switch {
	case bytes.Equal(first, key):
		return &Error{Kind: ErrDuplicate, Detail: quote(key) + " at depth " + strconv.Itoa(depth)}
	case len(first) != len(key) && asciiOnly(first) && asciiOnly(key):
		// ASCII folds only to ASCII, byte for byte: keys of different
		// lengths differ under folding (the common case, checked cheaply).
		return nil
	case bytes.EqualFold(first, key):
		return &Error{Kind: ErrFolded, Detail: quote(first) + " and " + quote(key) + " at depth " + strconv.Itoa(depth) + " name one field to a case-insensitive decoder"}
	}
	return nil
}

// str reads the string at w.i and returns its value (unescaped only when
// it has escapes), refusing a lone surrogate escape, which parsers read
// differently (encoding/json as U+FFFD, JavaScript and Python as itself).
func (w *walker) str() ([]byte, error) {
	w.i++ // opening quote
	start := w.i
	escaped := false
	for {
		if w.i >= len(w.b) {
			return nil, w.invalid("")
		}
		c := w.b[w.i]
		if c == '"' {
			break
		}
		if c < 0x20 {
			return nil, w.invalid("a control character in a string")
		}
		if c == '\\' {
			escaped = true
			w.i++
			switch w.next() {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(w.b)-w.i < 5 || !isHex(w.b[w.i+1:w.i+5]) {
					return nil, w.invalid("a bad \\u escape")
				}
				w.i += 4
			default:
				return nil, w.invalid("a bad escape")
			}
		}
		w.i++
	}
	raw := w.b[start:w.i]
	w.i++ // closing quote
	if !escaped {
		return raw, nil
	}
	if lone := loneSurrogate(raw); lone != "" {
		return nil, &Error{Kind: ErrInvalid, Detail: "a lone surrogate escape " + lone}
	}
	if w.grammar {
		return raw, nil
	}
	var s string
	if err := json.Unmarshal(w.b[start-1:w.i], &s); err != nil {
		return nil, &Error{Kind: ErrInvalid, Detail: err.Error()}
	}
	return []byte(s), nil
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// grammarOK reports whether raw is one JSON value (RFC 8259, valid UTF-8,
// no lone surrogate escape) nested at most maxDepth deep, keys not
// compared.
func grammarOK(raw []byte, maxDepth int) bool {
	if !utf8.Valid(raw) {
		return false
	}
	w := walker{b: raw, rules: Rules{MaxDepth: maxDepth}, grammar: true}
	w.skipSpace()
	if w.value(0) != nil {
		return false
	}
	w.skipSpace()
	return w.i == len(w.b)
}

// loneSurrogate finds a \uD800-\uDFFF escape that is not a high surrogate
// followed by a low one, in the body of a JSON string.
func loneSurrogate(raw []byte) string {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if raw[i+1] != 'u' {
			i++
			continue
		}
		r := hex4(raw[i+2 : i+6])
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if lo := hex4(raw[i+8 : i+12]); lo >= 0xDC00 && lo < 0xE000 {
					i += 11
					continue
				}
			}
			return string(raw[i : i+6])
		case r >= 0xDC00 && r < 0xE000:
			return string(raw[i : i+6])
		}
		i += 5
	}
	return ""
}

func hex4(b []byte) rune {
	v, _ := strconv.ParseUint(string(b), 16, 32)
	return rune(v)
}

// quote quotes a key for an error message, clipped: keys are the sender's.
func quote(key []byte) string {
	s := string(key)
	if len(s) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strconv.QuoteToASCII(s)
}

// FoldKey returns the form under which encoding/json matches an object key
// to a struct field: two keys collide exactly when their FoldKeys are
// equal (the same relation as strings.EqualFold). Each rune becomes the
// smallest rune of its simple case folding orbit, so "s", "S" and "ſ"
// (U+017F) all become "S", and "k", "K" and "K" (U+212A) all become "K".
func FoldKey(key string) string {
	ascii := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		// For ASCII, the smallest rune of each orbit is the upper case
		// letter ("k" folds with "K" and U+212A; "K" is smallest).
		return strings.ToUpper(key)
	}
	var b strings.Builder
	b.Grow(len(key))
	for _, r := range key {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

// foldRune walks r's orbit under unicode.SimpleFold (which steps to the
// next larger rune and wraps to the smallest) until it wraps.
func foldRune(r rune) rune {
	for {
		next := unicode.SimpleFold(r)
		if next <= r {
			return next
		}
		r = next
	}
}

// asciiOnly: b has no byte of a multi-byte UTF-8 sequence.
func asciiOnly(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
