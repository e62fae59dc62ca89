package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/proxy"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	register("proxy", command{summary: "put the approval gate in front of an existing MCP server (-- CMD ARGS... or --upstream-url)", run: runProxy})
}

func runProxy(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("mcpsafe proxy", "mcpsafe proxy [--policy FILE] [flags] -- CMD ARGS...   (upstream over stdio)\nmcpsafe proxy [--policy FILE] [flags] --upstream-url URL (upstream over streamable HTTP)\nmcpsafe proxy --config GATEWAY.yaml [flags]               (several upstreams; SIGHUP reloads)", stderr)
	policyPath := fl.String("policy", "", "policy file (YAML); default: gate every tool upstream does not mark read-only")
	upstreamURL := fl.String("upstream-url", "", "streamable HTTP endpoint of the upstream server")
	configPath := fl.String("config", "", "gateway configuration (YAML): several upstreams, each with its own policy and audience")
	watch := fl.Duration("watch", 0, "with --config: also reload when the file's content changes, looking this often (default 0: only on SIGHUP)")
	var web mcphttp.HTTP
	web.RegisterFlags(fl)
	cfg := proxy.Config{}
	var gc serverconf.Config
	fl.DurationVar(&cfg.StartTimeout, "upstream-timeout", proxy.DefaultStartTimeout, "how long the upstream may take to start and answer initialize and tools/list")
	gc.RegisterFlags(fl)
	fl.Lookup("audience").Usage += "; default: derived from the upstream command line or URL (required with a shared --ledger)"
	if code, done := parseFlags(fl, args, stdout); done {
		return code
	}
	command := fl.Args()
	if err := web.Check(); err != nil {
		fmt.Fprintln(stderr, "mcpsafe proxy:", err)
		return 2
	}
	if *configPath != "" {
		if *upstreamURL != "" || len(command) > 0 || *policyPath != "" || gc.Audience != "" {
			fmt.Fprintln(stderr, "mcpsafe proxy: with --config, upstreams, policies and audiences are set per server in the file")
			return 2
		}
		return runGateway(*configPath, gc, cfg.StartTimeout, *watch, web, stderr)
	}
	switch {
	case *upstreamURL == "" && len(command) == 0:
		fmt.Fprintln(stderr, "mcpsafe proxy: name the upstream: -- CMD ARGS... or --upstream-url URL")
		return 2
	case *upstreamURL != "" && len(command) > 0:
		fmt.Fprintln(stderr, "mcpsafe proxy: give either -- CMD ARGS... or --upstream-url, not both")
		return 2
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if *policyPath != "" {
		pol, err := policy.Load(*policyPath)
		if err != nil {
			fmt.Fprintln(stderr, errLine("mcpsafe proxy", err))
			return 1
		}
		cfg.Policy = pol
	}
	if *upstreamURL != "" {
		if u, err := url.Parse(*upstreamURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fmt.Fprintf(stderr, "mcpsafe proxy: --upstream-url %q is not an http:// or https:// URL: write the scheme too, e.g. http://127.0.0.1:9000/mcp\n", *upstreamURL)
			return 2
		}
		hc := proxy.UpstreamHTTPClient()
		cfg.Upstream = &mcp.StreamableClientTransport{Endpoint: *upstreamURL, HTTPClient: hc}
		if web.Addr != "" { // clients of both generations: a second session
			cfg.LegacyUpstream = &mcp.StreamableClientTransport{Endpoint: *upstreamURL, HTTPClient: hc}
		}
	} else {
		newCmd := func() *exec.Cmd {
			cmd := exec.Command(command[0], command[1:]...)
			cmd.Stderr = stderr
			return cmd
		}
		pipe, err := proxy.StartUpstream(newCmd())
		if err != nil {
			fmt.Fprintln(stderr, "mcpsafe proxy: starting the upstream:", err)
			return 1
		}
		cfg.Upstream = pipe
		if web.Addr != "" {
			// Clients of both generations: those of 2025-11-25 get a
			// second process when the first speaks 2026-07-28. Over stdio
			// the one client's generation is the first process's.
			cfg.LegacyUpstream = &proxy.CommandLeg{Command: newCmd}
		}
	}
	stop, ctx := newStopper("mcpsafe proxy", gc.ShutdownGrace, stderr)
	defer stop.close()
	gc.Logger = cfg.Logger
	conf, err := proxyStores(ctx, gc, cfg.Policy, cfg.Upstream)
	if err != nil {
		fmt.Fprintln(stderr, errLine("mcpsafe proxy", err))
		return 1
	}
	defer conf.Close() // after srv.Close: the gate journals into the stores until then
	cfg.Gate, cfg.JournalPath = conf.Options, conf.JournalPath
	if conf.Metrics != nil {
		cfg.Metrics = conf.Metrics
	}
	var stdin io.Reader = os.Stdin
	if web.Addr == "" {
		if stdin, cfg.ClientProtocol, err = stdioClient(ctx); err != nil {
			conf.Discard() // it never served
			return 0       // stopped before the client spoke
		}
	}
	srv, err := proxy.NewServer(ctx, cfg)
	if err != nil {
		conf.Discard() // no empty journal stays behind a start that never served
		fmt.Fprintln(stderr, errLine("mcpsafe proxy", err))
		return 1
	}
	defer srv.Close()
	if conf.Metrics != nil {
		conf.Metrics.SetPending(srv.Gate.Pending)
	}
	stop.serve(srv.Gate)
	// Without its upstream the proxy can only fail calls: stop serving.
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		srv.Upstream.Wait()
		cancel(errUpstreamGone)
	}()
	if web.Addr == "" {
		err = srv.ServeStdio(ctx, stdin, os.Stdout)
	} else {
		web.Wrap = func(next http.Handler) http.Handler { return srv.HTTPFastLane(next, web) }
		web.Ready = stop.ready
		err = web.Serve(ctx, srv.MCP, stderr)
	}
	if errors.Is(context.Cause(ctx), errUpstreamGone) {
		fmt.Fprintln(stderr, "mcpsafe proxy: the upstream server went away")
		return 1
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, errLine("mcpsafe proxy", err))
		return 1
	}
	return 0
}

