package files

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/grants/celscope"
	"github.com/mcpsafe/mcpsafe/safefs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config is what a files server owns, the roots and its grants, and the
// gate's options.
type Config struct {
	Roots []string
	// Grants makes delete_file and move_file offer standing grants.
	Grants Grants
	// Gate configures the gate: keys, ledger, journal, channel. An empty
	// Audience means "mcpsafe-files". The server closes none of the stores
	// it names: whoever opened them closes them after the server.
	Gate mcpsafe.Options
	// JournalPath is the file of Gate.Journal, when it has one: it must lie
	// outside the roots, where the agent cannot reach it. Check it before
	// the journal is opened with JournalOutsideRoots.
	JournalPath string
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
// error: no roots, a root that is a symlink, a journal inside a root, an
// opt-in for a tool it does not have.
func NewServer(ctx context.Context, cfg Config) (_ *Server, err error) {
	s := &Server{}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.FS, err = openRoots(cfg.Roots, &cfg.Grants); err != nil {
		return nil, err
	}
	s.closers = append(s.closers, s.FS.Close)
	if cfg.JournalPath != "" {
		if err := journalOutside(s.FS, cfg.JournalPath); err != nil {
			return nil, err
		}
	}
	s.JournalPath = cfg.JournalPath
	opts := cfg.Gate
	if opts.Audience == "" {
		opts.Audience = "mcpsafe-files"
	}
	if slices.Contains(cfg.Grants.Tools, DeleteFile) {
		// Irreversible: offered only because the operator named it.
		opts.AllowGrantsFor = append(slices.Clip(opts.AllowGrantsFor), DeleteFile)
	}
	if opts.GrantCEL == nil && len(cfg.Grants.Tools) > 0 {
		opts.GrantCEL = celscope.New() // the scopes of files' grants are CEL (grants.go)
	}
	if s.Gate, err = mcpsafe.New(opts); err != nil {
		return nil, err
	}
	// Closed before the journal and ledger (its sweep journals into them),
	// which its caller closes after the server.
	s.closers = append(s.closers, s.Gate.Close)
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

// openRoots checks the roots and grants (filling in the grants' defaults)
// and opens the roots.
func openRoots(roots []string, grants *Grants) (*safefs.FS, error) {
	if len(roots) == 0 {
		return nil, errors.New("no --root given: name the directories the agent may touch (nothing defaults to / or the working directory)")
	}
	if err := grants.check(); err != nil {
		return nil, err
	}
	return safefs.New(roots...)
}

// journalOutside refuses a journal the agent could reach through fsys.
func journalOutside(fsys *safefs.FS, path string) error {
	if fsys.Covers(path) || fsys.Covers(filepath.Dir(path)) {
		return fmt.Errorf("the journal %s lies inside a root the agent can reach: put it elsewhere (--journal)", path)
	}
	return nil
}

// JournalOutsideRoots returns a check of a journal's path, for whoever
// opens the journal before NewServer: it refuses a path inside the roots
// (and roots or grants NewServer would refuse), before the journal exists.
func JournalOutsideRoots(roots []string, grants Grants) func(path string) error {
	return func(path string) error {
		fsys, err := openRoots(roots, &grants)
		if err != nil {
			return err
		}
		defer fsys.Close()
		return journalOutside(fsys, path)
	}
}
