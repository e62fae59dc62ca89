package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP fast lane: over streamable HTTP on both sides, on the
// stateless 2026-07-28 protocol, a POST whose body is one tools/call of a
// tool that passes through ungated is forwarded to the upstream as the
// bytes the client sent, and the upstream's response (JSON, or an event
// stream carrying progress and the result) comes back as the upstream's
// bytes. Everything else goes to the SDK's handler as before, which is the
// safe default: the fast lane only takes a request the SDK path would have
// passed through unchanged, so every check below errs towards the SDK path.
//
// What the SDK path would change and the fast lane therefore requires
// absent: a capability the policy's upstream_requests refuses (withCaps
// strips it; the request must not declare it), an input request of a
// refused kind in the result (forward refuses it; the fast lane answers
// the same refusal), a proxy continuation as requestState (continueCall),
// members of params or of the message the SDK would drop, headers the SDK
// handler would refuse. Taken for a gateway's servers whose names are not
// prefixed (a single upstream is one), never for a prefixed one (the SDK
// path rewrites its names), nor with --http-stateful (2026-07-28 requests
// are refused there).

// httpLane is the upstream's streamable HTTP endpoint, when it has one.
type httpLane struct {
	endpoint string
	client   *http.Client
	calls    atomic.Int64 // calls that took the HTTP fast lane, for tests
	unknown  atomic.Int64 // unknown methods relayed, for tests
	st       statefulUp
}

// laneRequest is a request the lane forwards: its raw id (empty for a
// notification), method and, for tools/call, the tool's name.
type laneRequest struct {
	id, method, name string
	st               *statefulCall // on the stateful lane (http_lane_stateful.go)
}

// upID is the id the upstream answers: the client's, or the stateful
// lane's own.
func (c laneRequest) upID() string {
	if c.st != nil {
		return c.st.upID
	}
	return c.id
}

func newHTTPLane(t mcp.Transport) *httpLane {
	st, ok := t.(*mcp.StreamableClientTransport)
	if !ok || st.OAuthHandler != nil {
		// An upstream that wants the proxy's own credentials: the SDK
		// client knows how to present them; raw forwarding does not.
		return nil
	}
	hc := st.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return &httpLane{endpoint: st.Endpoint, client: hc}
}

// HTTPFastLane wraps next, the proxy's MCP handler as served with h's
// options, with the HTTP lane (see the gateway's HTTPFastLane).
func (s *Server) HTTPFastLane(next http.Handler, h mcphttp.HTTP) http.Handler {
	return s.member.g.HTTPFastLane(next, h)
}

// HTTPFastLane wraps next, the gateway's MCP handler as served with h's
// options, with the HTTP lane. It belongs inside authentication and the
// body limits (mcphttp.HTTP.Wrap). A body is read once (frame.Read); a
// tools/call goes to the server of its tool when the lane reaches it
// (httpLaneTo), and an unknown method to the only server of a gateway of
// one; anything else, and every request of --http-stateful, goes to next
// through the stateful lane (http_lane_stateful.go), which takes calls in
// 2025-11-25 sessions.
func (g *Gateway) HTTPFastLane(next http.Handler, h mcphttp.HTTP) http.Handler {
	maxBody := h.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = mcphttp.DefaultMaxBodyBytes
	}
	next = g.wrapStateful(refuseUnclearIDs(next, maxBody), h, maxBody) // sessions of 2025-11-25
	if h.Stateful {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !fastHTTPHeaders(r) {
			next.ServeHTTP(w, r)
			return
		}
		body, ok := readLaneBody(w, r, maxBody)
		if !ok {
			return
		}
		f := frame.Read(body)
		if f.Kind == frame.Request && f.Method == "tools/call" {
			if _, srv := g.route(f.Tool); srv != nil && srv.httpLaneTo() {
				if c, ok := srv.fastHTTPCall(r, f); ok {
					srv.httpUp.calls.Add(1)
					srv.forwardHTTP(w, r, body, laneRequest{id: c.id, method: "tools/call", name: f.Tool})
					return
				}
			}
		} else if srv := g.only(); srv != nil && srv.httpLaneTo() && srv.relayUnknownHTTP(w, r, body, f) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// readLaneBody reads r's body, at most maxBody bytes, and puts it back
// for the SDK handler; false when it answered r with an error.
func readLaneBody(w http.ResponseWriter, r *http.Request, maxBody int64) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		w.Header().Set("Connection", "close")
		if tooBig := (*http.MaxBytesError)(nil); errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", maxBody), http.StatusRequestEntityTooLarge)
			return nil, false
		}
		http.Error(w, "request body not received", http.StatusBadRequest)
		return nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// httpLaneTo: the HTTP lane reaches s's upstream. It relays the client's
