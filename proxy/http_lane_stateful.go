package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The HTTP lane for stateful sessions: a client of the 2025-11-25
// generation, in a session of the SDK's stateful handler, calls a tool
// that passes through; the lane posts its bytes (the id alone rewritten)
// to the upstream session the SDK path would use for it (legFor: the
// legacy leg, or the primary leg of an upstream that speaks only
// 2025-11-25), and relays the answer with relayHTTP/relayEvents, the id
// restored. As on the stateless lane, anything it is not sure of goes to
// the SDK handler (next), which answers as before.
//
// What makes the raw relay safe where the SDK path would do more:
//   - the session is one the lane saw opened, by the same authenticated
//     user as this request (the SDK handler's own hijacking check), on
//     2025-11-25, and its client declared none of elicitation, sampling and
//     roots: nothing the upstream may ask in-call can be for it, so every
//     request in the call's stream is answered, to the upstream, with the
//     refusal the SDK path gives such a client (forClient);
//   - the upstream session is shared by every 2025-11-25 client and the
//     proxy's own SDK client, so the client's id becomes a reserved lane id
//     (sdkIDPrefix, which no client id on the lane carries: fastCallOf) and
//     only the response with that id ends the call; its progress token
//     becomes that lane id too (as the SDK path gives each call a token of
//     the proxy's), and the client's is put back into its progress;
//   - log messages pass at or above the level the session set (none
//     without one, as the SDK's ServerSession.Log), progress only under the
//     call's lane token; list changes reach the proxy's own handlers.
//
// The SDK's idle timer of a session runs on while the lane serves it
// (only requests through the SDK handler pause and reset it): a session
// is taken only within half its idle time of its last request there.

// laneIDPrefix is the id space of stateful lane calls upstream.
const laneIDPrefix = sdkIDPrefix + "lane-"

// statefulLane is the lane's state in one HTTPFastLane handler: the
// sessions it may serve.
type statefulLane struct {
	g       *Gateway
	next    http.Handler
	maxBody int64
	idle    time.Duration
	// sessions: downstream session id -> *laneSession, for sessions of
	// 2025-11-25 that declared no capability the upstream could use.
	sessions sync.Map
}

// laneSession is a downstream session the lane may serve.
type laneSession struct {
	ss   *mcp.ServerSession
	user string                  // the authenticated user who opened it; "" without auth
	caps *mcp.ClientCapabilities // what its client declared at initialize

	mu       sync.Mutex
	lastSDK  time.Time                // end of its last POST through the SDK handler
	inFlight map[string]*statefulCall // its lane calls by client id
}

// statefulUp is the lane's part of httpLane: the legacy leg's endpoint
// and the lane ids.
type statefulUp struct {
	legacyOnce sync.Once
	legacy     *httpLane
	seq        atomic.Uint64
	calls      atomic.Int64 // calls that took the stateful lane, for tests
}

// statefulCall is one call on the lane: where it goes and what came of it.
type statefulCall struct {
	up      *httpLane
	session string // the upstream session's id ("" for a stateless upstream)
	id      string // the client's id, as JSON
	upID    string // the reserved lane id, as JSON
	token   string // the client's progress token (raw JSON), or ""; upstream, upID stands for it
	ls      *laneSession
	s       *Server
	leg     *mcp.ClientSession
	// end, set while the call is in flight, ends it for the session
	// (done): at its response, or when the call failed.
	end func()
}

// done ends the call for its session once it is answered, as the SDK
// path ends it before it writes the response: later calls of other
// sessions must not find it in flight (route) while the lane reads what
// follows the response.
func (c *statefulCall) done() {
	if c.end != nil {
		c.end()
		c.end = nil
	}
}

// wrapStateful puts the stateful lane in front of next, unless h keeps no
// sessions.
func (g *Gateway) wrapStateful(next http.Handler, h mcphttp.HTTP, maxBody int64) http.Handler {
	if h.Stateless {
		return next
	}
	idle := h.SessionIdle
	if idle <= 0 {
		idle = mcphttp.DefaultSessionIdle
	}
	return &statefulLane{g: g, next: next, maxBody: maxBody, idle: idle}
}

