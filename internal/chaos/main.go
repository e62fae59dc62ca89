//go:build linux

// Command chaos is mcpsafe's chaos suite (scripts/chaos): the team
// deployment of docs/USAGE.md run on this machine, under faults, as the
// referee of "nothing lost, nothing run twice".
//
// It starts the approval service as several replicas on one PostgreSQL
// database behind a load balancer, and `mcpsafe files --http --mode
// channel` as several gate replicas sharing a key file and a Redis ledger
// (a redis-server of its own, with an fsync'd append-only file, so that it
// can be restarted). Many client sessions each delete files of their own
// through a random gate replica; the call answers approval_pending with a
// handle, and the client calls again with it, on a random replica, until
// it has an outcome. Approvers decide through the API of random service
// replicas. Meanwhile it kills replicas of both with SIGKILL and restarts
// them, terminates the database's connections (pg_terminate_backend),
// restarts Redis, and fills the disk under one gate's journal.
//
// At the end it prints one line (calls, approvals, executions, the most
// executions of one approval, decisions lost, journals verified, ambiguous
// records and the kills that explain them) and exits 1 on any violation:
// an execution without an approval, a denied call that ran, two
// executions of one call, an approved call that never ran although its
// client held the handle until the end, two decisions on one request, or
// a journal that does not verify.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"
)

type config struct {
	sessions  int
	duration  time.Duration
	approvals int // approval-service replicas
	gates     int // gate replicas
	store     string
	pgURL     string
	bin       string
	dir       string
	faults    bool
	seed      int64
	verbose   bool
}

func main() {
	var c config
	var minutes float64
	flag.IntVar(&c.sessions, "sessions", 50, "concurrent client sessions")
	flag.Float64Var(&minutes, "minutes", 0.5, "how long to inject faults")
	flag.IntVar(&c.approvals, "approvals", 3, "approval-service replicas")
	flag.IntVar(&c.gates, "gates", 2, "gate replicas")
	flag.StringVar(&c.store, "store", "postgres", "the approval service's store: postgres (replicas share it) or file (one replica only)")
	flag.StringVar(&c.pgURL, "pg", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "PostgreSQL to create the run's database in")
	flag.StringVar(&c.bin, "bin", "", "the mcpsafe binary (default: built from this module)")
	flag.StringVar(&c.dir, "dir", "", "working directory to keep (default: a temporary one, removed)")
	flag.BoolVar(&c.faults, "faults", true, "inject faults (false: the same run without them, a control)")
	flag.Int64Var(&c.seed, "seed", time.Now().UnixNano(), "random seed (printed, for a rerun)")
	flag.BoolVar(&c.verbose, "v", false, "log every fault")
	flag.Parse()
	c.duration = time.Duration(minutes * float64(time.Minute))
	s, err := run(context.Background(), c)
	if s != nil {
		fmt.Println(s.line())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(1)
	}
	if v := s.violations(); len(v) > 0 {
		for _, x := range v {
			fmt.Fprintln(os.Stderr, "chaos: VIOLATION:", x)
		}
		os.Exit(1)
	}
}