// bytes, so it takes only a server whose names clients see as they are
// (no gateway prefix: a prefixed name would have to be rewritten, and the
// SDK path does that), over streamable HTTP without the proxy's own
// credentials (newHTTPLane), of the 2026-07-28 generation.
func (s *Server) httpLaneTo() bool {
	if s.httpUp == nil || s.member.prefix != "" || s.Upstream == nil {
		return false
	}
	init := s.Upstream.InitializeResult()
	return init != nil && init.ProtocolVersion == modernProtocol
}

// fastHTTPCall reports whether f, the body's tools/call as frame.Read
// read it (strictly, with exactly the members the SDK path carries), is one
// the SDK path would forward unchanged.
func (s *Server) fastHTTPCall(r *http.Request, f frame.Frame) (fastCall, bool) {
	if v := r.Header.Values("Mcp-Method"); len(v) != 1 || v[0] != "tools/call" {
		return fastCall{}, false
	}
	if r.Header.Get("Mcp-Name") != f.Tool {
		return fastCall{}, false
	}
	meta := f.Meta // nil without _meta
	if meta == nil || string(meta[mcp.MetaKeyProtocolVersion]) != `"`+modernProtocol+`"` {
		return fastCall{}, false
	}
	if info, present := meta[mcp.MetaKeyClientInfo]; present {
		if _, ok := frame.Members(info); !ok {
			return fastCall{}, false
		}
	}
	caps, ok := frame.Members(meta[mcp.MetaKeyClientCapabilities])
	if !ok {
		return fastCall{}, false
	}
	if s.refusedCapability(caps) != "" {
		// withCaps would strip it: not the client's bytes upstream.
		return fastCall{}, false
	}
	return s.laneCall(f)
}

// laneCall: f, a tools/call as frame.Read read it, is one both HTTP lanes
// may relay as far as its body goes: read alike, with the arguments the
// client sent, to a tool that passes through (fastCallOf) and binds no
// argument to a header.
func (s *Server) laneCall(f frame.Frame) (fastCall, bool) {
	if !f.Alike {
		return fastCall{}, false
	}
	// The SDK path sends {} for absent arguments. (f is Alike: the whole
	// request read strictly, so every value in it does, and one whose text
	// starts with "{" is an object.)
	if args := f.Params["arguments"]; len(args) == 0 || args[0] != '{' {
		return fastCall{}, false
	}
	if !s.plainTool(f.Tool) {
		return fastCall{}, false
	}
	return s.fastCallOf(f, f.Tool)
}

// refusedCapability names a capability in caps (a request's declared
// client capabilities) that the policy does not relay, or "".
func (s *Server) refusedCapability(caps map[string]json.RawMessage) string {
	ur := s.pol().UpstreamRequests
	for k, v := range caps {
		for kind := range policy.RequestKinds {
			if strings.EqualFold(k, string(kind)) && !ur.Allows(kind) {
				return k
			}
		}
		// URL-mode elicitation refused alone: withCaps takes "url" out of
		// the client's elicitation capability.
		if strings.EqualFold(k, string(policy.KindElicitation)) && !ur.Allows(policy.KindURLElicitation) && bytes.Contains(bytes.ToLower(v), []byte(`"url"`)) {
			return k
		}
	}
	return ""
}

// plainTool: the upstream's definition binds no argument to a header
// (x-mcp-header), which the SDK client would have to send and the SDK
// handler check.
func (s *Server) plainTool(name string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	r, ok := s.registered[name]
	return ok && !strings.Contains(r.def, "x-mcp-header")
}