func (l *statefulLane) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ids := r.Header.Values("Mcp-Session-Id")
	if r.Method == http.MethodPost && len(ids) == 0 && r.Header.Get("Mcp-Protocol-Version") < modernProtocol {
		// Perhaps an initialize (which carries no version header), to
		// the SDK handler's sessions.
		l.next.ServeHTTP(&headWriter{ResponseWriter: w, head: func(int) { l.opened(w.Header().Get("Mcp-Session-Id"), r) }}, r)
		return
	}
	if r.Method != http.MethodPost || len(ids) != 1 {
		l.next.ServeHTTP(w, r)
		return
	}
	v, _ := l.sessions.Load(ids[0])
	ls, _ := v.(*laneSession)
	if ls == nil || !laneHeaders(r, legacyProtocol) || ls.user != userOf(r) || !ls.fresh(l.idle) {
		l.sdk(w, r, ls)
		return
	}
	body, ok := readLaneBody(w, r, l.maxBody)
	if !ok {
		return
	}
	f := frame.Read(body)
	switch {
	case f.Kind == frame.Request && f.Method == "tools/call":
		if l.call(w, r, body, f, ls) {
			return
		}
	case f.Kind == frame.Notification && f.Method == "notifications/cancelled":
		if l.cancel(w, r, body, f, ls) {
			return
		}
	}
	l.sdk(w, r, ls)
}

// sdk hands r to the SDK handler, noting when the SDK accepts a lane
// session's POST (its answer's head goes out with a 2xx status): the SDK
// pauses the session's idle timer while it serves the POST and restarts it
// at the end, so the time of the head is never later than the timer's
// restart, and it is noted before the client can read the answer (its next
// call finds the session fresh). A POST the SDK refuses (another user,
// wrong headers) touches no timer, and no one keeps a session fresh by
// sending them.
func (l *statefulLane) sdk(w http.ResponseWriter, r *http.Request, ls *laneSession) {
	if ls == nil || r.Method != http.MethodPost {
		l.next.ServeHTTP(w, r)
		return
	}
	l.next.ServeHTTP(&headWriter{ResponseWriter: w, head: func(code int) {
		if code >= 200 && code < 300 {
			ls.sawSDK()
		}
	}}, r)
}

func (ls *laneSession) sawSDK() {
	ls.mu.Lock()
	ls.lastSDK = time.Now()
	ls.mu.Unlock()
}

func (ls *laneSession) fresh(idle time.Duration) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return time.Since(ls.lastSDK) < idle/2
}

// opened records the session the SDK handler opened for r, when the lane
// may serve it: initialized on 2025-11-25.
func (l *statefulLane) opened(id string, r *http.Request) {
	if id == "" {
		return
	}
	for ss := range l.g.MCP.Sessions() {
		if ss.ID() != id {
			continue
		}
		p := ss.InitializeParams()
		if p == nil || p.ProtocolVersion != legacyProtocol {
			return
		}
		ls := &laneSession{ss: ss, user: userOf(r), caps: p.Capabilities, lastSDK: time.Now(), inFlight: map[string]*statefulCall{}}
		if _, had := l.sessions.LoadOrStore(id, ls); !had {
			go func() {
				ss.Wait()
				l.sessions.Delete(id)
			}()
		}
		return
	}
}

// headWriter is an SDK handler's response that the lane watches: head
// runs once, with the status, as the headers go out (before the client can
// read the answer; for a POST that opens a session, before the client can
// use it). The SDK writes through http.ResponseController, which finds the
// writer beneath through Unwrap.
type headWriter struct {
	http.ResponseWriter
	head func(code int)
	seen bool
}

func (o *headWriter) sent(code int) {
	if !o.seen {
		o.seen = true
		o.head(code)
	}
}

func (o *headWriter) WriteHeader(code int) { o.sent(code); o.ResponseWriter.WriteHeader(code) }

func (o *headWriter) Write(b []byte) (int, error) {
	o.sent(http.StatusOK)
	return o.ResponseWriter.Write(b)
}

func (o *headWriter) FlushError() error {
	o.sent(http.StatusOK)
	return http.NewResponseController(o.ResponseWriter).Flush()
}

func (o *headWriter) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// userOf is the authenticated user of r, as the SDK handler keys sessions.
func userOf(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		return ti.UserID
	}
	return ""
}

