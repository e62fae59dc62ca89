package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Gateway fronts several upstream servers with one downstream MCP
// server. Each upstream gets a proxy Server of its own (the same relay,
// gate and rug-pull rules as `mcpsafe proxy` with one upstream), which
// registers its tools on the gateway's server under the upstream's prefix
// (see policy.NameSeparator). All of them share one journal, one ledger, one key
// and one approval channel; each has its own policy and audience, and every
// plan names the server.
//
// A stdio upstream that exits is restarted with backoff; while it is down
// its tools are withdrawn (clients get tools/list_changed) and a call to
// one is refused with reason ReasonServerUnavailable, never routed to
// another server. Reload applies a new configuration, or refuses it whole.
type Gateway struct {
	MCP         *mcp.Server
	JournalPath string

	gate mcpsafe.Options // the shared stores; each server sets its audience
	// logLevels are the levels downstream sessions set, for every server
	// (restarted ones too) to put on its 2026-07-28 requests.
	logLevels sync.Map
	log       *slog.Logger
	opts      GatewayOptions

	reloadMu sync.Mutex // one Reload at a time

	mu    sync.Mutex
	slots map[string]*slot
	names map[string]string // downstream tool name -> server name
	// prompts and resources map what the last list showed to the server
	// that listed it.
	prompts, resources map[string]string
	sticky             map[string]*stickiness // each server name's rug-pull memory
	closed             bool
	down               func([]byte) error // the stdio client, once ServeStdio runs
	stop               chan struct{}      // closed by Close: restarts give up waiting
	wg                 sync.WaitGroup
}

// ReasonServerUnavailable refuses a call to a server of the gateway that
// is down (restarting, or unreachable).
const ReasonServerUnavailable = "server_unavailable"

// GatewayOptions tune a Gateway; the zero value is the default.
type GatewayOptions struct {
	// StartTimeout bounds each upstream's start (Config.StartTimeout).
	StartTimeout time.Duration
	// HealthInterval is how often an upstream that has not exited is
	// pinged (default 10s); one that does not answer within it is taken for
	// down, as an exited one is. HTTP upstreams have no process to watch.
	HealthInterval time.Duration
	// RestartMin and RestartMax bound the backoff between restarts of an
	// upstream that exited (defaults 200ms and 30s; it doubles each time).
	RestartMin, RestartMax time.Duration
	// Stderr receives the upstream commands' standard error (default: the
	// gateway's own).
	Stderr *os.File
	Logger *slog.Logger
	// JournalPath is where the shared journal writes (Gateway.JournalPath).
	JournalPath string
	// Metrics, when set, times every call upstream (Config.Metrics).
	Metrics Metrics
	// SharedLedger says that other processes reach the ledger: every
	// server then needs an explicit audience (policy.GatewayFile.CheckAudiences).
	SharedLedger bool
	// ClientProtocol is the protocol generation of the gateway's one
	// client, when it has one (Config.ClientProtocol): each upstream
	// session is opened in it, and no server gets a second session or
	// process. Empty: clients of both generations (served over HTTP).
	ClientProtocol string
}

// slot is one configured server: its spec, the proxy Server currently
// running it (nil while down) and what its Server shares with the gateway.
type slot struct {
	spec *policy.ServerSpec
	m    *member
	srv  *Server
	// early is a server routed to while it starts (see member.starting),
	// until start knows whether it started.
	early *Server
	down  string // why srv is nil
	gen   int    // bumped when the slot is replaced or closed
	// known are the downstream names the server ever had, so that a call
	// to one while it is down is refused as unavailable, not unknown.
	known map[string]bool
	// fixed is the configuration of a server on a transport it was given
	// (NewServer's gateway of one): it is not watched nor restarted.
	fixed *Config
	// started: the server was up once (its retries say "restart").
	started bool
	// outSchema are the downstream names that had an output schema when
	// the server went down (see unavailable).
	outSchema map[string]bool
}

// member is what a proxy Server of a gateway shares with it.
type member struct {
	name, prefix string
	g            *Gateway
	sl           *slot
	// server gives the downstream server to register on, once the
	// upstream's initialize result is known.
	server func(*mcp.InitializeResult) *mcp.Server
	sticky *stickiness
	// suspect is told when a call failed below the protocol: the gateway
	// pings the upstream and ends the session if it does not answer.
	suspect func(*Server)
}

