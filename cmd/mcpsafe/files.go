package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/serverconf"
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
	fl := flag.NewFlagSet("mcpsafe files", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var roots, optIns strList
	fl.Var(&roots, "root", "a directory the tools may touch (repeatable; required)")
	fl.Var(&optIns, "allow-token-for", "let this irreversible tool use one-time tokens when the client cannot elicit: TOOL or TOOL@YYYY-MM-DD (repeatable; exact names only)")
	mode := fl.String("mode", "auto", "approval path: auto, elicit, token or channel")
	httpAddr := fl.String("http", "", "serve streamable HTTP on this address at /mcp instead of stdio")
	stateful := fl.Bool("http-stateful", false, "keep HTTP sessions (lets legacy clients elicit in-call; pins clients to one replica)")
	cfg := files.Config{Gate: serverconf.Config{Audience: "mcpsafe-files"}}
	cfg.Gate.RegisterFlags(fl)
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "mcpsafe files: unexpected argument %q\n", fl.Arg(0))
		return 2
	}
	cfg.Roots = roots
	cfg.Gate.Mode = mcpsafe.Mode(*mode)
	cfg.Gate.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for _, v := range optIns {
		o, err := files.ParseOptIn(v)
		if err != nil {
			fmt.Fprintln(stderr, "mcpsafe files:", err)
			return 2
		}
		cfg.Gate.AllowTokenFor = append(cfg.Gate.AllowTokenFor, o)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := files.NewServer(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "mcpsafe files:", err)
		return 1
	}
	defer srv.Close()
	if *httpAddr == "" {
		err = srv.MCP.Run(ctx, &mcp.StdioTransport{})
	} else {
		err = serveHTTP(ctx, *httpAddr, srv.HTTPHandler(!*stateful), stderr)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "mcpsafe files:", err)
		return 1
	}
	return 0
}

// serveHTTP serves h at /mcp until ctx ends. It prints the bound address so
// that a caller who asked for port 0 can find it.
func serveHTTP(ctx context.Context, addr string, h http.Handler, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "mcpsafe: serving MCP on http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	}()
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func runKeygen(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("mcpsafe keygen", flag.ContinueOnError)
	fl.SetOutput(stderr)
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: mcpsafe keygen PATH")
		return 2
	}
	if err := mcpsafe.WriteKeyFile(fl.Arg(0)); err != nil {
		fmt.Fprintln(stderr, "mcpsafe keygen:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote a new key to %s (mode 0600). Give every replica the same file.\n", fl.Arg(0))
	return 0
}
