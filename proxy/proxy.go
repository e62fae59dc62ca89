package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/optin"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/mcpsafe/mcpsafe/internal/tracemeta"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is reported to clients and to the upstream server.
var Version = "dev"

// Config is everything `mcpsafe proxy` takes.
type Config struct {
	// Upstream is the transport to the protected server (a command over
	// stdio, streamable HTTP, or in-memory in tests). Required.
	Upstream mcp.Transport
	// LegacyUpstream, when set, is a second transport to the same upstream
	// (a second session over HTTP, a second process for a command: see
	// CommandLeg). Downstream clients of
	// the 2025-11-25 generation then get an upstream session of their own
	// generation, in which the upstream may ask them things mid-call. Nil:
	// every client shares the upstream session.
	LegacyUpstream mcp.Transport
	// Policy is the parsed policy file; nil is the default policy.
	Policy *Policy
	// Gate configures keys, ledger, journal and channel. Its Mode and
	// AllowTokenFor must be empty: they come from the policy file, so that
	// one file says everything about what is gated and how.
	Gate   serverconf.Config
	Logger *slog.Logger
	// StartTimeout bounds the upstream's start: connect, initialize and
	// the first tools/list (0: DefaultStartTimeout). A command that never
	// speaks MCP would otherwise hang the proxy forever.
	StartTimeout time.Duration

	member *member // set by a Gateway: share its server, journal, ledger and channel
}

// DefaultStartTimeout is Config.StartTimeout's default: enough for npx to
// fetch a package on a slow network.
const DefaultStartTimeout = 60 * time.Second

// Server is a running proxy: a downstream MCP server connected to one
// upstream session.
type Server struct {
	MCP         *mcp.Server
	Gate        *mcpsafe.Gate
	Upstream    *mcp.ClientSession
	JournalPath string
	// Audience is the identity bound into every approval: the configured
	// one, or DefaultAudience of the upstream.
	Audience string

	policyP  atomic.Pointer[Policy] // swapped by a gateway reload
	conf     *serverconf.Gate
	log      *slog.Logger
	member   *member     // set when this proxy is one server of a Gateway
	checking atomic.Bool // a gateway health check is running

	syncMu     sync.Mutex // serializes tool-list syncs
	registered map[string]registered
	withheld   map[string]bool // upstream tools not shown to clients (screenTool)
	sticky     *stickiness     // see rugpull.go
	serverLine string          // names the server in every plan
	serverName string          // the server as a person knows it (personName)
	syncReq    chan struct{}
	stop       chan struct{}
	stopOnce   sync.Once
	syncDone   chan struct{}

	progress   sync.Map // upstream progress token -> progressTarget
	progressID atomic.Uint64
	logLevels  sync.Map // *mcp.ServerSession -> mcp.LoggingLevel its client set (log_level.go)

	relay  relayState
	orders orders // notifications before the answers they precede (notify_order.go)
	cont   continuations
	pipe   *UpstreamPipe // the upstream command, when the fast lane can use it
	httpUp *httpLane     // the upstream's HTTP endpoint, for the HTTP fast lane
}

type registered struct {
	gated bool
	def   string      // the upstream definition, to notice changes
	pol   *ToolPolicy // the policy entry it was registered under (a reload replaces it)

	// selfGated: not gated here because the upstream gates it
	// (trust_upstream_gate). It passes through, but never by the fast lane
	// and never as a resolver: it is no read-only tool.
	selfGated bool
	// ownsToken: approval_token is the upstream tool's own argument
	// (mcpsafe.Tool.OwnsTokenField).
	ownsToken bool
}

// progressGrace is how long progress from upstream is still relayed after
// its call returned.
const progressGrace = 5 * time.Second

type progressTarget struct {
	session *mcp.ServerSession
	ctx     context.Context // the downstream call's, so that progress rides on its stream
	token   any
}