// NewGateway starts every server of file on the shared stores of gate
// (opened and closed by the caller; cmd/mcpsafe builds them with
// internal/serverconf) and serves their tools. A server that cannot be
// reached (its command fails, its URL refuses) is retried with the restart
// backoff while the others serve; no server up at all, a policy that does
// not fit its upstream's tools, or a name two servers would both serve is
// a startup error.
func NewGateway(ctx context.Context, file *policy.GatewayFile, gate mcpsafe.Options, opts GatewayOptions) (_ *Gateway, err error) {
	if gate.Mode != "" || len(gate.AllowTokenFor) > 0 {
		return nil, errors.New("proxy: mode and token opt-ins belong in each server's policy")
	}
	if gate.Audience != "" {
		return nil, errors.New("proxy: a gateway has an audience per server (servers.NAME.audience), not one for all")
	}
	if err := file.CheckAudiences(opts.SharedLedger); err != nil {
		return nil, err
	}
	if opts.RestartMin <= 0 {
		opts.RestartMin = 200 * time.Millisecond
	}
	if opts.RestartMax < opts.RestartMin {
		opts.RestartMax = max(30*time.Second, opts.RestartMin)
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = 10 * time.Second
	}
	g := gatewayOn(gate, opts)
	g.MCP = g.newMCP("mcpsafe-gateway", "This server is behind mcpsafe: tools that change something need the user's approval of a plan first; show the plan to the user as given. Tool and prompt names start with the name of the server they belong to and "+policy.NameSeparator+".",
		&mcp.ServerCapabilities{
			Tools: &mcp.ToolCapabilities{ListChanged: true},
			// List changes of any server's prompts or resources are
			// relayed (promptsChanged, resourcesChanged).
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true},
			Completions: &mcp.CompletionCapabilities{},
			Logging:     &mcp.LoggingCapabilities{},
		})
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	// Every slot exists before any server starts, so that each claim sees
	// all server names, whatever the order.
	var slots []*slot
	for _, sp := range file.Servers {
		slots = append(slots, g.newSlot(sp))
	}
	// A server that cannot be reached (its command fails, its URL
	// refuses) does not hold the others back: the gateway starts without
	// it and retries it with the restart backoff, its tools listed (and
	// tools/list_changed sent) once it is up. Any other start error, or no
	// server up at all, fails the start.
	var down []*slot
	var errs []error
	for _, sl := range slots {
		srv, err := g.start(ctx, sl)
		if err != nil {
			err = &serverError{sl.spec.Label(), err}
			if _, ok := errors.AsType[*unreachableError](err); !ok {
				return nil, fmt.Errorf("proxy: %w", err)
			}
			errs = append(errs, err)
			down = append(down, sl)
			continue
		}
		g.up(sl, srv)
	}
	if len(down) == len(slots) {
		return nil, fmt.Errorf("proxy: no server of the gateway started: %w", errors.Join(errs...))
	}
	for i, sl := range down {
		g.mu.Lock()
		sl.down = "it has not started yet: " + errs[i].Error()
		gen := sl.gen
		g.mu.Unlock()
		g.memberUp(sl, errs[i])
		g.log.Warn("proxy: gateway server unreachable; serving the others and retrying it", "server", sl.spec.Name, "err", errs[i])
		g.wg.Go(func() { g.retry(sl, gen) })
	}
	return g, nil
}

func gatewayOn(gate mcpsafe.Options, opts GatewayOptions) *Gateway {
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	return &Gateway{gate: gate, log: opts.Logger, opts: opts, slots: map[string]*slot{}, names: map[string]string{},
		sticky: map[string]*stickiness{}, stop: make(chan struct{}), JournalPath: opts.JournalPath}
}

// newMCP is the downstream server: every request goes through the
// gateway's middleware to the server it is for. Subscriptions go to the
// server that listed the URI; the SDK fans their updates out to the
// sessions that subscribed.
func (g *Gateway) newMCP(name, instructions string, caps *mcp.ServerCapabilities) *mcp.Server {
	sopts := &mcp.ServerOptions{Instructions: instructions, Capabilities: caps, Logger: sdkLogger(g.log)}
	if caps.Resources != nil && caps.Resources.Subscribe {
		sopts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
			srv, err := g.resourceServer(req.Params.URI)
			if err != nil {
				return err
			}
			return srv.subscribe(ctx, req)
		}
		sopts.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			srv, err := g.resourceServer(req.Params.URI)
			if err != nil {
				return err
			}
			return srv.unsubscribe(ctx, req)
		}
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: Version}, sopts)
	srv.AddReceivingMiddleware(g.middleware)
	return srv
}

// newSlot makes sp's slot, the gateway's slot of that name from now on.
func (g *Gateway) newSlot(sp *policy.ServerSpec) *slot {
	sl := &slot{spec: sp, known: map[string]bool{}}
	sl.m = &member{name: sp.Name, prefix: sp.Prefix(), g: g, sl: sl,
		server:  func(*mcp.InitializeResult) *mcp.Server { return g.MCP },
		suspect: func(srv *Server) { go g.check(srv) }}
	g.mu.Lock()
	defer g.mu.Unlock()
	// One for every Server that ever runs under this name (see stickiness).
	sticky := g.sticky[sp.Name]
	if sticky == nil {
		sticky = &stickiness{gated: map[string]bool{}, irreversible: map[string]bool{}}
		g.sticky[sp.Name] = sticky
	}
	sl.m.sticky = sticky
	g.slots[sp.Name] = sl
	return sl
}

// starting is told of a server about to register its tools.
func (m *member) starting(srv *Server) {
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	if m.sl.srv == nil { // restarting: route to it as its tools appear
		m.sl.srv, m.sl.early = srv, srv
	}
}

