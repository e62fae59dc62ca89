package main

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/loopback"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/witness"
	"golang.org/x/mod/sumdb/note"
)

const witnessUsage = `usage: mcpsafe journal witness serve --dir D --key PUB [--key PUB]... --token-file F [--listen ADDR]
keeps the checkpoints journals send (--journal-witness-url): run it on another machine than the journals`

// journalWitness runs `mcpsafe journal witness serve`. The witness is its
// own command, not a route of `approvals serve`: the approval service's
// bearer tokens are approvers (they can approve calls), and a gated
// server that sends checkpoints must not hold one; the witness also
// belongs in another trust domain than the servers it watches, which the
// approval service need not be.
func journalWitness(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && wantsHelp(args[:1]) {
			fmt.Fprintln(stdout, witnessUsage)
			return 0
		}
		fmt.Fprintln(stderr, witnessUsage)
		return 2
	}
	fl := newFlags("mcpsafe journal witness serve", "mcpsafe journal witness serve --dir D --key PUB [--key PUB]... --token-file F [--listen 127.0.0.1:8444] [--tls-cert C --tls-key K]", stderr)
	dir := fl.String("dir", "", "directory the checkpoints are kept in (one file per journal, append-only)")
	var keys stringList
	fl.Var(&keys, "key", "public key (from mcpsafe journal keygen) whose checkpoints are taken (repeatable)")
	tokenFile := fl.String("token-file", "", "file of bearer tokens (one per line, at least 32 characters each) that may send and read checkpoints")
	listen := fl.String("listen", "127.0.0.1:8444", "address to listen on")
	tlsCert := fl.String("tls-cert", "", "serve HTTPS with this certificate (PEM)")
	tlsKey := fl.String("tls-key", "", "private key for --tls-cert (PEM)")
	plainHTTP := fl.Bool("allow-plain-http", false, "allow plain HTTP on a non-loopback address (behind a TLS proxy)")
	if wantsHelp(args[1:]) {
		fl.SetOutput(stdout)
		fl.Usage()
		return 0
	}
	if err := fl.Parse(args[1:]); err != nil {
		return 2
	}
	if fl.NArg() > 0 || *dir == "" || len(keys) == 0 || *tokenFile == "" {
		fmt.Fprintln(stderr, witnessUsage)
		return 2
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		fmt.Fprintln(stderr, "mcpsafe journal witness serve: --tls-cert and --tls-key go together")
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "mcpsafe journal witness serve:", err)
		return 1
	}
	if *tlsCert == "" && !*plainHTTP && !loopback.Addr(*listen) {
		return fail(fmt.Errorf("%s is not a loopback address: use --tls-cert/--tls-key, a TLS proxy on this host, or --allow-plain-http", *listen))
	}
	var vs []note.Verifier
	for _, k := range keys {
		v, err := journal.LoadCheckpointVerifier(k)
		if err != nil {
			return fail(err)
		}
		vs = append(vs, v)
	}
	toks, err := witness.LoadTokens(*tokenFile)
	if err != nil {
		return fail(err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	w, err := witness.Open(witness.Config{Dir: *dir, Keys: vs, Tokens: toks, Logger: log})
	if err != nil {
		return fail(err)
	}
	defer w.Close()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fail(err)
	}
	// The handler reads a body only after the bearer check, and caps it at
	// one checkpoint; the deadline bounds a slow sender.
	srv := &http.Server{
		Handler:           mcphttp.BodyDeadline(w.Handler(), 10*time.Second),
		ReadHeaderTimeout: mcphttp.DefaultHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
	}
	scheme := "http"
	if *tlsCert != "" {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "mcpsafe journal witness: listening on %s://%s (%d key(s), %d journal(s) held, dir %s)\n", scheme, l.Addr(), len(vs), len(w.List()), *dir)
	if err := serveUntilStopped(srv, l, *tlsCert, *tlsKey, stderr, func() {
		fmt.Fprintln(stderr, "mcpsafe journal witness: stopping: no new checkpoints taken")
	}); err != nil {
		return fail(err)
	}
	return 0
}
