package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants/celscope"
	"github.com/mcpsafe/mcpsafe/internal/optincheck"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is reported to clients and to the upstream server.
var Version = "dev"

// Config is everything `mcpsafe proxy` takes.
type Config struct {
	// Upstream is the transport to the protected server (a command over
	// stdio, streamable HTTP, or in-memory in tests). Required.
	Upstream mcp.Transport
	// ClientProtocol is the protocol generation of the proxy's one client,
	// when it has one (served over stdio: ReadClientProtocol reads it from
	// the client's first line): the upstream session is opened in it, so
	// that the upstream may ask a 2025-11-25 client things mid-call, and
	// the client needs no second session (LegacyUpstream). Empty: the
	// newest the upstream speaks.
	ClientProtocol string
	// LegacyUpstream, when set, is a second transport to the same upstream
	// (a second session over HTTP, a second process for a command: see
	// CommandLeg), for a proxy with clients of both generations (served
	// over HTTP). When the upstream session is of the 2026-07-28
	// generation, downstream clients of the 2025-11-25 generation get an
	// upstream session of their own generation through it, in which the
	// upstream may ask them things mid-call. Nil: every client shares the
	// session.
	LegacyUpstream mcp.Transport
	// Policy is the parsed policy file; nil is the default policy.
	Policy *policy.Policy
	// Gate holds the gate's keys, ledger, journal and channel, opened by
	// the caller (cmd/mcpsafe builds them with internal/serverconf) and
	// closed by it after Server.Close. Its Mode and AllowTokenFor must be
	// empty: they come from the policy file, so that one file says
	// everything about what is gated and how (AllowGrantsFor is the
	// policy's too). An empty Audience is DefaultAudience(Upstream).
	Gate mcpsafe.Options
	// JournalPath is where Gate's journal writes (Server.JournalPath).
	JournalPath string
	// Metrics, when set, times every call upstream.
	Metrics Metrics
	Logger  *slog.Logger
	// StartTimeout bounds the upstream's start: connect, initialize and
	// the first tools/list (0: DefaultStartTimeout). A command that never
	// speaks MCP would otherwise hang the proxy forever.
	StartTimeout time.Duration

	member *member // its gateway slot's: the downstream server, names, rug-pull memory
}

// Metrics records how long each call upstream took and whether it failed
// (*metrics.Metrics is one).
type Metrics interface {
	Upstream(took time.Duration, err error)
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

	policyP  atomic.Pointer[policy.Policy] // swapped by a gateway reload
	opts     mcpsafe.Options               // what the gate was built from
	metrics  Metrics
	log      *slog.Logger
	member   *member                 // what it shares with its gateway
	one      atomic.Pointer[Gateway] // the gateway of one NewServer made, which Close closes
	checking atomic.Bool             // a gateway health check is running

	syncMu     sync.Mutex // serializes tool-list syncs
	registered map[string]registered
	withheld   map[string]bool // upstream tools not shown to clients (screenTool)
	serverLine string          // names the server in every plan
	serverName string          // the server as a person knows it (personName)
	upLabel    string          // the label of the upstream's command or URL (askerName)
	syncReq    chan struct{}
	stopped    context.Context // ends with Close, and with it a sync under way
	stop       context.CancelFunc

	progress   sync.Map // upstream progress token -> progressTarget
	progressID atomic.Uint64

	relay  relayState
	orders orders // notifications before the answers they precede (notify_order.go)
	cont   continuations
	pipe   *UpstreamPipe // the upstream command, when the fast lane can use it
	httpUp *httpLane     // the upstream's HTTP endpoint, for the HTTP fast lane
}

