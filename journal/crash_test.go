package journal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// The crash tests re-run this test binary as a child that writes to a
// journal and dies without Close: a real process exit, not a simulation.
const crashEnv = "MCPSAFE_JOURNAL_CRASH_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(crashEnv); mode != "" {
		os.Exit(crashChild(mode, os.Getenv(crashEnv+"_PATH")))
	}
	os.Exit(m.Run())
}

func crashChild(mode, path string) int {
	if step, ok := strings.CutPrefix(mode, "rotate-die-at-"); ok {
		return rotateCrashChild(step, path)
	}
	j, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	switch mode {
	case "approve-then-die":
		for _, r := range []Record{
			{Call: "done", Tool: "rm", Decision: ClientAccepted},
			{Call: "done", Tool: "rm", Decision: Executed},
			{Call: "mid-execute", Tool: "rm", Principal: "alice", Summary: "remove /srv/x", Decision: TokenRedeemed},
		} {
			if err := j.Append(ctx, r); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
		os.Exit(3) // dies between approval and outcome
	case "flood":
		// It says "flooding" once 200 records are written, and goes on
		// writing until it is killed.
		var written atomic.Int64
		for w := range 16 {
			go func() {
				for i := 0; ; i++ {
					call := fmt.Sprintf("w%d-%d", w, i)
					for _, d := range []string{ClientAccepted, Executed} {
						if j.Append(ctx, Record{Call: call, Tool: "rm", Decision: d}) == nil && written.Add(1) == 200 {
							fmt.Println("flooding")
						}
					}
				}
			}()
		}
		select {}
	}
	return 2
}

func startChild(t *testing.T, mode, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+mode, crashEnv+"_PATH="+path)
	cmd.Stderr = os.Stderr
	return cmd
}

func TestCrashBetweenApprovalAndOutcome(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	err := startChild(t, "approve-then-die", path).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("child: %v", err)
	}
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	lines := readLines(t, path)
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 3 + 1 ambiguous", len(lines))
	}
	rec, _ := parseLine(lines[3])
	if rec.Decision != Ambiguous || rec.Call != "mid-execute" || rec.Principal != "alice" || rec.Summary != "remove /srv/x" {
		t.Fatalf("got %+v", rec)
	}
}

func TestKilledWriterLeavesVerifiableJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	cmd := startChild(t, "flood", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "flooding\n" {
		t.Fatalf("the child said %q, want flooding", line)
	}
	cmd.Process.Kill() // SIGKILL mid-write: no deferred code, no Close
	cmd.Wait()

	sum, err := VerifyFile(path)
	var te *TamperError
	if errors.As(err, &te) {
		t.Fatalf("a killed writer left what looks like tampering: %v", err)
	}
	if sum.Records < 200 {
		t.Fatalf("%d records verify; the child had written 200 before it was killed", sum.Records)
	}
	j, err := Open(path)
	if err != nil {
		t.Fatalf("Open after kill: %v", err)
	}
	j.Close()
	after, err := VerifyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Each approval the child wrote without its outcome is now ambiguous.
	if after.Unresolved != 0 || after.Ambiguous != sum.Unresolved {
		t.Fatalf("before %+v after %+v", sum, after)
	}
	if !strings.HasPrefix(after.String(), "intact: ") {
		t.Fatal(after.String())
	}
}
