package frame

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Kind is what a JSON-RPC frame is.
type Kind uint8

const (
	Invalid      Kind = iota // not a JSON-RPC message this reader can name
	Request                  // method and id
	Notification             // method, no id
	Response                 // id and result or error, no method
)

func (k Kind) String() string {
	return [...]string{"invalid", "request", "notification", "response"}[k]
}

// Frame is one JSON-RPC message as Read reads it.
type Frame struct {
	// Kind, ID and Method are set whenever the top-level object reads
	// strictly (unique keys, none equal under case folding) with a
	// "jsonrpc" member and the exact members of some kind, even when the
	// frame is not Alike: a relay may refuse such a frame by its id, but
	// passes raw only an Alike one.
	Kind   Kind
	ID     string // the id's JSON text as sent; "" for a notification
	Method string // requests and notifications

	// Alike: the frame reads alike to every parser it meets
	// (encoding/json, the MCP SDK's decoder, JavaScript's JSON.parse,
	// Python's json), so its bytes may pass raw. Why says why not.
	Alike bool
	Why   string

	Tool     string // params.name of a tools/call (Alike frames)
	Progress string // the progress token's JSON text: params._meta.progressToken of a request, params.progressToken of notifications/progress

	Top    map[string]json.RawMessage // the top-level members
	Params map[string]json.RawMessage // params' members, when params is an object

	// Meta and Result hold the members of params._meta and of a
	// response's result (Alike frames), as the one reading found them: a
	// relay that looks inside a frame it passes raw reads them here rather
	// than a second time.
	Meta   map[string]json.RawMessage
	Result map[string]json.RawMessage
}

// MaxDepth is how deep an Alike frame may nest (the SDK refuses 1,000,
// Python's json recurses).
const MaxDepth = 256

// Members of a frame by kind, spelt exactly.
var (
	requestMembers  = map[string]bool{"jsonrpc": true, "id": true, "method": true, "params": true}
	responseMembers = map[string]bool{"jsonrpc": true, "id": true, "result": true, "error": true}
	// toolsCallParams are the members of a tools/call's params that the SDK
	// path carries upstream (mcp.CallToolParams); any other it drops.
	toolsCallParams = map[string]bool{"name": true, "arguments": true, "_meta": true, "inputResponses": true, "requestState": true}
	// readNames are the members mcpsafe reads inside params, params._meta
	// and result: spelt otherwise but equal under case folding they are
	// read by encoding/json and unseen by exact readers.
	readNames = []string{"name", "arguments", "_meta", "progressToken", "requestState", "inputResponses", "resultType", "inputRequests"}
)

// Read classifies frame (a line with or without its "\n", or an HTTP
// body) once. The rule for Alike, the one rule for what passes raw:
//
//  1. one JSON value, nothing after it but a final "\n" or "\r\n"; no other
//     carriage return anywhere (a line end to some readers and not to
//     others), no byte-order mark, valid UTF-8, no lone surrogate escape;
//  2. at every depth, no object with two keys that are equal (after
//     unescaping) or equal under simple case folding (encoding/json folds,
//     the SDK, JavaScript and Python do not; all but the strictest keep the
//     last duplicate), except that keys equal only under folding may stand
//     inside a result's structuredContent, which every reader (the SDK
//     too) keeps as a map; nesting at most MaxDepth;
//  3. a top-level object with exactly the members of its kind, spelt
//     exactly: jsonrpc "2.0" (spelt so), method (a string), optional params
//     (an object) and, for a request, id; or for a response id and exactly
//     one of result and error (both objects);
//  4. the id a string without escapes or an integer within ±(2^53−1)
//     written plainly (what every parser reads as the same id);
//  5. in params, params._meta and result no member equal under case
//     folding to one mcpsafe reads (name, arguments, _meta, progressToken,
//     requestState, inputResponses, resultType, inputRequests) but spelt
//     otherwise; a tools/call's params have only the members the SDK path
//     carries (name, a string; arguments; _meta, an object; inputResponses;
//     requestState).
func Read(frame []byte) Frame {
	body := frame
	if n := len(body); n > 0 && body[n-1] == '\n' {
		body = body[:n-1]
		if n := len(body); n > 0 && body[n-1] == '\r' {
			body = body[:n-1]
		}
	}
	var f Frame
	err := Check(body, Rules{MaxDepth: MaxDepth})
	if e, ok := err.(*Error); ok && (e.Kind == ErrInvalid || !grammarOK(body, 10000)) {
		f.Why = err.Error()
		return f
	}
	top, ok := validMembers(body)
	if !ok {
		f.Why = "not one JSON object whose members read alike (duplicate or case-folded keys, or not JSON)"
		return f
	}
	f.Top = top
	if string(top["jsonrpc"]) != `"2.0"` {
		f.Why = `no "jsonrpc":"2.0"`
		return f
	}
	id, hasID := top["id"]
	m, hasMethod := top["method"]
	_, hasResult := top["result"]
	_, hasError := top["error"]
	switch {
	case hasMethod:
		// A string: encoding/json reads null into a string as "" without
		// an error, while JavaScript and Python read no method.
		if m[0] != '"' || json.Unmarshal(m, &f.Method) != nil {
			f.Why = "method is not a string"
			return f
		}
		f.Kind = Notification
		if hasID {
			f.Kind = Request
		}
	case hasID && (hasResult || hasError):
		f.Kind = Response
	default:
		f.Why = "neither a request, a notification nor a response"
		return f
	}
	if hasID {
		f.ID = string(bytes.TrimSpace(id))
	}
	if p, ok := top["params"]; ok {
		f.Params, _ = validMembers(p)
	}
	f.Why = alike(body, &f, err)
	f.Alike = f.Why == ""
	if !f.Alike {
		f.Tool, f.Progress, f.Meta, f.Result = "", "", nil, nil
	}
	return f
}

