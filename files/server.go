package files

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/safefs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config is everything `mcpsafe files` takes on its command line: the
// roots, and the gate options every gated server shares.
type Config struct {
	Roots []string
	// Grants makes delete_file and move_file offer standing grants.
	Grants Grants
	// Gate configures the gate, keys, ledger, journal and channel. An empty
	// Audience means "mcpsafe-files". The journal must lie outside the roots.
	Gate serverconf.Config
}

// Server is a ready `mcpsafe files` server.
type Server struct {
	MCP  *mcp.Server
	Gate *mcpsafe.Gate
	FS   *safefs.FS

	JournalPath string
	closers     []func() error
}

// Close releases the server's files, journal and ledger.
func (s *Server) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}

// NewServer checks cfg and builds the server. Anything doubtful is a startup
// error: no roots, a root that is a symlink, a journal inside a root, a
// shared ledger without a shared key, an opt-in for a tool it does not have.
func NewServer(ctx context.Context, cfg Config) (_ *Server, err error) {
	if len(cfg.Roots) == 0 {
		return nil, errors.New("no --root given: name the directories the agent may touch (nothing defaults to / or the working directory)")
	}
	if err := cfg.Grants.check(); err != nil {
		return nil, err
	}
	s := &Server{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.FS, err = safefs.New(cfg.Roots...); err != nil {
		return nil, err
	}
	s.closers = append(s.closers, s.FS.Close)

	gc := cfg.Gate
	if gc.Audience == "" {
		gc.Audience = "mcpsafe-files"
	}
	outer := gc.CheckJournalPath
	gc.CheckJournalPath = func(path string) error {
		if s.FS.Covers(path) || s.FS.Covers(filepath.Dir(path)) {
			return fmt.Errorf("the journal %s lies inside a root the agent can reach: put it elsewhere (--journal)", path)
		}
		if outer != nil {
			return outer(path)
		}
		return nil
	}
	conf, err := serverconf.Build(ctx, gc)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, conf.Close)
	s.JournalPath = conf.JournalPath
	opts := conf.Options
	if slices.Contains(cfg.Grants.Tools, DeleteFile) {
		// Irreversible: offered only because the operator named it.
		opts.AllowGrantsFor = append(opts.AllowGrantsFor, DeleteFile)
	}
	if s.Gate, err = mcpsafe.New(opts); err != nil {
		return nil, err
	}
	// Closed before the journal and ledger: its sweep journals into them.
	s.closers = append(s.closers, s.Gate.Close)
	if conf.Metrics != nil {
		conf.Metrics.SetPending(s.Gate.Pending)
	}
	s.MCP = mcp.NewServer(&mcp.Implementation{Name: "mcpsafe-files", Version: Version}, &mcp.ServerOptions{
		Instructions: "File tools confined to: " + strings.Join(s.FS.Roots(), ", ") +
			". delete_file and move_file need the user's approval of a plan first; show the plan to the user as given.",
	})
	if err := register(s.MCP, s.Gate, s.FS, cfg.Grants); err != nil {
		return nil, err
	}
	if err := s.Gate.CheckOptIns(); err != nil {
		return nil, err
	}
	return s, nil
}

// Version is reported to clients.
var Version = "dev"

// ParseOptIn reads one --allow-token-for value: TOOL, or TOOL@YYYY-MM-DD.
func ParseOptIn(v string) (mcpsafe.OptIn, error) { return serverconf.ParseOptIn(v) }

// HTTPHandler serves the server over streamable HTTP. Stateless mode keeps
// no session between requests, so replicas behind a load balancer can serve
// any request (approvals then travel as tokens or MRTR request state);
// stateful mode lets legacy clients elicit in-call but pins a client to the
// replica that holds its session.
func (s *Server) HTTPHandler(stateless bool) http.Handler {
	return mcphttp.HTTP{Stateful: !stateless}.MCPHandler(s.MCP)
}
