package proxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsafe/mcpsafe/proxy/policy"
)

// The relay: everything between the downstream client and the upstream
// server that is not a gated tool call passes through, in both directions.
//
// The proxy holds shared upstream sessions ("legs"): the one made at
// startup, in the generation of the one client of a proxy served over
// stdio (Config.ClientProtocol) or else the newest the upstream speaks,
// and, for a proxy with clients of both generations (served over HTTP), a
// second one pinned to the 2025-11-25 protocol for downstream clients of
// that generation (Config.LegacyUpstream), whose upstream may ask them
// things in the middle of a call.
// A request the upstream sends during a call goes to the downstream client
// whose call is in flight; when calls of more than one downstream session
// are in flight, the proxy cannot tell whose it is and refuses it.

const modernProtocol = "2026-07-28"

// legacyProtocol is the protocol of an upstream session for clients of
// the generations before 2026-07-28 (the last one with a handshake).
const legacyProtocol = "2025-11-25"

// versioned is what every SDK server request offers about its caller.
type versioned interface {
	ProtocolVersion() string
	ClientCapabilities() *mcp.ClientCapabilities
}

// downCall is one downstream request in flight.
type downCall struct {
	ss  *mcp.ServerSession
	ctx context.Context // carries the request, so that relayed messages ride on its stream
}

type relayState struct {
	callsMu sync.Mutex
	calls   map[uint64]downCall
	callSeq uint64

	legacyTransport mcp.Transport
	legacyOnce      sync.Once
	legacyErr       error
	legacyUp        atomic.Pointer[mcp.ClientSession] // the 2025-11-25 leg, once connected

	subsMu sync.Mutex
	subs   map[string]map[*mcp.ServerSession]bool // resource URI -> subscribed downstream sessions
}

// track records a downstream request as in flight until the returned
// function runs.
func (s *Server) track(ctx context.Context, ss *mcp.ServerSession) func() {
	if ss == nil {
		return func() {}
	}
	s.relay.callsMu.Lock()
	defer s.relay.callsMu.Unlock()
	s.relay.callSeq++
	id := s.relay.callSeq
	s.relay.calls[id] = downCall{ss: ss, ctx: ctx}
	return func() {
		s.relay.callsMu.Lock()
		delete(s.relay.calls, id)
		s.relay.callsMu.Unlock()
	}
}

var errAmbiguous = errors.New("mcpsafe proxy: the upstream's request cannot be matched to one downstream client (calls of several are in flight, or none is connected)")

// route finds the downstream client an upstream request or notification
// is for: the one session with requests in flight (its newest request's
// context), else the only connected session.
func (s *Server) route() (downCall, error) {
	s.relay.callsMu.Lock()
	var found downCall
	var newest uint64
	for id, c := range s.relay.calls {
		if found.ss != nil && c.ss != found.ss {
			s.relay.callsMu.Unlock()
			return downCall{}, errAmbiguous
		}
		if id >= newest {
			newest, found = id, c
		}
	}
	s.relay.callsMu.Unlock()
	if found.ss != nil {
		return found, nil
	}
	sessions := slices.Collect(s.MCP.Sessions())
	if len(sessions) != 1 {
		return downCall{}, errAmbiguous
	}
	return downCall{ss: sessions[0], ctx: context.Background()}, nil
}

// clientOptions are the options of every upstream leg: it relays what the
// upstream sends, and asks for input only in the ways the policy allows.
// Multi round-trip results come back to the proxy unfulfilled, so that
// they can be relayed as they are.
func (s *Server) clientOptions() *mcp.ClientOptions {
	caps := &mcp.ClientCapabilities{}
	opts := &mcp.ClientOptions{
		Capabilities:                caps,
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.requestSync() },
		ProgressNotificationHandler: s.onProgress,
		LoggingMessageHandler:       s.onLog,
		ResourceUpdatedHandler:      s.onResourceUpdated,
		PromptListChangedHandler:    func(_ context.Context, r *mcp.PromptListChangedRequest) { s.promptsChanged(r.Session) },
		ResourceListChangedHandler:  func(_ context.Context, r *mcp.ResourceListChangedRequest) { s.resourcesChanged(r.Session) },
		MultiRoundTrip:              &mcp.MultiRoundTripOptions{Disabled: true},
		Logger:                      sdkLogger(s.log),
	}
	ur := s.pol().UpstreamRequests
	if ur.Allows(policy.KindElicitation) {
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
		if ur.Allows(policy.KindURLElicitation) {
			caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
		}
		// Never called: relayClientRequests answers first. It makes the
		// SDK client accept elicitation requests at all.
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("mcpsafe proxy: elicitation not relayed")
		}
	}
	if ur.Allows(policy.KindSampling) {
		opts.CreateMessageHandler = s.onSample
	}
	if ur.Allows(policy.KindRoots) {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	return opts
}