// alike applies the rule of Read to a frame whose top level is read, and
// says why it fails, or "".
func alike(body []byte, f *Frame, err error) string {
	if bytes.IndexByte(body, '\r') >= 0 {
		return "a carriage return that is not part of the line end"
	}
	if err != nil && !folded(err, f) {
		return err.Error()
	}
	allowed := requestMembers
	if f.Kind == Response {
		allowed = responseMembers
		_, r := f.Top["result"]
		_, e := f.Top["error"]
		if r == e {
			return "a response with both result and error"
		}
	}
	for k := range f.Top {
		if !allowed[k] {
			return "the member " + quote([]byte(k)) + ", which is not one of its kind's"
		}
	}
	if f.ID != "" && !PlainID(f.ID) {
		return "an id that parsers may read differently (null, a fraction, an exponent, beyond 2^53, an escape or not a string or number)"
	}
	if _, ok := f.Top["params"]; ok && f.Params == nil {
		return "params is not an object"
	}
	if why := readSpelt(f.Params, "params"); why != "" {
		return why
	}
	var meta map[string]json.RawMessage
	if raw, ok := f.Params["_meta"]; ok {
		var isObj bool
		if meta, isObj = validMembers(raw); !isObj {
			return "params._meta is not an object"
		}
		if why := readSpelt(meta, "params._meta"); why != "" {
			return why
		}
		f.Meta = meta
	}
	if f.Kind == Response {
		for _, k := range []string{"result", "error"} {
			if raw, ok := f.Top[k]; ok {
				m, isObj := validMembers(raw)
				if !isObj {
					return k + " is not an object"
				}
				if k == "result" {
					if why := readSpelt(m, "result"); why != "" {
						return why
					}
					f.Result = m
				} else if why := errorObject(m); why != "" {
					return why
				}
			}
		}
	}
	switch {
	case f.Kind == Request && f.Method == "tools/call":
		for k := range f.Params {
			if !toolsCallParams[k] {
				return "the tools/call parameter " + quote([]byte(k)) + ", which the SDK path does not carry"
			}
		}
		if json.Unmarshal(f.Params["name"], &f.Tool) != nil || f.Params["name"][0] != '"' {
			return "a tools/call without a tool name"
		}
	}
	switch {
	case f.Kind == Notification && f.Method == "notifications/progress":
		f.Progress = string(bytes.TrimSpace(f.Params["progressToken"]))
	case f.Kind == Request && meta != nil:
		f.Progress = string(bytes.TrimSpace(meta["progressToken"]))
	}
	return ""
}

// errorObject: exactly the members of a JSON-RPC error, code an integer
// and message a string (the SDK's decoder fails on anything else, while
// JavaScript and Python read the response).
func errorObject(m map[string]json.RawMessage) string {
	for k := range m {
		if k != "code" && k != "message" && k != "data" {
			return "the error member " + quote([]byte(k)) + ", which JSON-RPC errors do not have"
		}
	}
	code, msg := m["code"], m["message"]
	if len(code) == 0 || code[0] == '"' || !PlainID(string(code)) {
		return "an error code that is not an integer"
	}
	if len(msg) == 0 || msg[0] != '"' {
		return "an error message that is not a string"
	}
	return ""
}