// NewServer connects upstream, checks the policy against the upstream's
// tools and builds the downstream server. Anything doubtful is a startup
// error: a policy naming a tool upstream lacks, a resolver that is not a
// read-only upstream tool, an opt-in for a tool that is not gated and
// irreversible.
func NewServer(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.Upstream == nil {
		return nil, errors.New("proxy: no upstream transport")
	}
	if cfg.Gate.Mode != "" || len(cfg.Gate.AllowTokenFor) > 0 {
		return nil, errors.New("proxy: mode and token opt-ins belong in the policy file (mode, allow_token_for)")
	}
	pol := cfg.Policy
	if pol == nil {
		pol = &Policy{Source: "default policy"}
	}
	s := &Server{
		log: cfg.Logger, registered: map[string]registered{}, member: cfg.member,
		syncReq: make(chan struct{}, 1), stop: make(chan struct{}), syncDone: make(chan struct{}),
	}
	s.policyP.Store(pol)
	s.sticky = &stickiness{}
	if m := s.member; m != nil {
		s.sticky = m.sticky // a restarted upstream is held to what it was before
	}
	s.relay.legacyTransport = cfg.LegacyUpstream
	s.pipe, _ = cfg.Upstream.(*UpstreamPipe)
	s.httpUp = newHTTPLane(cfg.Upstream)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	gc := cfg.Gate
	gc.Mode, gc.AllowTokenFor, gc.AllowGrantsFor = pol.Mode, pol.AllowTokenFor, pol.AllowGrantsFor
	if gc.Audience == "" {
		if sharedLedger(gc.LedgerURL) {
			return nil, errSharedDefaultAudience(gc.LedgerURL)
		}
		gc.Audience = DefaultAudience(cfg.Upstream)
	}
	s.Audience = gc.Audience
	if gc.Logger == nil {
		gc.Logger = s.log
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if m := s.member; m != nil {
		// One journal, ledger, key and channel for the whole gateway; this
		// server's audience, mode and opt-ins (which name tools as clients
		// see them, with the server's prefix).
		s.conf = m.conf
		opts := m.conf.Options
		opts.Audience, opts.Mode = gc.Audience, gc.Mode
		opts.AllowTokenFor = nil
		for _, o := range gc.AllowTokenFor {
			o.Tool = m.prefix + o.Tool
			opts.AllowTokenFor = append(opts.AllowTokenFor, o)
		}
		opts.AllowGrantsFor = nil
		for _, n := range gc.AllowGrantsFor {
			opts.AllowGrantsFor = append(opts.AllowGrantsFor, m.prefix+n)
		}
		if s.Gate, err = mcpsafe.New(opts); err != nil {
			return nil, err
		}
	} else {
		if s.conf, err = serverconf.Build(ctx, gc); err != nil {
			return nil, err
		}
		if s.Gate, err = mcpsafe.New(s.conf.Options); err != nil {
			return nil, err
		}
		if s.conf.Metrics != nil {
			// A gateway's servers share one metrics registry; the gauge
			// then follows the gateway, not one of its gates.
			s.conf.Metrics.SetPending(s.Gate.Pending)
		}
	}
	s.JournalPath = s.conf.JournalPath
	if err := s.cont.init(s.conf.Options.Ledger); err != nil {
		return nil, err
	}
	startTimeout := cfg.StartTimeout
	if startTimeout <= 0 {
		startTimeout = DefaultStartTimeout
	}
	// The session outlives sctx: the SDK detaches it from the context
	// Connect was given.
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	startErr := func(what string, err error) error {
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("proxy: the upstream did not answer %s within %s: is it an MCP server on this transport? (raise --upstream-timeout if it is only slow to start)", what, startTimeout)
		}
		return err
	}
	if s.Upstream, err = s.connectLeg(sctx, cfg.Upstream, nil); err != nil {
		return nil, startErr("initialize", upstreamStartError(cfg.Upstream, fmt.Errorf("proxy: connecting upstream: %w", err)))
	}
	init := s.Upstream.InitializeResult()
	if init == nil {
		return nil, errors.New("proxy: upstream sent no initialize result")
	}
	given := s.pol().Name
	if m := s.member; m != nil && given == "" {
		given = m.name
	}
	s.serverName = personName(given, init.ServerInfo, s.Audience)
	s.serverLine = serverLine(s.serverName, init.ServerInfo)
	if m := s.member; m != nil {
		s.serverLine = "gateway server " + prompt.Quote(m.name) + ", " + s.serverLine
		s.MCP = m.mcp
	} else if err := s.newMCP(init); err != nil {
		return nil, err
	}

	tools, err := s.listUpstream(sctx)
	if err != nil {
		return nil, startErr("tools/list", err)
	}
	if err := checkPolicy(pol, tools); err != nil {
		return nil, err
	}
	if m := s.member; m != nil && m.starting != nil {
		// The gateway routes to this server from before its first tool
		// is listed: a client that lists tools on list_changed and calls
		// at once must not be told the server is down.
		m.starting(s)
	}
	if err := s.apply(tools); err != nil {
		return nil, err
	}
	if err := s.Gate.CheckOptIns(); err != nil {
		var oe *optin.Error
		if errors.As(err, &oe) {
			key := map[string]string{"AllowTokenFor": "allow_token_for", "AllowGrantsFor": "allow_grants_for"}[oe.Option]
			return nil, fmt.Errorf("%s: %s", pol.Source, oe.Say(key))
		}
		return nil, fmt.Errorf("%s: %w", pol.Source, err)
	}
	go s.syncLoop()
	return s, nil
}