// forwardHTTP sends body upstream with the headers the SDK client would
// send (none of the client's: not its credentials, not a session) and
// relays the answer.
func (s *Server) forwardHTTP(w http.ResponseWriter, r *http.Request, body []byte, c laneRequest) {
	start := time.Now()
	err := s.relayHTTP(w, r, body, c)
	if s.metrics != nil {
		s.metrics.Upstream(time.Since(start), err)
	}
	if err != nil {
		s.log.Debug("proxy: fast lane request failed", "method", c.method, "tool", c.name, "err", err)
	}
}

// postUpstream posts body to the upstream, under ctx (the client
// request's or one inside it), with the headers the SDK client would send
// for it, and nothing of the client's.
func (s *Server) postUpstream(ctx context.Context, body []byte, c laneRequest) (*http.Response, error) {
	up := s.httpUp
	if c.st != nil {
		up = c.st.up
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, up.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.st != nil {
		// Its session's, as the SDK client sends them on 2025-11-25.
		req.Header.Set("Mcp-Protocol-Version", legacyProtocol)
		if c.st.session != "" {
			req.Header.Set("Mcp-Session-Id", c.st.session)
		}
	} else {
		req.Header.Set("Mcp-Protocol-Version", modernProtocol)
		req.Header.Set("Mcp-Method", c.method)
		if c.name != "" {
			req.Header.Set("Mcp-Name", c.name)
		}
	}
	return up.client.Do(req)
}

func (s *Server) relayHTTP(w http.ResponseWriter, r *http.Request, body []byte, c laneRequest) error {
	// stop ends the upstream request: relayEvents waits a moment for the
	// end of a stream it has read the answer from (drainRest).
	ctx, stop := context.WithCancel(r.Context())
	defer stop()
	// fail answers the call with an error of the proxy's.
	fail := func(msg string, err error) error {
		w.Header().Set("Content-Type", "application/json")
		w.Write(fastErrorBody(c.id, msg))
		return err
	}
	resp, err := s.postUpstream(ctx, body, c)
	if err != nil {
		return fail("mcpsafe proxy: the upstream did not answer", err)
	}
	defer resp.Body.Close()
	ct := resp.Header.Get("Content-Type")
	mt, _ := mediaType(ct)
	if resp.StatusCode != http.StatusOK {
		// A JSON-RPC error for this call is the upstream's answer, as the
		// SDK client would read it; anything else says only that it failed.
		failed := fmt.Errorf("upstream answered HTTP %d", resp.StatusCode)
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		f := frame.Read(msg)
		if marked, err := s.finalFor(f, c.upID()); mt == "application/json" && err == nil && marked == nil && bytes.Contains(msg, []byte(`"error"`)) {
			w.Header().Set("Content-Type", "application/json")
			if c.method != "tools/call" {
				w.WriteHeader(resp.StatusCode) // relayed as it came
			}
			w.Write(c.st.restore(msg, f))
			return failed
		}
		return fail("mcpsafe proxy: the "+failed.Error(), failed)
	}
	switch mt {
	case "application/json":
		lb := getLaneBuffers(nil)
		defer lb.put()
		msg, err := lb.readAll(resp.Body)
		if err != nil {
			return fail("mcpsafe proxy: the upstream's answer did not arrive whole; the call may have run", err)
		}
		f := frame.Read(msg)
		marked, err := s.finalFor(f, c.upID())
		if err != nil {
			return fail(err.Error(), err)
		}
		if marked != nil {
			msg, f = marked, frame.Read(marked)
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Cache-Control", "no-cache, no-transform")
		_, err = w.Write(c.st.restore(msg, f))
		return err
	case "text/event-stream":
		return s.relayEvents(w, resp.Body, ct, c, stop)
	}
	return fail("mcpsafe proxy: the upstream answered in an unknown content type", fmt.Errorf("upstream content type %q", ct))
}

// relayEvents copies the upstream's event stream, one event at a time
// and flushed, until the call's response. Notifications pass; the upstream
// asking the client something in-stream (not part of 2026-07-28) or
// answering another id does not. Each line is read once into the event
// being gathered (pooled buffers, laneBuffers), and each message once
// (frame.Read), that reading also serving finalFor.
func (s *Server) relayEvents(w http.ResponseWriter, body io.Reader, ct string, c laneRequest, stop func()) error {
	up := c.upID()
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// fail ends the stream with an error response to the call.
	fail := func(msg string, err error) error {
		writeEvent(w, fastErrorBody(c.id, msg))
		rc.Flush()
		return err
	}
	lb := getLaneBuffers(body)
	defer lb.put()
	br := lb.br
	event, data := lb.event[:0], lb.data[:0]
	defer func() { lb.event, lb.data = event, data }()
	for {
		start := len(event)
		var err error
		event, err = readLine(br, event)
		if err != nil {
			// The stream ended before the response: fail the call, as the
			// SDK path would.
			return fail("mcpsafe proxy: the upstream's stream ended before it answered; the call may have run", fmt.Errorf("upstream stream ended: %w", err))
		}
		line := event[start:]
		if i := bytes.IndexByte(line, '\r'); i >= 0 && i != len(line)-2 {
			// A lone CR ends a line for the client's SSE parser and not
			// for this one: the two would read different events.
			return fail("mcpsafe proxy: the upstream's event stream has a carriage return inside a line; refused, the call may have run", errors.New("upstream event stream: a lone carriage return"))
		}
		trimmed := bytes.TrimRight(line, "\r\n")
		if !plainEventLine(trimmed) {
			// A byte-order mark (which a WHATWG parser drops at the start
			// of the stream, and others do not), a field without a colon
			// or a field nobody defines: clients may read a message here
			// that this reader does not.
			return fail("mcpsafe proxy: the upstream's event stream has a line that clients may read differently (a byte-order mark, or a field other than data, event, id and retry); refused, the call may have run", errors.New("upstream event stream: a line read differently by different parsers"))
		}
		if len(trimmed) > 0 {
			if d, ok := bytes.CutPrefix(trimmed, []byte("data:")); ok {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
			}
			continue
		}
		// End of an event: out and msg are read before the buffers are
		// reused for the next one.
		msg := data
		out := event
		event, data = event[:0], data[:0]
		if len(msg) == 0 {
			// No upstream event ids (nor retry) for the SDK handler's session.
			if c.st == nil {
				if _, err := w.Write(out); err != nil {
					return err
				}
			}
			continue
		}
		// Read strictly (as every parser reads it alike) with exactly the
		// members of its kind: a notification passes, this call's response
		// ends the stream, a request or another id's response is dropped;
		// a message that reads differently to different parsers (it might
		// be this call's response to one of them) fails the call.
		f := frame.Read(msg)
		switch {
		case !f.Alike:
			return fail("mcpsafe proxy: the upstream's answer cannot be read the same way by every JSON parser; refused, the call may have run", errors.New("upstream event: an ambiguous message"))
		case f.Kind == frame.Notification:
			if c.st != nil {
				if !c.st.admit(f) {
					continue
				}
				out = c.st.event(out[:0], msg, f)
			}
			if _, err := w.Write(out); err != nil {
				return err
			}
			rc.Flush()
		case f.Kind == frame.Response && f.ID == up:
			marked, err := s.finalFor(f, up)
			if err != nil {
				return fail(err.Error(), err)
			}
			if marked != nil {
				msg, f = marked, frame.Read(marked)
				out = fmt.Appendf(out[:0], "event: message\ndata: %s\n\n", marked)
			}
			if c.st != nil {
				out = c.st.event(out[:0], msg, f)
			}
			if _, err := w.Write(out); err != nil {
				return err
			}
			rc.Flush()
			drainRest(br, stop)
			return nil
		case f.Kind == frame.Request && c.st != nil:
			c.st.answer(context.Background(), f)
		default:
			s.log.Debug("proxy: fast lane dropped an upstream message that is not this call's")
		}
	}
}

// plainEventLine: an event-stream line (without its line end) that every
// SSE parser reads alike: empty, a comment, or one of the fields data,
// event, id and retry, spelt exactly, with its colon.
func plainEventLine(line []byte) bool {
	if len(line) == 0 || line[0] == ':' {
		return true
	}
	field, _, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return false
	}
	switch string(field) {
	case "data", "event", "id", "retry":
		return true
	}
	return false
}

// finalFor checks the upstream's response msg to the call id, f as
// frame.Read read it, as forward would: an input_required result asking
// for a kind the policy refuses, or with an elicitation id of the gate's,
// is refused, and one that asks the person something (an elicitation) is
// relayed as forward relays it, marked as the upstream's (askAs): marked
// is then the response to send in place of msg. A result that asks for
// nothing (no inputRequests, and resultType absent or "complete") is
// relayed unread, as forward, reading the same members, passes it
// unchanged; so is one that asks only for sampling or roots the policy
// relays.
func (s *Server) finalFor(f frame.Frame, id string) (marked []byte, _ error) {
	if !f.Alike || f.Kind != frame.Response || f.ID != id {
		// Not a response read alike by every parser (a request such as
		// roots/list carrying the call's id is one to the client; an
		// input request whose "method" and "Method" differ, or an
		// "InputRequests" that only case-insensitive clients read, is not
		// read alike).
		return nil, errors.New("mcpsafe proxy: the upstream's answer could not be read as a response to this call")
	}
	raw, ok := f.Top["result"]
	if !ok {
		return nil, nil // an error: relayed as forward relays it
	}
	// The result's members, spelt exactly: the frame is Alike, so no
	// member equal to resultType or inputRequests under case folding is
	// spelt otherwise, and none is there twice.
	rt, hasType := f.Result["resultType"]
	_, hasAsks := f.Result["inputRequests"]
	if !hasAsks && (!hasType || string(rt) == `"complete"`) {
		return nil, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("mcpsafe proxy: the upstream's answer could not be read: %v", err)
	}
	asks, err := s.screenAsks(res.InputRequests)
	if err != nil {
		return nil, err
	}
	elicits := false
	for _, a := range asks {
		_, ok := a.(*mcp.ElicitParams)
		elicits = elicits || ok
	}
	if !elicits {
		return nil, nil
	}
	res.InputRequests = asks
	b, err := json.Marshal(&res)
	if err != nil {
		return nil, fmt.Errorf("mcpsafe proxy: the upstream's answer could not be relayed: %v", err)
	}
	return []byte(`{"jsonrpc":"2.0","id":` + f.ID + `,"result":` + string(b) + `}`), nil
}

// codeMethodNotFound is JSON-RPC's error code for a method not found.
const codeMethodNotFound = -32601

// errorBody is the JSON-RPC error response to id (raw JSON).
func errorBody(id string, code int, msg string) []byte {
	m, _ := json.Marshal(msg)
	return []byte(`{"jsonrpc":"2.0","id":` + id + `,"error":{"code":` + strconv.Itoa(code) + `,"message":` + string(m) + `}}`)
}

// fastErrorBody is a lane's own error response to a call, id: JSON-RPC's
// internal error.
func fastErrorBody(id, msg string) []byte {
	return errorBody(id, -32603, msg)
}

func writeEvent(w io.Writer, msg []byte) {
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
}

// relayUnknownHTTP relays a request or notification of a method the proxy
// does not know, as unknownMethod decides (unknown_methods.go). It reports
// whether it answered; the SDK handler answers the rest.
func (s *Server) relayUnknownHTTP(w http.ResponseWriter, r *http.Request, body []byte, f frame.Frame) bool {
	if v := r.Header.Values("Mcp-Method"); len(v) != 1 || v[0] != f.Method {
		return false // the SDK handler refuses the mismatch
	}
	why, ok := s.unknownMethod(f, true)
	if !ok {
		return false
	}
	if why != "" {
		if f.ID == "" {
			http.Error(w, why, http.StatusBadRequest)
			return true
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound) // as the SDK handler answers a method it does not know
		w.Write(errorBody(f.ID, codeMethodNotFound, why))
		return true
	}
	s.httpUp.unknown.Add(1)
	c := laneRequest{id: f.ID, method: f.Method}
	if f.ID != "" {
		s.forwardHTTP(w, r, body, c)
		return true
	}
	resp, err := s.postUpstream(r.Context(), body, c)
	if err != nil {
		http.Error(w, "mcpsafe proxy: the upstream did not answer", http.StatusBadGateway)
		return true
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		http.Error(w, fmt.Sprintf("mcpsafe proxy: the upstream answered HTTP %d", resp.StatusCode), http.StatusBadGateway)
		return true
	}
	w.WriteHeader(http.StatusAccepted)
	return true
}
