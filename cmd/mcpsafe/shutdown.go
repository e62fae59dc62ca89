package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mcpsafe/mcpsafe"
)

// gracefulStop is what a gated server stops through: the gate (files,
// proxy) or every gate of the gateway.
type gracefulStop interface {
	StopAccepting() mcpsafe.ShutdownReport
	Shutdown(ctx context.Context) error
}

// stopper turns SIGINT/SIGTERM into an orderly stop of a gated server: on
// the first signal the gate stops accepting calls and starting Executes,
// withdraws every pending approval and gives running Executes the grace;
// one line on stderr says so; then ctx ends and the server stops serving.
// A second signal exits at once.
type stopper struct {
	name   string
	grace  time.Duration
	stderr io.Writer
	sigs   chan os.Signal
	cancel context.CancelFunc

	mu     sync.Mutex
	target gracefulStop
	begun  atomic.Bool // a signal came: /readyz fails from then on
}

// ready is the server's readiness (mcphttp.HTTP.Ready): an error once a
// stop began, so a load balancer sends no new calls while the gate drains.
func (s *stopper) ready() error {
	if s.begun.Load() {
		return errStopping
	}
	return nil
}

var errStopping = errors.New("stopping")

// newStopper starts listening for signals. ctx ends when the server
// should stop serving: at once when a signal comes before serve names the
// server, else once its gate has shut down.
func newStopper(name string, grace time.Duration, stderr io.Writer) (*stopper, context.Context) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &stopper{name: name, grace: grace, stderr: stderr, sigs: make(chan os.Signal, 2), cancel: cancel}
	signal.Notify(s.sigs, os.Interrupt, syscall.SIGTERM)
	go s.run(ctx)
	return s, ctx
}

// serve names the server the first signal stops.
func (s *stopper) serve(t gracefulStop) {
	s.mu.Lock()
	s.target = t
	s.mu.Unlock()
}

// close stops listening; deferred by the command.
func (s *stopper) close() {
	signal.Stop(s.sigs)
	s.cancel()
}

func (s *stopper) run(ctx context.Context) {
	var sig os.Signal
	select {
	case sig = <-s.sigs:
	case <-ctx.Done():
		return
	}
	s.begun.Store(true)
	go func() {
		select {
		case <-s.sigs:
			fmt.Fprintf(s.stderr, "%s: second signal: exiting now\n", s.name)
			os.Exit(1)
		case <-ctx.Done():
		}
	}()
	s.mu.Lock()
	t := s.target
	s.mu.Unlock()
	if t == nil {
		fmt.Fprintf(s.stderr, "%s: stopping (%s)\n", s.name, sig)
		s.cancel()
		return
	}
	rep := t.StopAccepting()
	fmt.Fprintf(s.stderr, "%s: stopping (%s): no new calls; %s (grace %s)\n", s.name, sig, rep, s.grace)
	gctx, cancel := context.WithTimeout(context.Background(), s.grace)
	err := t.Shutdown(gctx)
	cancel()
	if err != nil {
		fmt.Fprintf(s.stderr, "%s: the shutdown grace (%s) ended with calls still running: they were cancelled and journaled ambiguous\n", s.name, s.grace)
	}
	s.cancel()
}

// exitOnSecondSignal makes a second SIGINT/SIGTERM, once a stop began,
// end the process at once. It stops listening when ctx ends.
func exitOnSecondSignal(ctx context.Context, name string, stderr io.Writer) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		defer signal.Stop(sigs)
		select {
		case <-sigs:
			fmt.Fprintf(stderr, "%s: second signal: exiting now\n", name)
			os.Exit(1)
		case <-ctx.Done():
		}
	}()
}
