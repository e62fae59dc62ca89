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

	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fast lane: over stdio on both sides, a call to a tool that passes
// through ungated is forwarded as the bytes the client sent, and its
// response and progress as the bytes the upstream sent, without the SDK
// decoding and re-encoding them (which costs several times what the
// upstream itself spends on a small read). Everything else (the handshake,
// gated calls, resources, prompts, what the upstream asks the client, any
// line the fast lane is not sure about) goes through the SDK server and
// client. The fast lane only ever skips work for a call the SDK path would
// also have passed through unchanged: when in doubt it hands the line to
// the SDK path, which is the safe default.
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
	toUpstream := func(p []byte) error {
		line, err := u.fromSDK(p)
		if err != nil {
			return err
		}
		return u.writeUpstream(line)
	}
	t := &mcp.IOTransport{Reader: u.sdkIn, Writer: funcWriter{toUpstream, u.stdin.Close}, MaxLineLength: -1}
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

// funcWriter is an io.WriteCloser made of two funcs. The SDK writes one
// whole line per Write.
type funcWriter struct {
	write func([]byte) error
	close func() error
}

func (w funcWriter) Write(p []byte) (int, error) {
	if err := w.write(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w funcWriter) Close() error { return w.close() }

// fromSDK rewrites the SDK client's request ids (and the ids its
// cancellations name) to reserved strings. It decodes the SDK's own line
// with encoding/json, not frame.Read: the SDK passes on values it does not
// look into (arguments, input responses) as the client sent them, lone
// surrogate escapes included, where frame.Read names no kind, and a
// request written upstream under the SDK's own id could collide with a
// fast-lane call's.
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
		// Only under its alias: the SDK's own id upstream could name a
		// fast-lane call of the client's (an alias is gone once its
		// request was answered, and the cancellation is moot then).
		var params map[string]json.RawMessage
		if json.Unmarshal(m["params"], &params) != nil {
			return nil, nil
		}
		aliased := false
		u.mu.Lock()
		for alias, orig := range u.sdkIDs {
			if bytes.Equal(orig, params["requestId"]) {
				params["requestId"] = json.RawMessage(alias)
				aliased = true
				break
			}
		}
		u.mu.Unlock()
		if !aliased {
			return nil, nil
		}
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
		if len(line) > 0 && u.route(line) != nil || err != nil {
			return
		}
	}
}

func (u *UpstreamPipe) route(line []byte) error {
	// A line goes to the client raw only when it reads the same to every
	// parser (frame.Read's rule: strictly, with exactly the members of its
	// kind). encoding/json matches keys case-insensitively and keeps the
	// last duplicate, while other clients read the exact key: a line that
	// is progress to one and an elicitation/create to another must never
	// take the raw path. The SDK client decodes and re-encodes what it
	// gets, so anything else goes there.
	f := frame.Read(line)
	if !f.Alike {
		return u.routeUnclear(line)
	}
	if f.Kind == frame.Response {
		if ok, err := u.answer(f.ID, line, line); ok {
			return err
		}
	}
	if f.Kind == frame.Notification {
		// A fast-lane call's progress, or a notification the SDK client
		// would drop (see unknown_methods.go): the client gets the
		// upstream's line.
		u.mu.Lock()
		raw := f.Method == "notifications/progress" && u.tokens[f.Progress] > 0 || !knownUpstreamMethods[f.Method]
		down := u.down
		u.mu.Unlock()
		if raw {
			return down(line)
		}
	}
	_, err := u.sdkFeed.Write(line)
	return err
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
		refused := fastErrorBody(id, "mcpsafe proxy: the upstream's answer cannot be read the same way by every JSON parser (duplicate keys, or keys that differ only in case); refused")
		if ok, err := u.answer(id, line, append(refused, '\n')); ok {
			return err
		}
	}
	_, err := u.sdkFeed.Write(line)
	return err
}