func (s *Server) newMCP(init *mcp.InitializeResult) error {
	sopts := &mcp.ServerOptions{
		Instructions: instructions(init.Instructions),
		Capabilities: downstreamCaps(init.Capabilities),
		Logger:       s.log,
	}
	if c := init.Capabilities; c != nil && c.Resources != nil && c.Resources.Subscribe {
		sopts.SubscribeHandler, sopts.UnsubscribeHandler = s.subscribe, s.unsubscribe
	}
	s.MCP = mcp.NewServer(&mcp.Implementation{Name: "mcpsafe-proxy", Version: Version}, sopts)
	s.MCP.AddReceivingMiddleware(s.middleware)
	return nil
}

// pol is the policy in force.
func (s *Server) pol() *Policy { return s.policyP.Load() }

// down is the name clients see for an upstream tool or prompt: the
// gateway server's prefix and the upstream name. up undoes it.
func (s *Server) down(name string) string {
	if s.member == nil {
		return name
	}
	return s.member.prefix + name
}

func (s *Server) up(name string) string {
	if s.member == nil {
		return name
	}
	return strings.TrimPrefix(name, s.member.prefix)
}

func instructions(upstream string) string {
	note := "This server is behind mcpsafe: tools that change something need the user's approval of a plan first; show the plan to the user as given."
	if upstream == "" {
		return note
	}
	return upstream + "\n\n" + note
}

// downstreamCaps advertises what upstream offers, list-change
// notifications included (relayed by promptsChanged and resourcesChanged).
func downstreamCaps(up *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	if up == nil {
		return caps
	}
	if up.Logging != nil {
		caps.Logging = &mcp.LoggingCapabilities{}
	}
	if up.Resources != nil {
		caps.Resources = &mcp.ResourceCapabilities{Subscribe: up.Resources.Subscribe, ListChanged: up.Resources.ListChanged}
	}
	if up.Prompts != nil {
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: up.Prompts.ListChanged}
	}
	if up.Completions != nil {
		caps.Completions = &mcp.CompletionCapabilities{}
	}
	return caps
}

// Close disconnects upstream and releases the journal and ledger.
func (s *Server) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	var errs []error
	if s.Upstream != nil {
		if err := s.Upstream.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	if s.pipe != nil {
		s.pipe.close()
	}
	if s.Gate != nil {
		// Before the journal and ledger close: its sweep journals into them.
		errs = append(errs, s.Gate.Close())
	}
	s.relay.legacyOnce.Do(func() {}) // no legacy leg from now on
	if s.relay.legacy != nil {
		if err := s.relay.legacy.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	if cl, ok := s.relay.legacyTransport.(*CommandLeg); ok {
		cl.close()
	}
	if s.member != nil {
		// The gateway's stores stay open; only this server's tools go.
		s.withdrawAll()
	} else if s.conf != nil {
		errs = append(errs, s.conf.Close())
	}
	return errors.Join(errs...)
}

// UpstreamHTTPClient is the HTTP client for an upstream over streamable
// HTTP: it keeps enough idle connections for many concurrent calls (the
// default keeps 2, and every other call would open a new connection and
// leave a socket in TIME_WAIT).
func UpstreamHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 256
	return &http.Client{Transport: t}
}

// HTTPHandler serves the proxy over streamable HTTP (see files.Server's
// HTTPHandler for stateless versus stateful).
func (s *Server) HTTPHandler(stateless bool) http.Handler {
	return mcphttp.HTTP{Stateful: !stateless}.MCPHandler(s.MCP)
}