// connectLeg connects one upstream leg; roots requests are relayed by a
// receiving middleware, since the SDK client answers them itself.
func (s *Server) connectLeg(ctx context.Context, t mcp.Transport, opts *mcp.ClientSessionOptions) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpsafe-proxy", Version: Version}, s.clientOptions())
	client.AddReceivingMiddleware(s.relayClientRequests, s.takeBarriers)
	t, order := s.withOrder(t)
	cs, err := client.Connect(ctx, t, opts)
	if err == nil && order != nil {
		s.orders.byLeg.Store(cs, order)
	}
	return cs, err
}

// legFor picks the upstream session for a downstream request: the legacy
// leg for clients of the 2025-11-25 generation when there is one.
func (s *Server) legFor(ctx context.Context, req mcp.Request) (*mcp.ClientSession, error) {
	v, ok := req.(versioned)
	if !ok || s.relay.legacyTransport == nil || v.ProtocolVersion() >= modernProtocol || s.Upstream.InitializeResult().ProtocolVersion < modernProtocol {
		return s.Upstream, nil
	}
	s.relay.legacyOnce.Do(func() {
		leg, err := s.connectLeg(context.WithoutCancel(ctx), s.relay.legacyTransport, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
		if err != nil {
			s.relay.legacyErr = fmt.Errorf("proxy: connecting the 2025-11-25 upstream leg: %w", err)
		}
		s.relay.legacyUp.Store(leg)
	})
	return s.relay.legacyUp.Load(), s.relay.legacyErr
}

// askKinds are the upstream's requests of a client, by method.
var askKinds = map[string]policy.RequestKind{
	"elicitation/create":     policy.KindElicitation,
	"sampling/createMessage": policy.KindSampling,
	"roots/list":             policy.KindRoots,
}

func declared(caps *mcp.ClientCapabilities, kind policy.RequestKind) bool {
	if caps == nil {
		return false
	}
	switch kind {
	case policy.KindElicitation:
		return caps.Elicitation != nil
	case policy.KindURLElicitation:
		return caps.Elicitation != nil && caps.Elicitation.URL != nil
	case policy.KindSampling:
		return caps.Sampling != nil
	case policy.KindRoots:
		// RootsV2 is how the SDK tells a declared "roots": {} from none.
		return caps.RootsV2 != nil || caps.Roots.ListChanged
	}
	return false
}

// forClient checks that a request of kind may go to the downstream session:
// the policy allows it and the client declared the capability.
func (s *Server) forClient(kind policy.RequestKind) (downCall, error) {
	if !s.pol().UpstreamRequests.Allows(kind) {
		return downCall{}, errPolicyRefuses(kind)
	}
	c, err := s.route()
	if err != nil {
		return downCall{}, err
	}
	var caps *mcp.ClientCapabilities
	if p := c.ss.InitializeParams(); p != nil {
		caps = p.Capabilities
	}
	if !declared(caps, kind) {
		return downCall{}, errUndeclared(kind)
	}
	return c, nil
}

func errPolicyRefuses(kind policy.RequestKind) error {
	return fmt.Errorf("mcpsafe proxy: the policy refuses the upstream's %s requests", kind)
}

func errUndeclared(kind policy.RequestKind) error {
	return fmt.Errorf("mcpsafe proxy: the downstream client did not declare the %s capability", kind)
}

func (s *Server) onSample(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	c, err := s.forClient(policy.KindSampling)
	if err != nil {
		return nil, err
	}
	return c.ss.CreateMessage(c.ctx, req.Params)
}

// relayClientRequests relays roots and elicitation requests ahead of the
// SDK client, which answers roots itself and would hold elicitation
// schemas to its own subset; the downstream client and the upstream judge
// the schema and the answer, as they would without the proxy.
func (s *Server) relayClientRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" && method != "elicitation/create" {
			return next(ctx, method, req)
		}
		p, _ := req.GetParams().(mcp.InputRequest) // *mcp.ListRootsParams or *mcp.ElicitParams
		c, err := s.forClient(inputKind(p))
		if err != nil {
			return nil, err
		}
		if p, err = s.askAs(p); err != nil {
			return nil, err
		}
		res, err := ask(c.ctx, c.ss, p)
		if err != nil {
			return nil, protocolError(err)
		}
		return res.(mcp.Result), nil
	}
}

// ask puts an upstream's input request to the downstream session ss.
func ask(ctx context.Context, ss *mcp.ServerSession, p mcp.InputRequest) (mcp.InputResponse, error) {
	switch p := p.(type) {
	case *mcp.ElicitParams:
		return ss.Elicit(ctx, p)
	case *mcp.CreateMessageParams:
		return ss.CreateMessage(ctx, p)
	case *mcp.CreateMessageWithToolsParams:
		return ss.CreateMessageWithTools(ctx, p)
	case *mcp.ListRootsParams:
		return ss.ListRoots(ctx, p)
	}
	return nil, fmt.Errorf("mcpsafe proxy: unknown input request %T", p)
}