var errUpstreamGone = errors.New("the upstream server went away")

// stdioClient waits for the first line of the client on stdin and returns
// its protocol generation (proxy.ReadClientProtocol), for the upstream
// sessions to be of it, and stdin to serve, that line included; an error
// when ctx ends first.
func stdioClient(ctx context.Context) (io.Reader, string, error) {
	in := bufio.NewReaderSize(os.Stdin, 64<<10) // the stdio lane's buffer: it reads on from in as it is
	got := make(chan string, 1)
	go func() { got <- proxy.ReadClientProtocol(in) }()
	select {
	case v := <-got:
		return in, v, nil
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

// proxyStores opens the stores of a single proxy's gate: its audience is
// --audience or the one derived from the upstream (proxy.DefaultAudience),
// which names the default journal; the policy's mode tells whether the
// approval page opens. The mode and opt-ins themselves are the policy's,
// and the proxy sets them.
func proxyStores(ctx context.Context, gc serverconf.Config, pol *policy.Policy, up mcp.Transport) (*serverconf.Gate, error) {
	if gc.Mode != "" || len(gc.AllowTokenFor) > 0 {
		return nil, errors.New("proxy: mode and token opt-ins belong in the policy file (mode, allow_token_for)")
	}
	if gc.Audience == "" {
		if serverconf.SharedLedger(gc.LedgerURL) {
			scheme, _, _ := strings.Cut(gc.LedgerURL, ":")
			return nil, fmt.Errorf("proxy: the %s: ledger is shared, so set --audience: the same name on every replica of this proxy, and a different one for every other server sharing the ledger or the key; the default audience is derived from the upstream command line or URL and may differ between replicas", scheme)
		}
		gc.Audience = proxy.DefaultAudience(up)
	}
	if pol != nil {
		gc.Mode = pol.Mode
	}
	conf, err := serverconf.Build(ctx, gc)
	if err != nil {
		return nil, err
	}
	conf.Options.Mode, conf.Options.AllowGrantsFor = "", nil
	return conf, nil
}

// runGateway serves several upstreams from one configuration file;
// SIGHUP reloads it (a file that does not load is refused, and the running
// configuration stays).
func runGateway(path string, gate serverconf.Config, startTimeout, watch time.Duration, web mcphttp.HTTP, stderr io.Writer) int {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	file, err := policy.LoadGateway(path)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe proxy:", err)
		return 1
	}
	stop, ctx := newStopper("mcpsafe proxy", gate.ShutdownGrace, stderr)
	defer stop.close()
	if gate.Mode != "" || len(gate.AllowTokenFor) > 0 {
		fmt.Fprintln(stderr, "mcpsafe proxy: mode and token opt-ins belong in each server's policy")
		return 2
	}
	shared := serverconf.SharedLedger(gate.LedgerURL)
	if err := file.CheckAudiences(shared); err != nil {
		fmt.Fprintln(stderr, "mcpsafe proxy:", err)
		return 1
	}
	// The stores need an audience to open; each server's gate sets its
	// own. The default journal is keyed by the configuration file, so that
	// two gateways on default settings can run side by side.
	gate.Audience, gate.Logger = "mcpsafe-gateway", log
	if gate.Instance == "" {
		if abs, err := filepath.Abs(file.Source); err == nil {
			gate.Instance = abs
		}
	}
	conf, err := serverconf.Build(ctx, gate)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe proxy:", err)
		return 1
	}
	defer conf.Close() // after gw.Close
	gopts := proxy.GatewayOptions{Logger: log, StartTimeout: startTimeout, JournalPath: conf.JournalPath, SharedLedger: shared}
	if conf.Metrics != nil {
		gopts.Metrics = conf.Metrics
	}
	var stdin io.Reader = os.Stdin
	if web.Addr == "" {
		if stdin, gopts.ClientProtocol, err = stdioClient(ctx); err != nil {
			conf.Discard() // it never served
			return 0       // stopped before the client spoke
		}
	}
	opts := conf.Options
	opts.Audience = ""
	gw, err := proxy.NewGateway(ctx, file, opts, gopts)
	if err != nil {
		conf.Discard() // no empty journal stays behind a start that never served
		fmt.Fprintln(stderr, errLine("mcpsafe proxy", err))
		return 1
	}
	defer gw.Close()
	if conf.Metrics != nil {
		// Each server's gate keeps its own pending approvals; the one
		// gauge the gateway exposes is their sum.
		conf.Metrics.SetPending(gw.Pending)
	}
	stop.serve(gw)
	reloads := make(chan struct{}, 1)
	ask := func() {
		select {
		case reloads <- struct{}{}:
		default: // one is due already
		}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				ask()
			}
		}
	}()
	if watch > 0 {
		go proxy.WatchFile(ctx, path, watch, ask)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-reloads:
			}
			next, err := policy.LoadGateway(path)
			if err == nil {
				err = gw.Reload(ctx, next)
			}
			if err != nil {
				log.Error("mcpsafe proxy: reload", "err", err)
				continue
			}
			log.Info("mcpsafe proxy: reloaded", "config", path)
		}
	}()
	if web.Addr == "" {
		err = gw.ServeStdio(ctx, stdin, os.Stdout)
	} else {
		web.Wrap = func(next http.Handler) http.Handler { return gw.HTTPFastLane(next, web) }
		web.Ready = stop.ready
		err = web.Serve(ctx, gw.MCP, stderr)
	}
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(stderr, errLine("mcpsafe proxy", err))
		return 1
	}
	return 0
}