func (s *Server) listUpstream(ctx context.Context) (map[string]*mcp.Tool, error) {
	tools := map[string]*mcp.Tool{}
	withheld := map[string]bool{}
	for t, err := range s.Upstream.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("proxy: listing upstream tools: %w", err)
		}
		if _, dup := tools[t.Name]; dup {
			return nil, fmt.Errorf("proxy: upstream lists tool %q twice", t.Name)
		}
		screened, err := screenTool(t)
		if err != nil {
			s.log.Error(err.Error())
			withheld[t.Name] = true
			continue
		}
		tools[t.Name] = screened
	}
	s.syncMu.Lock()
	s.withheld = withheld
	s.syncMu.Unlock()
	return tools, nil
}

// readOnly reports whether upstream claims t changes nothing. Only an
// explicit readOnlyHint: true counts.
func readOnly(t *mcp.Tool) bool { return t.Annotations != nil && t.Annotations.ReadOnlyHint }

// irreversible is the default: destructive unless upstream explicitly
// says destructiveHint: false.
func irreversible(t *mcp.Tool, tp *ToolPolicy) bool {
	if tp != nil && tp.Irreversible != nil {
		return *tp.Irreversible
	}
	a := t.Annotations
	return a == nil || a.DestructiveHint == nil || *a.DestructiveHint
}

func (s *Server) gated(t *mcp.Tool) bool {
	tp := s.pol().Tools[t.Name]
	// A policy entry with settings gates the tool even if upstream later
	// starts calling it read-only: the policy only ever adds strictness.
	return (!readOnly(t) && !s.pol().trustsUpstreamGate(t)) || (tp != nil && tp.hasSettings())
}

// checkPolicy refuses a policy that names tools upstream does not have, or
// that asks a read-only tool for gate settings without gate: true.
func checkPolicy(p *Policy, tools map[string]*mcp.Tool) error {
	var errs []error
	names := make([]string, 0, len(p.Tools))
	for n := range p.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		tp := p.Tools[name]
		t, ok := tools[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s:%d: tools.%s: upstream has no tool %q (it has: %s)", p.Source, tp.Line, name, name, strings.Join(sortedNames(tools), ", ")))
			continue
		}
		if readOnly(t) && !tp.Gate && tp.hasSettings() {
			errs = append(errs, fmt.Errorf("%s:%d: tools.%s: upstream marks it read-only, so it passes through ungated; add gate: true to gate it", p.Source, tp.Line, name))
		}
		errs = append(errs, p.checkArgumentNames(tp, t.InputSchema), p.checkTokenMode(tp, irreversible(t, tp)))
		if r := tp.Resolver; r != nil {
			rt, ok := tools[r.Tool]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s:%d: tools.%s.resolver: upstream has no tool %q", p.Source, r.Line, name, r.Tool))
			case !readOnly(rt):
				errs = append(errs, fmt.Errorf("%s:%d: tools.%s.resolver: %q is not marked read-only upstream; a resolver must change nothing", p.Source, r.Line, name, r.Tool))
			case p.Tools[r.Tool] != nil && p.Tools[r.Tool].hasSettings():
				errs = append(errs, fmt.Errorf("%s:%d: tools.%s.resolver: %q is gated by this policy and cannot resolve", p.Source, r.Line, name, r.Tool))
			}
		}
	}
	if p.TrustUpstreamGate && !slices.ContainsFunc(sortedNames(tools), func(n string) bool { return p.trustsUpstreamGate(tools[n]) }) {
		errs = append(errs, fmt.Errorf("%s:%d: trust_upstream_gate: no upstream tool declares its own %s argument, so the upstream does not gate itself as mcpsafe does (is it mcpsafe files or an mcpsafe proxy?); remove the key to gate its tools here", p.Source, p.TrustLine, mcpsafe.TokenField))
	}
	return errors.Join(errs...)
}

