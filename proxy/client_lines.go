package proxy

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What the SDK path reads of a client. The SDK reads a numeric JSON-RPC id
// as a float64 and keeps it as an int64: 9007199254740993 and
// 9007199254740992 (or 1.5 and 1) become one id, which is answered,
// cancelled and tracked as the other. And on stdio, a line the SDK cannot
// decode (a byte-order mark, two values on one line, anything not a
// JSON-RPC message) ends the client's session. So every client frame is
// read here before the SDK gets it: an id that parsers may read as another
// (frame.PlainID: an integer beyond ±(2^53−1), a fraction, an exponent, -0)
// is refused with an error that carries the id as the client wrote it; on
// stdio, a line that is not one JSON value is answered with a parse error
// and one that is no JSON-RPC message with an invalid request (id null,
// as JSON-RPC asks), and the session goes on.

const (
	msgParseError    = "mcpsafe proxy: parse error: a line must hold exactly one JSON value (no byte-order mark, no second value); it was dropped, the session goes on"
	msgInvalidFrame  = "mcpsafe proxy: invalid request: not a JSON-RPC 2.0 message; it was dropped, the session goes on"
	msgCollapsibleID = "mcpsafe proxy: invalid request: a numeric id must be an integer within ±(2^53−1), written plainly (parsers read other numbers as a different id); use a string id or a smaller integer"
)

// unclearID returns the JSON text of the first id in msg (a message, or
// a batch of them) that parsers may read as another id: a number that is
// not frame.PlainID. Every top-level "id" member counts, duplicates too.
func unclearID(msg []byte) (string, bool) {
	msg = bytes.TrimSpace(msg)
	if len(msg) > 0 && msg[0] == '[' {
		var batch []json.RawMessage
		if json.Unmarshal(msg, &batch) != nil {
			return "", false
		}
		for _, m := range batch {
			if id, ok := unclearID(m); ok {
				return id, true
			}
		}
		return "", false
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return "", false
		}
		if key != "id" || len(v) == 0 || v[0] == '"' || v[0] == 'n' || v[0] == 't' || v[0] == 'f' || v[0] == '{' || v[0] == '[' {
			continue
		}
		if id := string(v); !frame.PlainID(id) {
			return id, true
		}
	}
	return "", false
}

// sdkLine screens a client's stdio line for the SDK server: feed is the
// line to give it (nil: none), answer what to write to the client
// instead (nil: nothing).
func sdkLine(line []byte) (feed, answer []byte) {
	msg := bytes.TrimSpace(line)
	if len(msg) == 0 {
		return nil, nil
	}
	if !json.Valid(msg) {
		return nil, lineEnd(errorBody("null", jsonrpc.CodeParseError, msgParseError))
	}
	if id, bad := unclearID(msg); bad {
		if msg[0] == '[' || sdkResponse(msg) {
			return nil, nil // a response is not answered; the SDK's request waits, as for a lost answer
		}
		return nil, lineEnd(errorBody(id, jsonrpc.CodeInvalidRequest, msgCollapsibleID))
	}
	if !sdkDecodes(msg) {
		return nil, lineEnd(errorBody("null", jsonrpc.CodeInvalidRequest, msgInvalidFrame))
	}
	// Only the value and its line end: the SDK's reader takes nothing else
	// after a value (a tab before the line end would end the session).
	return lineEnd(msg), nil
}

// sdkDecodes: the SDK's reader takes msg, a JSON value, as a message or
// a batch (a batch is then the SDK's to refuse or serve).
func sdkDecodes(msg []byte) bool {
	if msg[0] != '[' {
		_, err := jsonrpc.DecodeMessage(msg)
		return err == nil
	}
	var batch []json.RawMessage
	if json.Unmarshal(msg, &batch) != nil || len(batch) == 0 {
		return false
	}
	for _, m := range batch {
		if _, err := jsonrpc.DecodeMessage(m); err != nil {
			return false
		}
	}
	return true
}

func sdkResponse(msg []byte) bool {
	m, err := jsonrpc.DecodeMessage(msg)
	_, ok := m.(*jsonrpc.Response)
	return err == nil && ok
}

func lineEnd(b []byte) []byte {
	return append(b[:len(b):len(b)], '\n')
}

// refuseUnclearIDs wraps the SDK's HTTP handler: a POST whose body
// carries an id parsers may read as another is refused (400, with the
// id as the client wrote it) before the SDK decodes it.
func refuseUnclearIDs(next http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := readLaneBody(w, r, maxBody)
		if !ok {
			return
		}
		if id, bad := unclearID(body); bad {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			if bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")) || sdkResponse(body) {
				id = "null"
			}
			w.Write(errorBody(id, jsonrpc.CodeInvalidRequest, msgCollapsibleID))
			return
		}
		next.ServeHTTP(w, r)
	})
}