// claim reserves a downstream tool name for m's server, or refuses it
// when another server holds it.
func (m *member) claim(down string) error {
	g, sl := m.g, m.sl
	g.mu.Lock()
	defer g.mu.Unlock()
	if owner, ok := g.names[down]; ok && owner != sl.spec.Name {
		return fmt.Errorf("proxy: server %s: tool %s withheld: server %s already serves that name", sl.spec.Name, prompt.Quote(down), owner)
	}
	// A name stays its server's while that server is down, so that calls
	// to it are refused as unavailable rather than served by another.
	for name, other := range g.slots {
		if other != sl && other.known[down] {
			return fmt.Errorf("proxy: server %s: tool %s withheld: it is server %s's, which is down", sl.spec.Name, prompt.Quote(down), name)
		}
	}
	// A bare name must not look like another server's prefixed one.
	if srvName, _, ok := g.prefixed(down); ok && sl.spec.Bare {
		return fmt.Errorf("proxy: server %s: tool %s withheld: it would read as a tool of server %s", sl.spec.Name, prompt.Quote(down), srvName)
	}
	g.names[down] = sl.spec.Name
	sl.known[down] = true
	return nil
}

func (m *member) release(down string) {
	m.g.mu.Lock()
	defer m.g.mu.Unlock()
	if m.g.names[down] == m.name {
		delete(m.g.names, down)
	}
}

// Close stops every upstream; the shared stores stay open (their opener
// closes them).
func (g *Gateway) Close() error {
	g.mu.Lock()
	g.shut()
	var srvs []*Server
	for _, sl := range g.slots {
		sl.gen++
		if sl.srv != nil {
			srvs = append(srvs, sl.srv)
			sl.srv = nil
		}
	}
	g.mu.Unlock()
	var errs []error
	for _, s := range srvs {
		errs = append(errs, s.Close())
	}
	g.wg.Wait()
	return errors.Join(errs...)
}

// shut closes the gateway (under g.mu): no server is restarted or
// reloaded from then on. It reports whether it was closed already.
func (g *Gateway) shut() (again bool) {
	if !g.closed {
		close(g.stop)
	}
	again, g.closed = g.closed, true
	return again
}

// Server returns the running proxy Server of the named server, nil while
// it is down.
func (g *Gateway) Server(name string) *Server {
	g.mu.Lock()
	defer g.mu.Unlock()
	if sl := g.slots[name]; sl != nil {
		return sl.srv
	}
	return nil
}

// HTTPHandler serves the gateway over streamable HTTP.
func (g *Gateway) HTTPHandler(stateless bool) http.Handler {
	return mcphttp.HTTP{Stateful: !stateless}.MCPHandler(g.MCP)
}

// route finds the server a downstream tool or prompt name belongs to: by
// its prefix, or by the names bare servers serve. srv is nil when that
// server is down; sl is nil when no server has the name.
func (g *Gateway) route(name string) (sl *slot, srv *Server) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if owner, ok := g.names[name]; ok {
		sl = g.slots[owner]
	} else if server, _, ok := g.prefixed(name); ok {
		sl = g.slots[server]
	} else {
		for _, s := range g.slots {
			if s.known[name] {
				sl = s
				break
			}
		}
	}
	if sl == nil {
		return nil, nil
	}
	return sl, sl.srv
}

// prefixed cuts name at policy.NameSeparator when what is before it is the name
// of a server that is not bare (under g.mu).
func (g *Gateway) prefixed(name string) (server, rest string, ok bool) {
	server, rest, ok = strings.Cut(name, policy.NameSeparator)
	return server, rest, ok && g.slots[server] != nil && !g.slots[server].spec.Bare
}

// unavailable refuses a call to what, a name of sl's server, which is
// down. A name that had an output schema gets the refusal without
// structuredContent, as the gate refuses such a tool's calls: a client
// that still holds the schema (TypeScript SDK 1.x validates error results
// too) would otherwise fail the call with a protocol error the model
// never reads.
func (g *Gateway) unavailable(sl *slot, what string) *mcp.CallToolResult {
	g.mu.Lock()
	why := cmp.Or(sl.down, "it is not running")
	schema := sl.outSchema[what]
	g.mu.Unlock()
	r := &mcpsafe.Refusal{Reason: ReasonServerUnavailable,
		Message: fmt.Sprintf("%s belongs to gateway server %s, which is down (%s); nothing was run, and no other server was asked", prompt.Quote(what), prompt.Quote(sl.spec.Name), why)}
	res := r.Result()
	if schema {
		res.StructuredContent = nil
	}
	return res
}

// Pending is the number of approvals issued and not yet redeemed, expired
// or abandoned, over the servers that are up.
func (g *Gateway) Pending() int {
	n := 0
	for _, srv := range g.running() {
		n += srv.Gate.Pending()
	}
	return n
}

// running lists the servers that are up, by name.
func (g *Gateway) running() []*Server {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []*Server
	for _, n := range slices.Sorted(maps.Keys(g.slots)) {
		if srv := g.slots[n].srv; srv != nil {
			out = append(out, srv)
		}
	}
	return out
}