func sortedNames(tools map[string]*mcp.Tool) []string {
	out := make([]string, 0, len(tools))
	for n := range tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// apply makes the downstream tool set match tools: removed and changed
// tools come off, new and changed ones go on. The SDK notifies downstream
// clients of the change.
func (s *Server) apply(tools map[string]*mcp.Tool) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	want := map[string]registered{}
	for name, t := range tools {
		def, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("proxy: tool %q: %w", name, err)
		}
		gated := s.sticky.gate(name, s.gated(t))
		owns := schemaHasProperty(t.InputSchema, mcpsafe.TokenField)
		want[name] = registered{gated: gated, selfGated: !gated && !readOnly(t), ownsToken: owns, def: string(def), pol: s.pol().Tools[name]}
	}
	var drop []string
	for name, r := range s.registered {
		if w, ok := want[name]; !ok || w != r {
			drop = append(drop, name)
		}
	}
	for _, name := range drop {
		s.unregister(name)
	}
	var errs []error
	for _, name := range sortedNames(tools) {
		if _, ok := s.registered[name]; ok {
			continue
		}
		w := want[name]
		if m := s.member; m != nil {
			if err := m.claim(s.down(name)); err != nil {
				errs = append(errs, err) // withheld, never shadowing another server's tool
				continue
			}
		}
		if err := s.register(tools[name], w.gated); err != nil {
			if s.member != nil {
				s.member.release(s.down(name))
			}
			// The tool stays off rather than ungated.
			errs = append(errs, err)
			continue
		}
		s.registered[name] = w
	}
	return errors.Join(errs...)
}

// unregister takes name off the downstream server. Callers hold syncMu.
func (s *Server) unregister(name string) {
	if s.registered[name].gated {
		s.Gate.Remove(s.MCP, s.down(name))
	} else {
		s.MCP.RemoveTools(s.down(name))
	}
	delete(s.registered, name)
	if s.member != nil {
		s.member.release(s.down(name))
	}
}

// withdrawAll takes every tool of this server off the shared downstream
// server (the SDK tells clients the list changed).
func (s *Server) withdrawAll() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for name := range s.registered {
		s.unregister(name)
	}
}

func (s *Server) register(t *mcp.Tool, gated bool) error {
	if !gated {
		copied := *t
		copied.Name = s.down(t.Name)
		s.MCP.AddTool(&copied, s.forward)
		return nil
	}
	tp := s.pol().Tools[t.Name]
	mode := s.pol().Mode
	if tp != nil && tp.Mode != "" {
		mode = tp.Mode
	}
	outSchema := t.OutputSchema
	if mode != mcpsafe.ModeElicit && mode != mcpsafe.ModeChannel {
		// An approval_required result cannot match the upstream's output
		// schema, and clients that validate structured content (the
		// TypeScript SDK does) reject it, breaking the token flow. Only the
		// modes that never return one keep the schema.
		outSchema = nil
	}
	gt := mcpsafe.Tool{
		Name:         s.down(t.Name),
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: outSchema,
		Annotations:  t.Annotations,
		Irreversible: s.sticky.irreversibleNow(t.Name, tp != nil && tp.Irreversible != nil, irreversible(t, tp)),
		Preview:      s.previewFor(t.Name, tp),
		Execute:      s.execute,
		// An upstream behind its own mcpsafe gate (mcpsafe files, say)
		// already takes approval_token: it stays the upstream's argument,
		// and this gate approves the call without a token path of its own.
		OwnsTokenField: schemaHasProperty(t.InputSchema, mcpsafe.TokenField),
	}
	if tp != nil {
		gt.Mode = tp.Mode
		gt.Deny, gt.Allow, gt.AutoApprove = tp.Deny, tp.Allow, tp.AutoApprove
		gt.SecretFields = tp.SecretFields
		gt.Grants = tp.Grants
		if tp.Resolver != nil {
			gt.Resolve = s.resolverFor(tp.Resolver)
		}
	}
	if err := s.Gate.Register(s.MCP, gt); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}

// ownsToken reports whether approval_token is the upstream tool name's own
// argument, which the gate then keeps in the call's arguments.
func (s *Server) ownsToken(name string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.registered[name].ownsToken
}

// passesThrough reports whether name is currently an ungated, read-only
// upstream tool.
func (s *Server) passesThrough(name string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	r, ok := s.registered[name]
	return ok && !r.gated && !r.selfGated
}

func (s *Server) requestSync() {
	select {
	case s.syncReq <- struct{}{}:
	default: // a sync is already due; it will see this change too
	}
}