type registered struct {
	gated bool
	def   string       // the upstream definition, to notice changes
	pol   *policy.Tool // the policy entry it was registered under (a reload replaces it)

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

// NewServer is the proxy for one upstream: a gateway of one server, which
// serves the upstream's names as they are (no prefix) and mirrors its
// capabilities and instructions. It connects upstream, checks the policy
// against the upstream's tools and builds the downstream server. Anything
// doubtful is a startup error: a policy naming a tool upstream lacks, a
// resolver that is not a read-only upstream tool, an opt-in for a tool
// that is not gated and irreversible. An upstream that goes away is not
// restarted (Upstream.Wait tells).
func NewServer(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Upstream == nil {
		return nil, errors.New("proxy: no upstream transport")
	}
	g := gatewayOn(cfg.Gate, GatewayOptions{Logger: cfg.Logger, StartTimeout: cfg.StartTimeout, JournalPath: cfg.JournalPath, Metrics: cfg.Metrics})
	sl := g.newSlot(&policy.ServerSpec{Bare: true, Policy: cfg.Policy})
	cfg.Logger = g.log
	sl.fixed = &cfg
	sl.m.suspect = nil // nothing to restart it from: no health checks
	sl.m.server = func(init *mcp.InitializeResult) *mcp.Server {
		g.MCP = g.newMCP("mcpsafe-proxy", instructions(init.Instructions), downstreamCaps(init.Capabilities))
		return g.MCP
	}
	srv, err := g.start(ctx, sl)
	if err != nil {
		g.Close()
		return nil, err
	}
	g.up(sl, srv)
	srv.one.Store(g)
	return srv, nil
}

// newServer starts the proxy Server of one gateway slot (cfg.member).
func newServer(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.Gate.Mode != "" || len(cfg.Gate.AllowTokenFor) > 0 {
		return nil, errors.New("proxy: mode and token opt-ins belong in the policy file (mode, allow_token_for)")
	}
	pol := cmp.Or(cfg.Policy, &policy.Policy{Source: "default policy"})
	s := &Server{
		log: cfg.Logger, registered: map[string]registered{}, member: cfg.member, metrics: cfg.Metrics,
		syncReq: make(chan struct{}, 1),
		relay:   relayState{legacyTransport: cfg.LegacyUpstream, calls: map[uint64]downCall{}, subs: map[string]map[*mcp.ServerSession]bool{}},
	}
	s.stopped, s.stop = context.WithCancel(context.Background())
	s.policyP.Store(pol)
	s.pipe, _ = cfg.Upstream.(*UpstreamPipe)
	s.httpUp = newHTTPLane(cfg.Upstream)
	_, s.upLabel = upstreamIdentity(cfg.Upstream)
	opts := cfg.Gate
	opts.Audience = cmp.Or(opts.Audience, DefaultAudience(cfg.Upstream))
	s.Audience, s.JournalPath = opts.Audience, cfg.JournalPath
	opts.Logger = cmp.Or(opts.Logger, s.log)
	if opts.GrantCEL == nil {
		opts.GrantCEL = celscope.New() // a policy's grant scopes are CEL (package policy checks them as the file loads)
	}
	// The policy's mode and opt-ins; in a gateway they name tools as
	// clients see them, with the server's prefix.
	opts.Mode, opts.AllowTokenFor, opts.AllowGrantsFor = pol.Mode, nil, nil
	opts.RequireUserInteraction = opts.RequireUserInteraction || pol.RequireUserInteraction
	for _, o := range pol.AllowTokenFor {
		o.Tool = s.down(o.Tool)
		opts.AllowTokenFor = append(opts.AllowTokenFor, o)
	}
	for _, n := range pol.AllowGrantsFor {
		opts.AllowGrantsFor = append(opts.AllowGrantsFor, s.down(n))
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.opts = opts
	if s.Gate, err = mcpsafe.New(opts); err != nil {
		return nil, err
	}
	if err := s.cont.init(opts.Ledger); err != nil {
		return nil, err
	}
	startTimeout := cmp.Or(max(cfg.StartTimeout, 0), DefaultStartTimeout)
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
	var legOpts *mcp.ClientSessionOptions
	if cfg.ClientProtocol != "" {
		legOpts = &mcp.ClientSessionOptions{ProtocolVersion: cfg.ClientProtocol}
	}
	if s.Upstream, err = s.connectLeg(sctx, cfg.Upstream, legOpts); err != nil {
		return nil, unreachable(startErr("initialize", upstreamStartError(cfg.Upstream, fmt.Errorf("proxy: connecting upstream: %w", err))))
	}
	init := s.Upstream.InitializeResult()
	if init == nil {
		return nil, errors.New("proxy: upstream sent no initialize result")
	}
	s.serverName = personName(cmp.Or(s.pol().Name, s.member.name), init.ServerInfo, s.Audience)
	s.serverLine = serverLine(s.serverName, init.ServerInfo)
	if name := s.member.name; name != "" {
		s.serverLine = "gateway server " + prompt.Quote(name) + ", " + s.serverLine
	}
	s.MCP = s.member.server(init)

	tools, err := s.listUpstream(sctx)
	if err != nil {
		return nil, unreachable(startErr("tools/list", err))
	}
	if err := checkPolicy(pol, tools); err != nil {
		return nil, err
	}
	// The gateway routes to this server from before its first tool is
	// listed: a client that lists tools on list_changed and calls at once
	// must not be told the server is down.
	s.member.starting(s)
	if err := s.apply(tools); err != nil {
		return nil, err
	}
	if err := s.Gate.CheckOptIns(); err != nil {
		if oe, ok := errors.AsType[*optincheck.Error](err); ok {
			key := map[string]string{"AllowTokenFor": "allow_token_for", "AllowGrantsFor": "allow_grants_for"}[oe.Option]
			return nil, fmt.Errorf("%s: %s", pol.Source, oe.Say(key))
		}
		return nil, fmt.Errorf("%s: %w", pol.Source, err)
	}
	go s.syncLoop()
	return s, nil
}

func (s *Server) pol() *policy.Policy { return s.policyP.Load() }

// down is the name clients see for an upstream tool or prompt: the
// gateway server's prefix and the upstream name. up undoes it.
func (s *Server) down(name string) string { return s.member.prefix + name }

func (s *Server) up(name string) string { return strings.TrimPrefix(name, s.member.prefix) }

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

// Close disconnects upstream; the stores in Config.Gate stay open (their
// opener closes them).
func (s *Server) Close() error {
	if g := s.one.Swap(nil); g != nil {
		return g.Close() // a gateway of one: it closes s
	}
	s.stop()
	var errs []error
	closeLeg := func(leg *mcp.ClientSession) {
		if leg == nil {
			return
		}
		if err := leg.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	closeLeg(s.Upstream)
	if s.pipe != nil {
		s.pipe.close()
	}
	if s.Gate != nil {
		// Before the journal and ledger close: its sweep journals into them.
		errs = append(errs, s.Gate.Close())
	}
	s.relay.legacyOnce.Do(func() {}) // no legacy leg from now on
	closeLeg(s.relay.legacyUp.Load())
	if cl, ok := s.relay.legacyTransport.(*CommandLeg); ok {
		cl.close()
	}
	s.withdrawAll() // only this server's tools go
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
