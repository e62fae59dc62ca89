package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast lane: over stdio on both sides, a call to a tool that passes
// through ungated is forwarded as the bytes the client sent, and its
// response and progress as the bytes the upstream sent, without the SDK
// decoding and re-encoding them (which costs several times what the
// upstream itself spends on a small read). Everything else (the handshake,
// gated calls, resources, prompts, what the upstream asks the client, any
// line the fast lane is not sure about) goes through the SDK server and
// client as before. The fast lane only ever skips work for a call the SDK
// path would also have passed through unchanged: when in doubt it hands the
// line to the SDK path, which is the safe default.
//
// On the upstream pipe, the SDK client's request ids are rewritten to
// reserved strings (sdkIDPrefix), so that they can never collide with the
// client's ids; a client request using that prefix never takes the fast
// lane.

const sdkIDPrefix = "mcpsafe-sdk-"

// UpstreamPipe is an upstream server run as a command over stdio, shared by
// the SDK client (as its Transport) and the fast lane.
type UpstreamPipe struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	wmu   sync.Mutex // one line at a time onto the upstream's stdin

	sdkIn   *io.PipeReader // what the SDK client reads
	sdkFeed *io.PipeWriter
	exited  chan struct{} // closed once the command has exited and been waited for

	mu     sync.Mutex
	sdkIDs map[string]json.RawMessage // rewritten id -> the SDK's own id
	fast   map[string]string          // fast-lane request id in flight -> its progress token (raw JSON)
	tokens map[string]int             // fast-lane progress tokens still routed to the client
	down   func([]byte) error         // writes a line to the downstream client
	sdkSeq uint64
	order  *notifyOrder // barriers before the SDK client's responses (notify_order.go)

	fastCalls atomic.Int64 // calls that took the fast lane, for tests
}

// StartUpstream starts cmd and returns the pipe to it.
func StartUpstream(cmd *exec.Cmd) (*UpstreamPipe, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	u := &UpstreamPipe{cmd: cmd, stdin: stdin, out: bufio.NewReaderSize(stdout, 64<<10), sdkIn: pr, sdkFeed: pw,
		exited: make(chan struct{}), sdkIDs: map[string]json.RawMessage{}, fast: map[string]string{}, tokens: map[string]int{},
		down: func([]byte) error { return nil }}
	go u.readUpstream()
	return u, nil
}

// Connect gives the SDK client its connection: lines it writes go upstream
// (ids rewritten), lines the demultiplexer routes to it come back.
func (u *UpstreamPipe) Connect(ctx context.Context) (mcp.Connection, error) {
	t := &mcp.IOTransport{Reader: u.sdkIn, Writer: sdkWriter{u}, MaxLineLength: -1}
	return t.Connect(ctx)
}

// close stops the upstream command as the SDK's CommandTransport does:
// end of input first, then a kill if it does not exit.
func (u *UpstreamPipe) close() {
	u.stdin.Close()
	select {
	case <-u.exited:
	case <-time.After(5 * time.Second):
		u.cmd.Process.Kill()
		<-u.exited
	}
}

func (u *UpstreamPipe) writeUpstream(line []byte) error {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	_, err := u.stdin.Write(line)
	return err
}

// sdkWriter carries the SDK client's lines upstream. The SDK writes one
// whole line per Write.
type sdkWriter struct{ u *UpstreamPipe }

func (w sdkWriter) Write(p []byte) (int, error) {
	line, err := w.u.fromSDK(p)
	if err != nil {
		return 0, err
	}
	if err := w.u.writeUpstream(line); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w sdkWriter) Close() error { return w.u.stdin.Close() }