// syncLoop re-lists upstream tools after each tools/list_changed. It runs
// apart from the notification handler, which must not wait on a request
// over the same connection.
func (s *Server) syncLoop() {
	defer close(s.syncDone)
	for {
		select {
		case <-s.stop:
			return
		case <-s.syncReq:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		tools, err := s.listUpstream(ctx)
		if err == nil {
			err = s.apply(tools)
		}
		cancel()
		if err != nil {
			s.log.Error("proxy: tool list sync failed; affected tools are withdrawn or unchanged", "err", err)
		}
	}
}

// protocolError returns the upstream's JSON-RPC error itself when err
// carries one, so that the client gets its code, message and data.
func protocolError(err error) error {
	var jerr *jsonrpc.Error
	if errors.As(err, &jerr) {
		return jerr
	}
	return err
}

// middleware relays what is not a tool call to upstream unchanged, keeps
// track of downstream requests in flight (for routing what upstream sends
// back mid-call), and remembers each tools/call request so that progress
// and input requests can be routed back.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call", "prompts/get", "resources/read":
			// The requests during which the upstream may ask or tell the
			// client something (long-lived ones such as
			// subscriptions/listen would make every routing ambiguous).
			ss, _ := req.GetSession().(*mcp.ServerSession)
			defer s.track(ctx, ss)()
		}
		if r, ok := req.(*mcp.CallToolRequest); ok {
			if r.Params != nil && isContinuation(r.Params.RequestState) {
				return s.continueCall(ctx, r)
			}
			return next(ctx, method, req)
		}
		switch req.(type) {
		case *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest, *mcp.ReadResourceRequest,
			*mcp.ListPromptsRequest, *mcp.GetPromptRequest, *mcp.CompleteRequest:
		default:
			if method != "logging/setLevel" {
				return next(ctx, method, req)
			}
		}
		leg, err := s.legFor(ctx, req)
		if err != nil {
			return nil, err
		}
		switch r := req.(type) {
		case *mcp.ListResourcesRequest:
			return relayResult(leg.ListResources(ctx, r.Params))
		case *mcp.ListResourceTemplatesRequest:
			return relayResult(leg.ListResourceTemplates(ctx, r.Params))
		case *mcp.ReadResourceRequest:
			res, err := leg.ReadResource(ctx, withCaps(s, leg, r.Session, r.Params))
			s.inOrder(ctx, leg)
			return relayResult(res, err)
		case *mcp.ListPromptsRequest:
			return relayResult(leg.ListPrompts(ctx, r.Params))
		case *mcp.GetPromptRequest:
			res, err := leg.GetPrompt(ctx, withCaps(s, leg, r.Session, r.Params))
			s.inOrder(ctx, leg)
			return relayResult(res, err)
		case *mcp.CompleteRequest:
			return relayResult(leg.Complete(ctx, r.Params))
		}
		// logging/setLevel: upstream first, then the downstream session
		// records the level to filter relayed messages by.
		p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
		if leg.InitializeResult().ProtocolVersion < modernProtocol {
			if err := leg.SetLoggingLevel(ctx, p); err != nil {
				return nil, err
			}
		}
		// A 2026-07-28 upstream has no session level: the proxy keeps it
		// and puts it on each request of this client (withCaps).
		s.levels().set(req.GetSession(), p)
		return next(ctx, method, req)
	}
}

// relayResult returns an upstream result as is, or its error; a typed nil
// must not become a non-nil Result.
func relayResult[R mcp.Result](res R, err error) (mcp.Result, error) {
	if err != nil {
		return nil, protocolError(err)
	}
	return res, nil
}

// withCaps keeps the downstream client's own _meta. On a 2026-07-28 leg
// that includes its identity and capabilities, which the upstream reads
// per request and must read from the client, not the proxy, less the
// capabilities the policy refuses to relay; the protocol version is the
// leg's own. A 2025-11-25 leg gets none of those keys.
func withCaps[P interface {
	GetMeta() map[string]any
	SetMeta(map[string]any)
}](s *Server, leg *mcp.ClientSession, down *mcp.ServerSession, p P) P {
	m := p.GetMeta()
	modern := leg.InitializeResult().ProtocolVersion >= modernProtocol
	level, hasLevel := s.levels().of(down)
	_, ownLevel := m[mcp.MetaKeyLogLevel]
	addLevel := modern && hasLevel && !ownLevel
	if m == nil && !addLevel {
		return p
	}
	out := maps.Clone(m)
	if out == nil {
		out = map[string]any{}
	}
	delete(out, mcp.MetaKeyProtocolVersion)
	if !modern {
		delete(out, mcp.MetaKeyClientInfo)
		delete(out, mcp.MetaKeyClientCapabilities)
	} else if caps, ok := out[mcp.MetaKeyClientCapabilities].(map[string]any); ok {
		kept := maps.Clone(caps)
		for _, k := range []RequestKind{KindElicitation, KindSampling, KindRoots} {
			if !s.pol().UpstreamRequests.allows(k) {
				delete(kept, string(k))
			}
		}
		out[mcp.MetaKeyClientCapabilities] = kept
	}
	if addLevel {
		// A client of the 2025-11-25 generation set its level for the
		// session; the 2026-07-28 upstream reads it from each request.
		out[mcp.MetaKeyLogLevel] = level
	}
	p.SetMeta(out)
	return p
}

