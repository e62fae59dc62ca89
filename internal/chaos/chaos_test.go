//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The chaos suite in its small form, in every run of scripts/test: the
// team deployment under kill -9, store restarts, connection cuts and a
// full disk, judged by the same accounting as the full run (scripts/chaos
// --sessions 200 --minutes 10). CI must never pass by skipping: the
// services it needs fail the test under CI=true.
func TestChaosSmall(t *testing.T) {
	for _, tool := range []string{"redis-server", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing(t, tool+" is not installed (scripts/services installs it)")
		}
	}
	if os.Geteuid() != 0 {
		missing(t, "the chaos suite mounts a small tmpfs for the full disk, which needs root")
	}
	c := config{sessions: 50, duration: 30 * time.Second, approvals: 3, gates: 2, store: "postgres",
		pgURL: "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", faults: true, seed: time.Now().UnixNano()}
	if v := os.Getenv("MCPSAFE_CHAOS_STORE"); v != "" { // file: one replica, before replicas share PostgreSQL
		c.store = v
		if v == "file" {
			c.approvals = 1
		}
	}
	s, err := run(context.Background(), c)
	if err != nil {
		if strings.Contains(err.Error(), "PostgreSQL at") {
			missing(t, err.Error())
		}
		t.Fatal(err)
	}
	t.Log(s.line())
	for _, v := range s.violations() {
		t.Error("VIOLATION: " + v)
	}
	if s.f.gateKills.Load()+s.f.approvalKills.Load() == 0 {
		t.Error("the run killed nothing: it tested no fault")
	}
}

func missing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("SKIPPED: " + msg)
}