// call relays f, the body's tools/call, on the lane, and reports whether
// it did.
func (l *statefulLane) call(w http.ResponseWriter, r *http.Request, body []byte, f frame.Frame, ls *laneSession) bool {
	_, s := l.g.route(f.Tool)
	if s == nil {
		return false
	}
	if s.mayAsk(ls.caps) {
		return false // the SDK path relays what the upstream asks in-call
	}
	c, ok := s.statefulCall(f)
	if !ok {
		return false
	}
	c.ls = ls
	up, ok := c.upstreamBody(body, f)
	if !ok {
		return false
	}
	ls.mu.Lock()
	_, dup := ls.inFlight[f.ID]
	if !dup {
		ls.inFlight[f.ID] = c
	}
	ls.mu.Unlock()
	if dup {
		return false // the SDK path answers as it would
	}
	untrack := s.track(r.Context(), ls.ss)
	c.end = func() {
		untrack()
		ls.mu.Lock()
		delete(ls.inFlight, f.ID)
		ls.mu.Unlock()
	}
	defer c.done()
	var tok any
	if c.token != "" && json.Unmarshal([]byte(c.token), &tok) == nil {
		// Progress the upstream sends apart from the call's stream (on its
		// standalone one) reaches the SDK client's onProgress: route the
		// lane token there, to the session with the client's token, as the
		// SDK path routes its own.
		key := c.upID[1 : len(c.upID)-1]
		s.progress.Store(key, progressTarget{session: ls.ss, ctx: r.Context(), token: tok})
		defer time.AfterFunc(progressGrace, func() { s.progress.Delete(key) })
	}
	s.httpUp.st.calls.Add(1)
	s.forwardHTTP(w, r, up, laneRequest{id: f.ID, method: "tools/call", name: f.Tool, st: c})
	if c.end != nil && r.Context().Err() != nil {
		// The client left before the answer: cancel upstream, as the SDK
		// client does when the SDK handler cancels the call
		// (PropagateRequestCancellation).
		c.post(context.WithoutCancel(r.Context()), []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+c.upID+`}}`))
	}
	return true
}

// upstreamBody is body, the call read as f, as it goes upstream: the
// client's id and progress token replaced by the call's lane id, so that
// neither can meet another client's (or the SDK path's mcpsafe-N tokens) in
// the upstream session they share. Only those members' bytes change.
func (c *statefulCall) upstreamBody(body []byte, f frame.Frame) ([]byte, bool) {
	up, ok := frame.Splice(make([]byte, 0, len(body)+2*len(c.upID)), body, f.Top["id"], []byte(c.upID))
	if !ok || c.token == "" {
		return up, ok
	}
	g := frame.Read(up) // the splice kept every member's bytes but the id's
	if !g.Alike || g.Progress != c.token {
		return nil, false
	}
	return frame.Splice(make([]byte, 0, len(up)+len(c.upID)), up, g.Meta["progressToken"], []byte(c.upID))
}

// statefulCall: f (read by frame.Read) is a call the SDK path would pass
// through to s's upstream session of the 2025-11-25 generation, unchanged
// but for its id and progress token, and the lane can post to that
// session.
func (s *Server) statefulCall(f frame.Frame) (*statefulCall, bool) {
	if s.httpUp == nil || s.member.prefix != "" || s.Upstream == nil {
		return nil, false
	}
	for k := range f.Meta {
		// A 2025-11-25 leg gets none of the client's identity,
		// capabilities and protocol version (withCaps strips them), and a
		// progress token of the proxy's (upstreamBody).
		if k != "progressToken" {
			return nil, false
		}
	}
	fc, ok := s.laneCall(f)
	if !ok {
		return nil, false
	}
	leg, up := s.statefulLeg()
	if leg == nil {
		return nil, false
	}
	seq := s.httpUp.st.seq.Add(1)
	return &statefulCall{up: up, session: leg.ID(), leg: leg, s: s, id: f.ID, token: fc.token,
		upID: `"` + laneIDPrefix + strconv.FormatUint(seq, 10) + `"`}, true
}

// statefulLeg is the upstream session a 2025-11-25 client's call goes to
// (legFor), with the endpoint that serves it, when it is connected, of
// that generation, over streamable HTTP without the proxy's credentials.
func (s *Server) statefulLeg() (*mcp.ClientSession, *httpLane) {
	init := s.Upstream.InitializeResult()
	if init == nil {
		return nil, nil
	}
	if init.ProtocolVersion < modernProtocol {
		if init.ProtocolVersion != legacyProtocol {
			return nil, nil
		}
		return s.Upstream, s.httpUp
	}
	leg := s.relay.legacyUp.Load()
	if leg == nil {
		return nil, nil // not yet connected: the SDK path connects it
	}
	st := &s.httpUp.st
	st.legacyOnce.Do(func() { st.legacy = newHTTPLane(s.relay.legacyTransport) })
	if st.legacy == nil || leg.InitializeResult().ProtocolVersion != legacyProtocol {
		return nil, nil
	}
	return leg, st.legacy
}

// cancel forwards a client's cancellation of one of its lane calls,
// f read from body, with the call's lane id, and reports whether it did.
func (l *statefulLane) cancel(w http.ResponseWriter, r *http.Request, body []byte, f frame.Frame, ls *laneSession) bool {
	if !f.Alike {
		return false
	}
	req := f.Params["requestId"]
	ls.mu.Lock()
	c := ls.inFlight[string(bytes.TrimSpace(req))]
	ls.mu.Unlock()
	if c == nil {
		return false
	}
	up, ok := frame.Splice(nil, body, req, []byte(c.upID))
	if !ok {
		return false
	}
	c.post(r.Context(), up)
	w.WriteHeader(http.StatusAccepted)
	return true
}