// forward passes a read-only tool call through: same arguments, the
// client's input responses and the upstream's own request state, and the
// upstream's result or protocol error as is.
func (s *Server) forward(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := s.callUpstream(ctx, &mcp.CallToolParams{
		Name: s.up(req.Params.Name), Arguments: args,
		InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState,
	}, req)
	if err == nil && res.NeedsInput() {
		err = checkAsks(s.pol().UpstreamRequests, res.InputRequests)
	}
	if err != nil {
		return nil, protocolError(err)
	}
	return res, nil
}

// execute runs an approved call upstream with exactly the arguments the
// gate bound into the approval (canonical, without approval_token). The
// client's request state is the gate's and stays here.
func (s *Server) execute(ctx context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: s.up(c.Tool), Arguments: c.Arguments}
	res, err := s.callUpstream(ctx, params, c.Request)
	if err != nil {
		// The gate relays an upstream JSON-RPC error as it is; the
		// journal records the failure.
		return nil, err
	}
	res, err = s.afterGated(ctx, c.Request, params, c.ArgsDigest, c.Principal, res)
	var jerr *jsonrpc.Error
	if errors.As(err, &jerr) {
		// Only the upstream's first answer is relayed as a protocol
		// error: what fails after it (asking the client, a retry) is the
		// tool's failure, reported as one.
		err = errors.New(err.Error())
	}
	return res, err
}

// callUpstream calls upstream once; it never retries, since a call that
// failed midway may have run. Cancelling ctx cancels the upstream call.
func (s *Server) callUpstream(ctx context.Context, params *mcp.CallToolParams, down *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	leg := s.Upstream
	if down != nil && down.Params != nil && down.Session != nil {
		var err error
		if leg, err = s.legFor(ctx, down); err != nil {
			return nil, err
		}
		params.Meta = maps.Clone(down.Params.Meta)
		delete(params.Meta, "progressToken")
		params = withCaps(s, leg, down.Session, params)
		if tok := down.Params.GetProgressToken(); tok != nil {
			up := fmt.Sprintf("mcpsafe-%d", s.progressID.Add(1))
			s.progress.Store(up, progressTarget{session: down.Session, ctx: ctx, token: tok})
			// Notifications are dispatched apart from responses and may be
			// handled after the call returned: keep the route a while.
			defer time.AfterFunc(progressGrace, func() { s.progress.Delete(up) })
			params.SetProgressToken(up)
		}
	}
	// The upstream's spans join the trace under the gate's span (for a
	// gated call, its execute step) rather than the caller's.
	params.Meta = tracemeta.Inject(ctx, params.Meta)
	start := time.Now()
	res, err := leg.CallTool(ctx, params)
	s.inOrder(ctx, leg)
	if s.conf != nil && s.conf.Metrics != nil {
		s.conf.Metrics.Upstream(time.Since(start), err)
	}
	if err != nil && s.member != nil && ctx.Err() == nil {
		// -32005 is the SDK's "rejected by transport": the request never
		// got an answer from the upstream.
		if jerr := (*jsonrpc.Error)(nil); !errors.As(err, &jerr) || jerr.Code == -32005 {
			s.member.suspect(s) // the upstream may be gone: the gateway checks
		}
	}
	return res, err
}

func (s *Server) onProgress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := s.progress.Load(tok)
	if !ok {
		return // not ours, or the call already ended
	}
	t := v.(progressTarget)
	p := *req.Params
	p.ProgressToken = t.token
	if err := t.session.NotifyProgress(context.WithoutCancel(t.ctx), &p); err != nil {
		s.log.Debug("proxy: progress not relayed", "err", err)
	}
}