// folded reports whether err, from the check of a whole response, is
// only keys equal under case folding inside result.structuredContent,
// which every reader keeps as a map (the SDK reads it as any), so they
// read its keys alike and the SDK path would pass them unchanged. Every
// other member of the result is checked whole; the result's and the
// frame's own keys were read strictly already.
func folded(err error, f *Frame) bool {
	e, ok := err.(*Error)
	if !ok || e.Kind != ErrFolded || f.Kind != Response {
		return false
	}
	result, ok := validMembers(f.Top["result"])
	if _, has := result["structuredContent"]; !ok || !has {
		return false
	}
	for k, v := range result {
		r := Rules{MaxDepth: MaxDepth - 2, foldedKeys: k == "structuredContent"}
		if Check(v, r) != nil {
			return false
		}
	}
	return true
}

// readSpelt refuses a member of m equal under case folding to one
// mcpsafe reads but spelt otherwise.
func readSpelt(m map[string]json.RawMessage, where string) string {
	for k := range m {
		for _, name := range readNames {
			// Simple folding maps a rune to a rune, and those that fold
			// to ASCII take 1 to 3 bytes (K, the Kelvin sign, 3): a key of
			// another length in bytes cannot fold to name.
			if len(k) < len(name) || len(k) > 3*len(name) {
				continue
			}
			if k != name && bytes.EqualFold([]byte(k), []byte(name)) {
				return "the member " + quote([]byte(k)) + " of " + where + ", read as " + strconv.Quote(name) + " by encoding/json and not by exact readers"
			}
		}
	}
	return ""
}

// PlainID: id (JSON text) is a string without escapes, or an integer
// written plainly within ±(2^53−1), which JavaScript reads exactly: the ids
// every parser reads as the same id, and the same ids only when their
// bytes are equal.
func PlainID(id string) bool {
	if id[0] == '"' {
		return bytes.IndexByte([]byte(id), '\\') < 0
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || id == "-0" {
		return false
	}
	const max = 1<<53 - 1
	return n >= -max && n <= max
}

// validMembers reads the members of raw, a value whose grammar is known
// good, when it is an object whose top-level keys are unique and none
// equal under case folding (nested values are not looked into).
func validMembers(raw []byte) (map[string]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	w := walker{b: raw, rules: Rules{MaxDepth: 1}}
	w.i++
	w.skipSpace()
	out := map[string]json.RawMessage{}
	if w.b[w.i] == '}' {
		return out, true
	}
	var keys [][]byte
	for {
		key, err := w.str()
		if err != nil {
			return nil, false
		}
		for _, k := range keys {
			if collide(k, key, 1) != nil {
				return nil, false
			}
		}
		keys = append(keys, key)
		w.skipSpace()
		w.i++ // ':'
		w.skipSpace()
		start := w.i
		w.skipValue()
		out[string(key)] = raw[start:w.i]
		w.skipSpace()
		c := w.b[w.i]
		w.i++
		if c == '}' {
			return out, true
		}
		w.skipSpace()
	}
}

// skipValue moves past the value at w.i (grammar known good).
func (w *walker) skipValue() {
	depth := 0
	for {
		switch c := w.b[w.i]; c {
		case '"':
			w.skipString()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				w.i++
				return
			}
		default:
			if depth == 0 && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				for w.i < len(w.b) && !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(w.b[w.i])) {
					w.i++
				}
				return
			}
		}
		w.i++
	}
}

func (w *walker) skipString() {
	w.i++
	for w.b[w.i] != '"' {
		if w.b[w.i] == '\\' {
			w.i++
		}
		w.i++
	}
	w.i++
}

// Members reads raw as one JSON object under Check's rules (at every
// depth) and returns its members.
func Members(raw []byte) (map[string]json.RawMessage, bool) {
	if Check(raw, Rules{MaxDepth: MaxDepth}) != nil {
		return nil, false
	}
	return validMembers(raw)
}

// Splice appends to dst msg with part, one of the raw members Read
// returned for msg (a sub-slice of it, such as Top["id"]), replaced by
// with: the rest of msg is copied as it is, not re-encoded. False (and dst
// as it was) when part is empty or does not lie within msg.
func Splice(dst, msg, part, with []byte) ([]byte, bool) {
	off := cap(msg) - cap(part)
	if len(part) == 0 || off < 0 || off+len(part) > len(msg) || &msg[off] != &part[0] {
		return dst, false
	}
	dst = append(dst, msg[:off]...)
	dst = append(dst, with...)
	return append(dst, msg[off+len(part):]...), true
}