// onLog relays a log message to the client it is for. The downstream
// session filters by the level its client set, as the upstream would.
func (s *Server) onLog(_ context.Context, req *mcp.LoggingMessageRequest) {
	c, err := s.route()
	if err == nil {
		err = c.ss.Log(context.WithoutCancel(c.ctx), req.Params)
	}
	if err != nil {
		s.log.Debug("proxy: upstream log message not relayed", "err", err)
	}
}

// subscribe and unsubscribe keep one upstream subscription per URI while
// any downstream session holds one; the SDK server fans updates out to the
// sessions that subscribed.
func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	s.relay.subsMu.Lock()
	defer s.relay.subsMu.Unlock()
	uri := req.Params.URI
	if len(s.relay.subs[uri]) == 0 {
		leg, err := s.legFor(ctx, req)
		if err != nil {
			return err
		}
		if err := leg.Subscribe(ctx, req.Params); err != nil {
			return err
		}
	}
	if s.relay.subs[uri] == nil {
		s.relay.subs[uri] = map[*mcp.ServerSession]bool{}
	}
	s.relay.subs[uri][req.Session] = true
	return nil
}

func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	s.relay.subsMu.Lock()
	defer s.relay.subsMu.Unlock()
	uri := req.Params.URI
	held := s.relay.subs[uri]
	delete(held, req.Session)
	if len(held) > 0 {
		return nil
	}
	delete(s.relay.subs, uri)
	leg, err := s.legFor(ctx, req)
	if err != nil {
		return err
	}
	return leg.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
}

func (s *Server) onResourceUpdated(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if err := s.MCP.ResourceUpdated(context.WithoutCancel(ctx), req.Params); err != nil {
		s.log.Debug("proxy: resource update not relayed", "err", err)
	}
}

// fulfill answers an upstream's multi round-trip input requests by asking
// the downstream client in-call, for clients of the 2025-11-25 generation
// behind a gated call (ungated calls get this from the SDK server).
func fulfill(ctx context.Context, ur policy.UpstreamRequests, req *mcp.CallToolRequest, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	caps := req.ClientCapabilities()
	out := mcp.InputResponseMap{}
	for id, a := range asks {
		kind := inputKind(a)
		if !ur.Allows(kind) {
			return nil, errPolicyRefuses(kind)
		}
		if !declared(caps, kind) {
			return nil, fmt.Errorf("mcpsafe proxy: the upstream asked for %s, which the client did not declare", kind)
		}
		res, err := ask(ctx, req.Session, a)
		if err != nil {
			return nil, fmt.Errorf("input request %q: %w", id, err)
		}
		out[id] = res
	}
	return out, nil
}

func inputKind(ask mcp.InputRequest) policy.RequestKind {
	switch a := ask.(type) {
	case *mcp.ElicitParams:
		if a.Mode != "" && a.Mode != "form" || a.URL != "" {
			return policy.KindURLElicitation // (a mode a client may not read as form, too)
		}
		return policy.KindElicitation
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return policy.KindSampling
	case *mcp.ListRootsParams:
		return policy.KindRoots
	}
	return policy.RequestKind(fmt.Sprintf("%T", ask))
}

// The upstream's prompts and resources are relayed (the middleware answers
// every list, get and read from the upstream), so the SDK server in front
// holds none of its own, and it sends list-changed notifications only when
// its own lists change. Replacing a placeholder that no request ever
// reaches is the public way to make it tell every session the way it
// would (2025-11-25 sessions directly, 2026-07-28 sessions on their
// subscriptions/listen streams), debounced.
const (
	changedPrompt   = "mcpsafe-list-changed"
	changedResource = "mcpsafe:list-changed"
)

func (s *Server) promptsChanged(leg *mcp.ClientSession) {
	if c := legCaps(leg); c == nil || c.Prompts == nil || !c.Prompts.ListChanged {
		return // not advertised downstream
	}
	s.MCP.AddPrompt(&mcp.Prompt{Name: changedPrompt}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return nil, errors.New("mcpsafe proxy: not a prompt")
	})
}

func (s *Server) resourcesChanged(leg *mcp.ClientSession) {
	if c := legCaps(leg); c == nil || c.Resources == nil || !c.Resources.ListChanged {
		return // not advertised downstream
	}
	s.MCP.AddResource(&mcp.Resource{URI: changedResource, Name: changedResource}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, errors.New("mcpsafe proxy: not a resource")
	})
}

func legCaps(leg *mcp.ClientSession) *mcp.ServerCapabilities {
	if init := leg.InitializeResult(); init != nil {
		return init.Capabilities
	}
	return nil
}