// post sends msg, a notification or a response of the proxy's, to the
// upstream session, and reads the answer (202) away.
func (c *statefulCall) post(ctx context.Context, msg []byte) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.s.postUpstream(ctx, msg, laneRequest{st: c})
	if err != nil {
		c.s.log.Debug("proxy: stateful lane: posting to the upstream failed", "err", err)
		return
	}
	lb := getLaneBuffers(resp.Body)
	drainRest(lb.br, cancel)
	lb.put()
	resp.Body.Close()
}

// restore is msg, the upstream's response to the call read as f, with
// the client's id; msg itself off the stateful lane (c nil).
func (c *statefulCall) restore(msg []byte, f frame.Frame) []byte {
	if c == nil {
		return msg
	}
	c.done()
	out, _ := frame.Splice(nil, msg, f.Top["id"], []byte(c.id))
	return out
}

// event appends to dst msg, an upstream message of the call's stream read
// as f, as an event of the lane's own (no upstream event id: the client's
// session is the SDK handler's): the response with the client's id, its
// progress with the client's token, any other notification as it came.
func (c *statefulCall) event(dst, msg []byte, f frame.Frame) []byte {
	dst = append(dst, "event: message\ndata: "...)
	var part, with []byte
	switch {
	case f.Kind == frame.Response:
		c.done()
		part, with = f.Top["id"], []byte(c.id)
	case f.Method == "notifications/progress":
		part, with = f.Params["progressToken"], []byte(c.token)
	}
	start := len(dst)
	if part != nil {
		dst, _ = frame.Splice(dst, msg, part, with)
	} else {
		dst = append(dst, msg...)
	}
	if msg = dst[start:]; bytes.IndexByte(msg, '\n') >= 0 {
		// Whitespace between JSON tokens: each line its own data line.
		msg = bytes.Clone(msg)
		dst = dst[:start]
		dst = append(dst, bytes.ReplaceAll(msg, []byte("\n"), []byte("\ndata: "))...)
	}
	return append(dst, "\n\n"...)
}

// admit decides an upstream notification in the call's stream, f: true
// relays it to the client.
func (c *statefulCall) admit(f frame.Frame) bool {
	switch f.Method {
	case "notifications/progress":
		return c.token != "" && f.Progress == c.upID
	case "notifications/message":
		var level mcp.LoggingLevel
		if json.Unmarshal(f.Params["level"], &level) != nil {
			return false // the SDK client would not read it
		}
		set, ok := c.s.levels().of(c.ls.ss)
		return ok && levelRank(level) >= levelRank(set)
	case "notifications/tools/list_changed":
		c.s.requestSync()
	case "notifications/prompts/list_changed":
		c.s.promptsChanged(c.leg)
	case "notifications/resources/list_changed":
		c.s.resourcesChanged(c.leg)
	case "notifications/resources/updated":
		var p mcp.ResourceUpdatedNotificationParams
		if json.Unmarshal(f.Top["params"], &p) == nil {
			c.s.onResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationRequest{Params: &p})
		}
	}
	// Anything else the SDK client handles itself or drops.
	return false
}

// levelOrder is the log levels in the SDK's order.
var levelOrder = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// levelRank orders log levels as the SDK does (an unknown one as debug).
func levelRank(l mcp.LoggingLevel) int {
	return max(slices.Index(levelOrder, l), 0)
}

// answer answers a request the upstream sent in the call's stream, f, to
// the upstream, as the SDK path answers it for a client that declared
// none of elicitation, sampling and roots (forClient), in the same
// session.
func (c *statefulCall) answer(ctx context.Context, f frame.Frame) {
	var msg []byte
	kind, asks := askKinds[f.Method]
	switch {
	case f.Method == "ping":
		msg = []byte(`{"jsonrpc":"2.0","id":` + f.ID + `,"result":{}}`)
	case asks:
		msg = errorBody(f.ID, 0, refusal(c.s.pol().UpstreamRequests, kind).Error())
	default:
		msg = errorBody(f.ID, codeMethodNotFound, "method not found")
	}
	c.s.log.Debug("proxy: stateful lane answered an upstream request in the call's stream", "method", f.Method)
	c.post(ctx, msg)
}

// mayAsk: the upstream may ask a client that declared caps something
// in-call through s (a kind it declared and s's policy relays).
func (s *Server) mayAsk(caps *mcp.ClientCapabilities) bool {
	ur := s.pol().UpstreamRequests
	for k := range policy.RequestKinds {
		if declared(caps, k) && ur.Allows(k) {
			return true
		}
	}
	return false
}

func refusal(ur policy.UpstreamRequests, kind policy.RequestKind) error {
	if !ur.Allows(kind) {
		return errPolicyRefuses(kind)
	}
	return errUndeclared(kind)
}