// resolverFor calls a read-only upstream tool for the current state of
// what a call points at. An upstream error, an error result or an empty
// result refuses the call (the gate makes any error a refusal).
func (s *Server) resolverFor(r *Resolver) func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) {
	return func(ctx context.Context, c mcpsafe.Call) (mcpsafe.Resolved, error) {
		// Checked at startup, and again on every call: upstream may since
		// have dropped the tool's readOnlyHint, and a resolver must never
		// run a tool that changes something without approval.
		if !s.passesThrough(r.Tool) {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s is no longer a read-only upstream tool", r.Tool)
		}
		args, err := r.arguments(ctx, c)
		if err != nil {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "%v", err)
		}
		res, err := s.Upstream.CallTool(ctx, &mcp.CallToolParams{Name: r.Tool, Arguments: args})
		if err != nil {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s failed: %v", r.Tool, err)
		}
		if res.NeedsInput() {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s asked for input; a resolver must answer on its own", r.Tool)
		}
		text := resultText(res)
		if res.IsError {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s reported an error: %s", r.Tool, prompt.Quote(text))
		}
		out := mcpsafe.Resolved{}
		if strings.TrimSpace(text) != "" {
			out["text"] = text
		}
		if res.StructuredContent != nil {
			// Round-trip so that the value is plain JSON data for CEL and
			// for the digest.
			b, err := json.Marshal(res.StructuredContent)
			if err != nil {
				return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s: %v", r.Tool, err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s: %v", r.Tool, err)
			}
			if v != nil {
				out["structured"] = v
			}
		}
		if len(out) == 0 {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s returned nothing", r.Tool)
		}
		out["tool"] = r.Tool
		if out, err = r.bound(out); err != nil {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "%v", err)
		}
		return out, nil
	}
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// stateLines shows what a resolver reported, one field a line and each
// whole: a state cut down to one line could hide the part that matters
// (the gate refuses a plan too large to show whole instead). Structured
// content gives the fields; otherwise each "key: value" line of the text
// is a field, and any other line is shown as it is.
func stateLines(r mcpsafe.Resolved) []string {
	if r == nil {
		return nil
	}
	tool, _ := r["tool"].(string)
	var out []string
	field := func(k, v string) { out = append(out, "state "+prompt.QuoteWhole(k)+" = "+prompt.QuoteWhole(v)) }
	// text shows a multi-line report: each "key: value" line is a field,
	// any other line is shown as it is.
	text := func(s string) {
		for _, line := range strings.Split(s, "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.TrimSpace(line) == "" {
				continue
			}
			if k, v, ok := strings.Cut(line, ": "); ok && k != "" && !strings.ContainsAny(k, " \t") {
				field(k, v)
			} else {
				out = append(out, "state: "+prompt.QuoteWhole(line))
			}
		}
	}
	m, ok := r["structured"].(map[string]any)
	if f, bound := r["fields"].(map[string]any); bound {
		m, ok = f, true // the fields the policy binds (resolver.bind)
	}
	if ok && len(m) > 0 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			switch v := m[k].(type) {
			case string:
				if strings.Contains(v, "\n") {
					text(v) // a report wrapped in one field (server-filesystem's "content")
				} else {
					field(k, v)
				}
			default:
				b, _ := json.Marshal(v)
				field(k, string(b))
			}
		}
	} else if t, _ := r["text"].(string); strings.TrimSpace(t) != "" {
		text(t)
	}
	if len(out) == 0 {
		return nil
	}
	return append([]string{"current state, as " + prompt.Quote(tool) + " reports it:"}, out...)
}

// quoteJSON renders a string argument as its quoted value and anything
// else as its quoted compact JSON.
func quoteJSON(v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return prompt.Quote(s)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return prompt.Quote(string(v))
	}
	return prompt.Quote(b.String())
}

// oneLine keeps an operator's multi-line template on one line. Argument
// values are already escaped by prompt.Quote and hold no raw line breaks,
// and their spaces are left alone.
func oneLine(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}

// schemaHasProperty reports whether a JSON schema declares the top-level
// property name.
func schemaHasProperty(schema any, name string) bool {
	raw, err := json.Marshal(schema)
	if err != nil {
		return false
	}
	var m struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m.Properties[name]
	return ok
}
