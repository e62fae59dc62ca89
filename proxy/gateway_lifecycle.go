// A gateway server's life: starting its upstream, watching it, restarting
// it with backoff when it exits or stops answering, and shutting down.
package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (g *Gateway) command(sp *policy.ServerSpec) *exec.Cmd {
	cmd := exec.Command(sp.Command[0], sp.Command[1:]...)
	cmd.Dir = sp.Dir
	if len(sp.Env) > 0 {
		cmd.Env = os.Environ()
		for k, v := range sp.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Stderr = cmp.Or(g.opts.Stderr, os.Stderr)
	return cmd
}

// start connects sl's upstream and registers its tools.
func (g *Gateway) start(ctx context.Context, sl *slot) (*Server, error) {
	cfg, err := g.config(sl)
	if err != nil {
		return nil, err
	}
	cfg.member = sl.m
	srv, err := newServer(ctx, cfg)
	g.mu.Lock()
	if err != nil && sl.srv == sl.early {
		sl.srv = nil // it failed after all: down again
	}
	sl.early = nil
	g.mu.Unlock()
	if p, ok := cfg.Upstream.(*UpstreamPipe); ok && err != nil && sl.fixed == nil {
		p.close()
	}
	return srv, err
}

// config is the configuration of sl's next server: the one it was given,
// or a fresh connection to its upstream. A command is started here, on a
// pipe the stdio fast lane can share (see ServeStdio).
func (g *Gateway) config(sl *slot) (Config, error) {
	if sl.fixed != nil {
		return *sl.fixed, nil
	}
	sp := sl.spec
	cfg := Config{Policy: sp.Policy, Gate: g.gate, JournalPath: g.JournalPath, Metrics: g.opts.Metrics, Logger: g.log.With("server", sp.Name), StartTimeout: g.opts.StartTimeout,
		ClientProtocol: g.opts.ClientProtocol}
	// Clients of both generations (no ClientProtocol) get a second
	// session of an upstream that speaks 2026-07-28: over HTTP, and of a
	// command, a second process of it (CommandLeg).
	both := g.opts.ClientProtocol == ""
	var aud string
	if sp.URL != "" {
		cfg.Upstream = &mcp.StreamableClientTransport{Endpoint: sp.URL, HTTPClient: UpstreamHTTPClient()}
		if both {
			cfg.LegacyUpstream = &mcp.StreamableClientTransport{Endpoint: sp.URL, HTTPClient: UpstreamHTTPClient()}
		}
		aud = DefaultAudience(cfg.Upstream)
	} else {
		cmd := g.command(sp)
		aud = DefaultAudience(&mcp.CommandTransport{Command: cmd})
		pipe, err := StartUpstream(cmd)
		if err != nil {
			return Config{}, unreachable(err)
		}
		g.mu.Lock()
		if g.down != nil {
			pipe.setDown(g.down)
		}
		g.mu.Unlock()
		cfg.Upstream = pipe
		if both {
			cfg.LegacyUpstream = &CommandLeg{Command: func() *exec.Cmd { return g.command(sp) }}
		}
	}
	// Unless given, derived from the command line or URL and the server's
	// name: stable across restarts, and distinct between servers of the
	// gateway even when their commands differ only in the environment.
	cfg.Gate.Audience = cmp.Or(sp.Audience, aud+"/"+sp.Name)
	return cfg, nil
}

// up makes srv the running server of sl and watches it.
func (g *Gateway) up(sl *slot, srv *Server) {
	g.memberUp(sl, nil)
	g.mu.Lock()
	sl.srv, sl.down, sl.started = srv, "", true
	sl.gen++
	gen := sl.gen
	closed := g.closed
	g.mu.Unlock()
	if closed {
		srv.Close()
		return
	}
	if sl.fixed != nil {
		return // nothing to restart it from
	}
	g.wg.Go(func() { g.watch(sl, srv, gen) })
}

// watch restarts sl's upstream when its session ends, unless the slot
// was replaced or the gateway closed meanwhile.
func (g *Gateway) watch(sl *slot, srv *Server, gen int) {
	ended := make(chan struct{})
	go func() {
		srv.Upstream.Wait()
		close(ended)
	}()
	tick := time.NewTicker(g.opts.HealthInterval)
	for alive := true; alive; {
		select {
		case <-ended:
			alive = false
		case <-tick.C:
			go g.check(srv)
		}
	}
	tick.Stop()
	g.mu.Lock()
	if sl.gen != gen || g.closed {
		g.mu.Unlock()
		return
	}
	sl.srv, sl.down = nil, "its upstream exited; restarting"
	g.mu.Unlock()
	g.keepSchemas(sl, srv)
	g.memberUp(sl, errors.New("went away"))
	g.log.Warn("proxy: gateway server went away; its tools are withdrawn until it is back", "server", sl.spec.Name)
	srv.Close()
	g.retry(sl, gen)
}

// retry starts sl again with backoff until it is up, replaced, or the
// gateway is closed.
func (g *Gateway) retry(sl *slot, gen int) {
	delay := g.opts.RestartMin
	verb, verbNow := "restarted", "restart"
	g.mu.Lock()
	if !sl.started {
		verb, verbNow = "started", "start"
	}
	g.mu.Unlock()
	for attempt := 1; g.current(sl, gen); attempt++ {
		select {
		case <-time.After(delay):
		case <-g.stop:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		next, err := g.start(ctx, sl)
		cancel()
		if err == nil {
			if !g.current(sl, gen) {
				next.Close()
				return
			}
			g.log.Info("proxy: gateway server "+verb, "server", sl.spec.Name, "attempts", attempt)
			g.up(sl, next)
			return
		}
		g.mu.Lock()
		sl.down = "it failed to " + verbNow + ": " + err.Error()
		g.mu.Unlock()
		g.memberUp(sl, err)
		g.log.Warn("proxy: gateway server failed to "+verbNow, "server", sl.spec.Name, "err", err, "attempts", attempt, "retry_in", delay)
		delay = min(delay*2, g.opts.RestartMax)
	}
}

// keepSchemas notes which of srv's downstream names had an output schema
// upstream, for the refusals of calls to them while sl is down
// (unavailable): a client that listed them may still hold the schema.
func (g *Gateway) keepSchemas(sl *slot, srv *Server) {
	names := map[string]bool{}
	srv.syncMu.Lock()
	for name, r := range srv.registered {
		var def struct {
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if json.Unmarshal([]byte(r.def), &def) == nil && len(def.OutputSchema) > 0 && string(def.OutputSchema) != "null" {
			names[srv.down(name)] = true
		}
	}
	srv.syncMu.Unlock()
	g.mu.Lock()
	sl.outSchema = names
	g.mu.Unlock()
}

// unreachableError is a failure to reach an upstream (its command did not
// start or answer initialize and tools/list, its URL refused): a gateway
// starts without that server and retries it, where any other start error
// (a policy that does not fit the upstream's tools, say) stops the start.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

func unreachable(err error) error { return &unreachableError{err} }

// serverError is err of the gateway's server name, in words without a
// second "proxy: " inside ("server files: the upstream command exited").
type serverError struct {
	label string
	err   error
}

func (e *serverError) Error() string {
	return "server " + e.label + ": " + strings.TrimPrefix(e.err.Error(), "proxy: ")
}
func (e *serverError) Unwrap() error { return e.err }

// memberMetrics is a Metrics that also keeps a health gauge per component
// (metrics.Metrics: mcpsafe_component_up{component="server:NAME"}).
type memberMetrics interface {
	Up(component string, err error)
}

// memberUp sets sl's health gauge, when the metrics keep one: 1 up, 0 down.
func (g *Gateway) memberUp(sl *slot, err error) {
	if m, ok := g.opts.Metrics.(memberMetrics); ok {
		m.Up("server:"+sl.spec.Name, err)
	}
}

// current: sl is still at gen (not replaced nor closed since) and the
// gateway is open.
func (g *Gateway) current(sl *slot, gen int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return sl.gen == gen && !g.closed
}

// check pings srv's upstream and ends its session when it does not
// answer, which watch then handles as an exit.
func (g *Gateway) check(srv *Server) {
	if !srv.checking.CompareAndSwap(false, true) {
		return
	}
	defer srv.checking.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.HealthInterval)
	defer cancel()
	if err := healthCheck(ctx, srv.Upstream); err != nil {
		g.log.Warn("proxy: gateway server does not answer; reconnecting", "server", srv.member.name, "err", err)
		srv.Upstream.Close()
	}
}

// StopAccepting begins shutdown on every server's gate
// (mcpsafe.Gate.StopAccepting): no call is accepted and no Execute starts
// from then on, and no server is restarted or reloaded. The report joins
// the servers' reports.
func (g *Gateway) StopAccepting() mcpsafe.ShutdownReport {
	var rep mcpsafe.ShutdownReport
	g.mu.Lock()
	rep.Again = g.shut()
	g.mu.Unlock()
	for _, s := range g.running() {
		r := s.Gate.StopAccepting()
		rep.Withdrawn = append(rep.Withdrawn, r.Withdrawn...)
		rep.Running += r.Running
	}
	slices.Sort(rep.Withdrawn)
	return rep
}

// Shutdown shuts every server's gate down (mcpsafe.Gate.Shutdown) within
// ctx, in parallel. Close afterwards stops the upstreams.
func (g *Gateway) Shutdown(ctx context.Context) error {
	g.StopAccepting()
	srvs := g.running()
	errs := make([]error, len(srvs))
	var wg sync.WaitGroup
	for i, s := range srvs {
		wg.Go(func() { errs[i] = s.Gate.Shutdown(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// healthCheck asks leg's upstream for an answer, for the gateway's check.
// Protocol 2026-07-28 has no ping (an upstream on it answers "method not
// found", and the SDK client's ping lacks the _meta every 2026-07-28
// request carries, which a stateless HTTP upstream refuses with 400):
// without another request every member on such an upstream would be torn
// down and restarted at each health check, its calls refused meanwhile.
// There it lists the upstream's tools, a request every server answers.
func healthCheck(ctx context.Context, leg *mcp.ClientSession) error {
	if init := leg.InitializeResult(); init != nil && init.ProtocolVersion >= modernProtocol {
		_, err := leg.ListTools(ctx, nil)
		return err
	}
	return leg.Ping(ctx, nil)
}