// answer delivers the upstream's answer (line) to the request in flight
// under id: the SDK client's own gets line under its own id, a fast-lane
// call's gets toClient on the lane. It reports whether id was in flight.
func (u *UpstreamPipe) answer(id string, line, toClient []byte) (bool, error) {
	u.mu.Lock()
	if orig, ok := u.sdkIDs[id]; ok {
		delete(u.sdkIDs, id)
		u.mu.Unlock()
		return true, u.toSDKWithID(line, orig)
	}
	tok, ok := u.fast[id]
	delete(u.fast, id)
	down := u.down
	u.mu.Unlock()
	if !ok {
		return false, nil
	}
	u.releaseToken(tok)
	return true, down(toClient)
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
		b = append(append(o.barrier(), '\n'), b...)
	}
	_, err = u.sdkFeed.Write(append(b, '\n'))
	return err
}

// fastCall is a fast-lane call in flight: its id and progress token, as
// the frame reader read them.
type fastCall struct {
	id, token string // raw JSON; token empty without a progress token
}

// fastCallOf reports whether f, a tools/call frame the reader found Alike,
// may take the lane for the tool the upstream knows as name, and its id and
// progress token.
func (s *Server) fastCallOf(f frame.Frame, name string) (fastCall, bool) {
	// The reader's ids are plain: a string without escapes, so the prefix
	// is read here as every parser reads it.
	if strings.HasPrefix(f.ID, `"`+sdkIDPrefix) {
		return fastCall{}, false
	}
	if v, ok := f.Params["requestState"]; ok {
		// A proxy continuation goes to continueCall on the SDK path, and
		// never upstream.
		var st string
		if json.Unmarshal(v, &st) != nil || isContinuation(st) {
			return fastCall{}, false
		}
	}
	if !s.passesThrough(name) {
		return fastCall{}, false
	}
	if f.Progress == "null" {
		// The SDK path reads a null token as none and relays no progress;
		// raw, the upstream would send progress under it.
		return fastCall{}, false
	}
	return fastCall{id: f.ID, token: f.Progress}, true
}

// failFast answers every fast-lane call still in flight with an error
// once the upstream has exited: the client would otherwise wait forever
// (on the SDK path the session's end fails the call). The call may have
// run; it is not retried.
func (u *UpstreamPipe) failFast() {
	u.mu.Lock()
	fast, down := u.fast, u.down
	u.fast = map[string]string{}
	u.mu.Unlock()
	for id := range fast {
		down(append(fastErrorBody(id, "mcpsafe proxy: the upstream server exited before it answered; the call may have run"), '\n'))
	}
}

// setDown sets where fast-lane responses go.
func (u *UpstreamPipe) setDown(down func([]byte) error) {
	u.mu.Lock()
	u.down = down
	u.mu.Unlock()
}

func initializedLine(line []byte) bool {
	if !bytes.Contains(line, []byte(`"notifications/initialized"`)) {
		return false
	}
	f := frame.Read(line)
	return f.Kind == frame.Notification && f.Method == "notifications/initialized"
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

// endFast ends c's fast-lane call unless its answer ended it already: a
// token is released once per call that registered it, so that a cancel
// racing the upstream's answer cannot stop the progress of another call
// sharing the token.
func (u *UpstreamPipe) endFast(c fastCall) {
	u.mu.Lock()
	tok, inFlight := u.fast[c.id]
	delete(u.fast, c.id)
	u.mu.Unlock()
	if inFlight {
		u.releaseToken(tok)
	}
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

// fastCancel forwards a client's cancellation (f, read from line) of a
// fast-lane call as is.
func (u *UpstreamPipe) fastCancel(f frame.Frame, line []byte) bool {
	id := string(bytes.TrimSpace(f.Params["requestId"]))
	u.mu.Lock()
	_, inFlight := u.fast[id]
	u.mu.Unlock()
	if !inFlight || u.writeUpstream(line) != nil {
		return false
	}
	// A cancelled request gets no response: stop waiting for one.
	u.endFast(fastCall{id: id})
	return true
}