// fromSDK rewrites the SDK client's request ids (and the ids its
// cancellations name) to reserved strings.
func (u *UpstreamPipe) fromSDK(p []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(p, &m); err != nil {
		return p, nil // a batch or something odd: as is, the upstream will answer it
	}
	_, isCall := m["method"]
	id, hasID := m["id"]
	switch {
	case isCall && hasID:
		u.mu.Lock()
		u.sdkSeq++
		alias := strconv.Quote(sdkIDPrefix + strconv.FormatUint(u.sdkSeq, 10))
		u.sdkIDs[alias] = id
		u.mu.Unlock()
		m["id"] = json.RawMessage(alias)
	case string(m["method"]) == `"notifications/cancelled"`:
		var params map[string]json.RawMessage
		if json.Unmarshal(m["params"], &params) != nil {
			return p, nil
		}
		u.mu.Lock()
		for alias, orig := range u.sdkIDs {
			if bytes.Equal(orig, params["requestId"]) {
				params["requestId"] = json.RawMessage(alias)
				break
			}
		}
		u.mu.Unlock()
		b, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		m["params"] = b
	default:
		return p, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// upstreamPeek is what routing an upstream line needs.
type upstreamPeek struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params struct {
		ProgressToken json.RawMessage `json:"progressToken"`
	} `json:"params"`
}

// readUpstream routes every line the upstream writes: a fast-lane response
// or progress goes to the client as is; everything else to the SDK client
// (responses to its own requests with their ids restored).
func (u *UpstreamPipe) readUpstream() {
	defer func() {
		u.sdkFeed.Close()
		io.Copy(io.Discard, u.out)
		u.cmd.Wait() // only once every read from its output is done
		u.failFast()
		close(u.exited)
	}()
	for {
		line, err := u.out.ReadBytes('\n')
		if len(line) > 0 {
			if werr := u.route(line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (u *UpstreamPipe) route(line []byte) error {
	// A line goes to the client raw only when it reads the same to every
	// parser: strictly (no duplicate keys, none equal under case folding)
	// and with exactly the members of its kind. encoding/json matches keys
	// case-insensitively and keeps the last duplicate, while other clients
	// read the exact key: a line that is progress to one and an
	// elicitation/create to another must never take the raw path. The SDK
	// client decodes and re-encodes what it gets, so anything else goes
	// there.
	top, strict := strictObject(line)
	shape := ""
	if strict {
		shape = upstreamShape(top)
	}
	if shape == "" {
		return u.routeUnclear(line)
	}
	id := string(bytes.TrimSpace(top["id"]))
	var method string
	if shape != "response" && json.Unmarshal(top["method"], &method) != nil {
		return u.routeUnclear(line)
	}
	u.mu.Lock()
	switch {
	case shape == "response":
		if orig, ok := u.sdkIDs[id]; ok {
			delete(u.sdkIDs, id)
			u.mu.Unlock()
			return u.toSDKWithID(line, orig)
		}
		if tok, ok := u.fast[id]; ok {
			delete(u.fast, id)
			down := u.down
			u.mu.Unlock()
			u.releaseToken(tok)
			return down(line)
		}
	case shape == "notification" && method == "notifications/progress":
		params, ok := strictObject(top["params"])
		if ok && u.tokens[string(bytes.TrimSpace(params["progressToken"]))] > 0 {
			down := u.down
			u.mu.Unlock()
			return down(line)
		}
	case shape == "notification" && !knownUpstreamMethods[method]:
		// A notification the SDK client would drop: the client gets the
		// upstream's line (see unknown_methods.go).
		down := u.down
		u.mu.Unlock()
		return down(line)
	}
	u.mu.Unlock()
	_, err := u.sdkFeed.Write(line)
	return err
}

// upstreamShape names the kind of a strictly read upstream line with
// exactly the members of that kind, or "" for any other line.
func upstreamShape(top map[string]json.RawMessage) string {
	if string(top["jsonrpc"]) != `"2.0"` {
		return ""
	}
	has := func(k string) int {
		if _, ok := top[k]; ok {
			return 1
		}
		return 0
	}
	id, method, params, result, errm := has("id"), has("method"), has("params"), has("result"), has("error")
	switch {
	case id == 1 && method == 0 && params == 0 && result+errm == 1 && len(top) == 3:
		return "response"
	case id == 0 && method == 1 && result+errm == 0 && len(top) == 2+params:
		return "notification"
	case id == 1 && method == 1 && result+errm == 0 && len(top) == 3+params:
		return "request"
	}
	return ""
}

// routeUnclear handles an upstream line that does not read the same to
// every parser. Never relayed raw: the SDK client gets it (and re-encodes
// what it makes of it), except that a fast-lane call it may answer is
// answered with an error rather than left waiting, since the SDK client
// does not know that call.
func (u *UpstreamPipe) routeUnclear(line []byte) error {
	var p upstreamPeek
	if json.Unmarshal(line, &p) == nil && p.Method == nil {
		id := string(bytes.TrimSpace(p.ID))
		u.mu.Lock()
		tok, ok := u.fast[id]
		if ok {
			delete(u.fast, id)
		}
		down := u.down
		u.mu.Unlock()
		if ok {
			u.releaseToken(tok)
			return down([]byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"mcpsafe proxy: the upstream's answer cannot be read the same way by every JSON parser (duplicate keys, or keys that differ only in case); refused"}}` + "\n"))
		}
	}
	_, err := u.sdkFeed.Write(line)
	return err
}

func (u *UpstreamPipe) toSDKWithID(line []byte, orig json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return err
	}
	m["id"] = orig
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	u.mu.Lock()
	o := u.order
	u.mu.Unlock()
	if o != nil { // see notify_order.go
		b = append(o.barrier(), b...)
	}
	_, err = u.sdkFeed.Write(append(b, '\n'))
	return err
}

// fastCall is what the fast lane needs to know about a client line, read
// strictly: a line it cannot read exactly as any JSON parser would (two
// keys that are equal or differ only in case, which parsers resolve
// differently) is not fast.
type fastCall struct {
	id, token string // raw JSON; token empty without a progress token
}

// peekCall reports whether line is a tools/call of a tool that passes
// through, and its id and progress token.
func (s *Server) peekCall(line []byte) (fastCall, bool) {
	top, ok := strictObject(line)
	if !ok {
		return fastCall{}, false
	}
	params, ok := strictObject(top["params"])
	if !ok {
		return fastCall{}, false
	}
	var name string
	if json.Unmarshal(params["name"], &name) != nil {
		return fastCall{}, false
	}
	return s.fastCallOf(top, params, name)
}

// fastCallOf is peekCall on a line already read strictly, for the tool
// the upstream knows as name.
func (s *Server) fastCallOf(top, params map[string]json.RawMessage, name string) (fastCall, bool) {
	if string(top["method"]) != `"tools/call"` || string(top["jsonrpc"]) != `"2.0"` {
		return fastCall{}, false
	}
	id := string(bytes.TrimSpace(top["id"]))
	if id == "" || id == "null" || id[0] == '{' || id[0] == '[' {
		return fastCall{}, false
	}
	if id[0] == '"' {
		var sid string
		if json.Unmarshal([]byte(id), &sid) != nil || strings.HasPrefix(sid, sdkIDPrefix) {
			return fastCall{}, false
		}
	}
	for k, v := range params {
		// A proxy continuation goes to continueCall on the SDK path, and
		// never upstream.
		if strings.EqualFold(k, "requestState") {
			var st string
			if json.Unmarshal(v, &st) != nil || isContinuation(st) {
				return fastCall{}, false
			}
		}
	}
	if !s.passesThrough(name) {
		return fastCall{}, false
	}
	c := fastCall{id: id}
	if raw, ok := params["_meta"]; ok {
		meta, ok := strictObject(raw)
		if !ok {
			return fastCall{}, false
		}
		if tok, ok := meta["progressToken"]; ok {
			c.token = string(bytes.TrimSpace(tok))
		}
	}
	return c, true
}

// strictObject decodes a JSON object's members, refusing duplicate keys
// and keys equal under case folding.
func strictObject(raw []byte) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := t.(string)
		if !ok {
			return nil, false
		}
		for k := range out {
			if strings.EqualFold(k, key) {
				return nil, false
			}
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		out[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false // anything after the object
	}
	return out, true
}

// ServeStdio serves the proxy on in/out. With an UpstreamPipe upstream,
// pass-through tool calls take the fast lane; otherwise it is
// s.MCP.Run on stdio.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	u := s.pipe
	if u == nil {
		return s.MCP.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
	}
	var omu sync.Mutex
	writeDown := func(line []byte) error {
		omu.Lock()
		defer omu.Unlock()
		_, err := out.Write(line)
		return err
	}
	u.setDown(writeDown)
	sdkIn, sdkFeed := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- s.MCP.Run(ctx, &mcp.IOTransport{Reader: sdkIn, Writer: lockedWriter{writeDown}, MaxLineLength: -1})
	}()
	go func() {
		defer sdkFeed.Close()
		br := bufio.NewReaderSize(in, 64<<10)
		// The fast lane opens only for clients of the upstream session's
		// generation, once the client has finished the handshake.
		legacyUp := s.Upstream.InitializeResult().ProtocolVersion < modernProtocol
		ready := false
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				if !ready {
					ready = legacyUp && bytes.Contains(line, []byte(`"notifications/initialized"`)) && initializedLine(line)
				} else if c, ok := s.peekCall(line); ok && u.startFast(c) {
					if werr := u.writeUpstream(line); werr != nil {
						u.endFast(c)
						return
					}
					continue
				} else if u.fastCancel(line) || s.relayUnknown(u, line, writeDown) {
					continue
				}
				if _, werr := sdkFeed.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return <-errc
}

// failFast answers every fast-lane call still in flight with an error
// once the upstream has exited: the client would otherwise wait forever
// (on the SDK path the session's end fails the call). The call may have
// run; it is not retried.
func (u *UpstreamPipe) failFast() {
	u.mu.Lock()
	ids := make([]string, 0, len(u.fast))
	for id := range u.fast {
		ids = append(ids, id)
	}
	u.fast = map[string]string{}
	down := u.down
	u.mu.Unlock()
	for _, id := range ids {
		down([]byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"mcpsafe proxy: the upstream server exited before it answered; the call may have run"}}` + "\n"))
	}
}

// setDown sets where fast-lane responses go.
func (u *UpstreamPipe) setDown(down func([]byte) error) {
	u.mu.Lock()
	u.down = down
	u.mu.Unlock()
}

func initializedLine(line []byte) bool {
	top, ok := strictObject(line)
	return ok && string(top["method"]) == `"notifications/initialized"`
}

// startFast registers a fast-lane call; false when its id is already in
// flight (the SDK path then takes it, and answers as it would).
func (u *UpstreamPipe) startFast(c fastCall) bool {
	if !u.register(c) {
		return false
	}
	u.fastCalls.Add(1)
	return true
}

// register routes the upstream's response to c (and its progress) to the
// client as is; false when c's id is already in flight.
func (u *UpstreamPipe) register(c fastCall) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, dup := u.fast[c.id]; dup {
		return false
	}
	u.fast[c.id] = c.token
	if c.token != "" {
		u.tokens[c.token]++
	}
	return true
}

func (u *UpstreamPipe) endFast(c fastCall) {
	u.mu.Lock()
	delete(u.fast, c.id)
	u.mu.Unlock()
	u.releaseToken(c.token)
}

// releaseToken stops routing a call's progress to the client a while
// after the call ended (notifications may trail the response, as on the
// SDK path).
func (u *UpstreamPipe) releaseToken(tok string) {
	if tok == "" {
		return
	}
	time.AfterFunc(progressGrace, func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.tokens[tok]--; u.tokens[tok] <= 0 {
			delete(u.tokens, tok)
		}
	})
}

// fastCancel forwards a client's cancellation of a fast-lane call as is.
func (u *UpstreamPipe) fastCancel(line []byte) bool {
	if !bytes.Contains(line, []byte(`notifications/cancelled`)) {
		return false
	}
	top, ok := strictObject(line)
	if !ok || string(top["method"]) != `"notifications/cancelled"` {
		return false
	}
	params, ok := strictObject(top["params"])
	if !ok {
		return false
	}
	id := string(bytes.TrimSpace(params["requestId"]))
	u.mu.Lock()
	tok, inFlight := u.fast[id]
	u.mu.Unlock()
	if !inFlight || u.writeUpstream(line) != nil {
		return false
	}
	// A cancelled request gets no response: stop waiting for one.
	u.endFast(fastCall{id: id, token: tok})
	return true
}

type lockedWriter struct{ write func([]byte) error }

func (w lockedWriter) Write(p []byte) (int, error) {
	if err := w.write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (lockedWriter) Close() error { return nil }

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
