package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/internal/seal"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func init() {
	register("files", command{summary: "serve root-confined file tools behind the approval gate (stdio or --http)", run: runFiles})
	register("keygen", command{summary: "create a key file for sealing approvals (shared by replicas)", run: runKeygen})
}

// strList is a repeatable string flag.
type strList []string

func (s *strList) String() string     { return strings.Join(*s, ",") }
func (s *strList) Set(v string) error { *s = append(*s, v); return nil }

func runFiles(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("mcpsafe files", "mcpsafe files --root DIR [--root DIR ...] [flags]   (stdio, or --http ADDR)", stderr)
	var roots, optIns strList
	fl.Var(&roots, "root", "a directory the tools may touch (repeatable; required)")
	fl.Var(&optIns, "allow-token-for", "let this irreversible tool use one-time tokens when the client cannot elicit: TOOL or TOOL@YYYY-MM-DD (repeatable; exact names only)")
	mode := fl.String("mode", "auto", "approval path: auto (the approval page, else the channel, else a form in the client, else the approval card of an MCP Apps client, else a token), elicit, token, channel, page or card")
	var grants strList
	fl.Var(&grants, "grants", "let approvers of this tool choose a standing grant (calls like it in the same directory, bounded in time and uses): delete_file or move_file (repeatable; naming delete_file is its opt-in)")
	grantTTL := fl.Duration("grant-max-ttl", 0, "with --grants: the longest grant an approver may choose (default 1h)")
	grantUses := fl.Int("grant-max-uses", 0, "with --grants: the most uses an approver may grant, the approving call included (default 20)")
	grantRelayed := fl.Bool("grants-client-relayed", false, "with --grants: an elicitation answer (relayed by the client) may create a grant; without it only the approval channel's authenticated approvers can")
	var web mcphttp.HTTP
	web.RegisterFlags(fl)
	gc := serverconf.Config{Audience: "mcpsafe-files"}
	gc.RegisterFlags(fl)
	if code, done := parseFlags(fl, args, stdout); done {
		return code
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpsafe files: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	if err := web.Check(); err != nil {
		fmt.Fprintln(stderr, "mcpsafe files:", err)
		return 2
	}
	// The default journal is keyed by the roots too: two servers over
	// different directories (the README's Claude Desktop and VS Code
	// entries) run side by side on default flags.
	gc.Instance = rootsInstance(roots)
	g := files.Grants{Tools: grants, MaxTTL: *grantTTL, MaxUses: *grantUses, ClientRelayed: *grantRelayed}
	gc.Mode = mcpsafe.Mode(*mode)
	gc.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, v := range optIns {
		o, err := serverconf.ParseOptIn(v)
		if err != nil {
			fmt.Fprintln(stderr, errLine("mcpsafe files", err))
			return 2
		}
		gc.AllowTokenFor = append(gc.AllowTokenFor, o)
	}
	stop, ctx := newStopper("mcpsafe files", gc.ShutdownGrace, stderr)
	defer stop.close()
	srv, closeAll, err := newFilesServer(ctx, roots, g, gc)
	if err != nil {
		fmt.Fprintln(stderr, errLine("mcpsafe files", flagWords(err)))
		return 1
	}
	defer closeAll()
	stop.serve(srv.Gate)
	if web.Addr == "" {
		err = srv.MCP.Run(ctx, &mcp.StdioTransport{})
	} else {
		web.Ready = stop.ready
		err = web.Serve(ctx, srv.MCP, stderr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, errLine("mcpsafe files", err))
		return 1
	}
	return 0
}

// newFilesServer opens the stores the flags name (refusing a journal inside
// the roots before it exists) and builds the server on them. closeAll
// closes the server, then the stores.
func newFilesServer(ctx context.Context, roots []string, g files.Grants, gc serverconf.Config) (_ *files.Server, closeAll func() error, err error) {
	gc.CheckJournalPath = files.JournalOutsideRoots(roots, g)
	conf, err := serverconf.Build(ctx, gc)
	if err != nil {
		return nil, nil, err
	}
	srv, err := files.NewServer(ctx, files.Config{Roots: roots, Grants: g, Gate: conf.Options, JournalPath: conf.JournalPath})
	if err != nil {
		conf.Close()
		return nil, nil, err
	}
	if conf.Metrics != nil {
		conf.Metrics.SetPending(srv.Gate.Pending)
	}
	return srv, func() error { return errors.Join(srv.Close(), conf.Close()) }, nil
}

// rootsInstance names a files server by its roots, absolute and sorted.
func rootsInstance(roots []string) string {
	abs := make([]string, 0, len(roots))
	for _, r := range roots {
		if a, err := filepath.Abs(r); err == nil {
			r = a
		}
		abs = append(abs, "--root "+strconv.Quote(r))
	}
	slices.Sort(abs)
	return strings.Join(slices.Compact(abs), " ")
}

func runKeygen(args []string, stdout, stderr io.Writer) int {
	fl := newFlags("mcpsafe keygen", "mcpsafe keygen PATH   (writes a new sealing key, mode 0600)", stderr)
	if code, done := parseFlags(fl, args, stdout); done {
		return code
	}
	if fl.NArg() != 1 {
		fl.Usage()
		return 2
	}
	if err := seal.WriteKeyFile(fl.Arg(0)); err != nil {
		fmt.Fprintln(stderr, "mcpsafe keygen:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote a new key to %s (mode 0600). Give every replica the same file.\n", fl.Arg(0))
	return 0
}
