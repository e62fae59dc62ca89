// Command mutate runs mcpsafe's mutation catalogue (package mutants): for
// each mutant it writes the mutated files to a private directory and runs
// the mutant's go test command with an overlay (go help build, -overlay)
// that maps each real file to its mutated copy. The working tree is never
// modified. The overlay is passed through GOFLAGS, so the builds that tests
// start themselves (the e2e tests' go build of cmd/mcpsafe) see it too.
//
// Usage, from anywhere in the repository:
//
//	go run ./mutants/cmd/mutate [-j N] [-timeout D] [-run SUBSTRING]... [-list] [SUBSTRING...]
//
// A mutant is selected when its name contains one of the substrings (all
// mutants when none is given). First every distinct test command of the
// selection runs unmutated: a kill only means something when the unmutated
// suite passes. Then each mutant: a failing go test (or a test binary
// timing out) is "killed"; a passing one "SURVIVED"; a mutant that does not
// compile is "BROKEN" and an anchor that no longer matches "STALE" (neither
// proves anything). The exit status is 0 only when every mutant was killed,
// 1 when some were not, 2 when the run could not be made (baseline failing,
// bad flags).
//
// MUTATION_TIMEOUT (seconds) sets the default of -timeout, MUTATION_JOBS of
// -j, and MUTATION_DIR keeps the mutated files and test logs there.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe/mutants"
)

type substrings []string

func (s *substrings) String() string     { return strings.Join(*s, ",") }
func (s *substrings) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	os.Exit(run())
}

func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "mutate: %s=%q is not a positive integer\n", name, v)
			os.Exit(2)
		}
		return n
	}
	return def
}

func run() int {
	var sel substrings
	jobs := flag.Int("j", envInt("MUTATION_JOBS", max(1, (runtime.GOMAXPROCS(0)+1)/2)), "mutants run in parallel (default GOMAXPROCS/2 rounded up; MUTATION_JOBS)")
	timeout := flag.Duration("timeout", time.Duration(envInt("MUTATION_TIMEOUT", 90))*time.Second, "go test -timeout per command (MUTATION_TIMEOUT in seconds, default 90); a test binary that times out counts as a kill")
	flag.Var(&sel, "run", "run only mutants whose name contains `SUBSTRING` (repeatable; positional arguments too)")
	list := flag.Bool("list", false, "list the selected mutants and exit")
	noBaseline := flag.Bool("no-baseline", false, "skip the unmutated baseline (only when it has just passed)")
	flag.Parse()
	sel = append(sel, flag.Args()...)
	if *jobs < 1 {
		fmt.Fprintln(os.Stderr, "mutate: -j must be at least 1")
		return 2
	}

	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		return 2
	}
	var ms []mutants.Mutant
	for _, m := range mutants.All() {
		if len(sel) == 0 || slices.ContainsFunc(sel, func(s string) bool { return strings.Contains(m.Name, s) }) {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		fmt.Fprintln(os.Stderr, "mutate: no mutants selected")
		return 2
	}
	if *list {
		for _, m := range ms {
			fmt.Printf("%s\t%s\t%s\n", m.Name, strings.Join(m.Packages, " "), m.Run)
		}
		return 0
	}

	work := os.Getenv("MUTATION_DIR")
	keep := work != ""
	if work == "" {
		work, err = os.MkdirTemp("", "mcpsafe-mutation-")
	} else {
		work, err = filepath.Abs(work)
		if err == nil {
			err = os.MkdirAll(work, 0o755)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutate:", err)
		return 2
	}
	// GOFLAGS is split at spaces: the overlay's path must hold none.
	if strings.ContainsAny(work, " \t\n") {
		fmt.Fprintf(os.Stderr, "mutate: the work directory %q holds a space; set MUTATION_DIR\n", work)
		return 2
	}
	r := &runner{root: root, work: work, timeout: *timeout}
	start := time.Now()

	if !*noBaseline {
		cmds := baseline(ms)
		fmt.Printf("== baseline: %d unmutated test commands (%d mutants, %d jobs)\n", len(cmds), len(ms), *jobs)
		failed := false
		parallel(len(cmds), *jobs, func(i int) {
			c := cmds[i]
			t0 := time.Now()
			res := r.goTest(context.Background(), c.pkgs, c.run, "", filepath.Join(work, fmt.Sprintf("baseline-%d.log", i)))
			r.mu.Lock()
			defer r.mu.Unlock()
			if res.err != nil || res.exit != 0 {
				failed = true
				fmt.Fprintf(os.Stderr, "BASELINE FAILS: go test %s -run '%s' (%v)\n%s\n", strings.Join(c.pkgs, " "), c.run, res.err, tail(res.out, 30))
				return
			}
			fmt.Printf("baseline ok: %s%s [%s]\n", strings.Join(c.pkgs, " "), runSuffix(c.run), secs(time.Since(t0)))
		})
		if failed {
			fmt.Fprintf(os.Stderr, "mutate: the unmutated suite fails; no mutant was run (logs in %s)\n", work)
			return 2
		}
	}

	fmt.Printf("== %d mutants\n", len(ms))
	t0 := time.Now()
	results := make([]result, len(ms))
	parallel(len(ms), *jobs, func(i int) {
		res := r.mutant(ms[i])
		results[i] = res
		r.mu.Lock()
		defer r.mu.Unlock()
		fmt.Println(res.line)
		if res.detail != "" {
			fmt.Println(res.detail)
		}
	})

	nKilled := 0
	var notKilled []string
	for i, res := range results {
		if res.status == killed {
			nKilled++
		} else {
			notKilled = append(notKilled, ms[i].Name+" ("+res.status.String()+")")
		}
	}
	fmt.Printf("%d/%d mutants killed (%s for the mutants, %s in all)\n", nKilled, len(ms), secs(time.Since(t0)), secs(time.Since(start)))
	if len(notKilled) > 0 {
		fmt.Printf("not killed: %s\n", strings.Join(notKilled, ", "))
		fmt.Printf("mutated files and test logs: %s\n", work)
		return 1
	}
	if !keep {
		os.RemoveAll(work)
	}
	return 0
}

// repoRoot is the directory of the main module's go.mod.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the mcpsafe module")
	}
	return filepath.Dir(gomod), nil
}

type command struct {
	pkgs []string
	run  string
}

// baseline returns the unmutated test commands that cover every selected
// mutant's command: per set of packages, one run whose filter is the union
// of the mutants' filters (no filter when one mutant has none). A filter
// with a "/" (a subtest level) is kept as a command of its own, since in a
// union its second level would apply to every test of the first.
func baseline(ms []mutants.Mutant) []command {
	type group struct {
		pkgs []string
		runs []string
		all  bool
	}
	var order []string
	groups := map[string]*group{}
	var own []command
	for _, m := range ms {
		if strings.Contains(m.Run, "/") {
			c := command{m.Packages, m.Run}
			if !slices.ContainsFunc(own, func(o command) bool { return slices.Equal(o.pkgs, c.pkgs) && o.run == c.run }) {
				own = append(own, c)
			}
			continue
		}
		key := strings.Join(m.Packages, " ")
		g := groups[key]
		if g == nil {
			g = &group{pkgs: m.Packages}
			groups[key] = g
			order = append(order, key)
		}
		switch {
		case m.Run == "":
			g.all = true
		case strings.ContainsAny(m.Run, "()[]"):
			if !slices.Contains(g.runs, m.Run) {
				g.runs = append(g.runs, m.Run)
			}
		default: // a plain alternation: each name once
			for _, alt := range strings.Split(m.Run, "|") {
				if !slices.Contains(g.runs, alt) {
					g.runs = append(g.runs, alt)
				}
			}
		}
	}
	var cmds []command
	for _, key := range order {
		g := groups[key]
		run := ""
		if !g.all {
			run = strings.Join(g.runs, "|")
		}
		cmds = append(cmds, command{g.pkgs, run})
	}
	return append(cmds, own...)
}

type status int

const (
	killed status = iota
	survived
	broken
	stale
	hung
)

func (s status) String() string {
	return [...]string{"killed", "SURVIVED", "BROKEN", "STALE", "TIMEOUT"}[s]
}

type result struct {
	status       status
	line, detail string
}

type runner struct {
	root, work string
	timeout    time.Duration
	mu         sync.Mutex // serialises output
}

type testRun struct {
	exit int
	out  []byte
	err  error // the command could not run, or overran its hard deadline
}

var errDeadline = errors.New("go test overran its hard deadline (compilation included) and was killed")

// goTest runs go test on pkgs in the repository, with the overlay (if any)
// passed through GOFLAGS so that nested go commands see it, and writes the
// output to logFile too.
func (r *runner) goTest(ctx context.Context, pkgs []string, run, overlay, logFile string) testRun {
	args := []string{"test", "-count=1", "-vet=off", "-failfast", "-timeout", r.timeout.String()}
	if run != "" {
		args = append(args, "-run", run)
	}
	args = append(args, pkgs...)
	// The test binary's own -timeout catches a hang; this deadline only
	// guards against a go command that never returns (it covers compiling
	// and linking on a loaded machine too, so it is generous).
	ctx, cancel := context.WithTimeout(ctx, 2*r.timeout+5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = r.root
	env := os.Environ()
	if overlay != "" {
		flags := strings.TrimSpace(os.Getenv("GOFLAGS") + " -overlay=" + overlay)
		env = append(env, "GOFLAGS="+flags)
	}
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	// The whole process group goes on a hard deadline: go test, the test
	// binaries and whatever they started.
	killGroupOnCancel(cmd)
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	os.WriteFile(logFile, out.Bytes(), 0o644)
	res := testRun{out: out.Bytes()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.err = errDeadline
	case errors.As(err, &exit):
		res.exit = exit.ExitCode()
	case err != nil:
		res.err = err
	}
	return res
}

var (
	buildFailed = regexp.MustCompile(`(?m)\[(build|setup) failed\]|^# github\.com/mcpsafe/`)
	failedTest  = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
)

// mutant applies m through an overlay and runs its test command.
func (r *runner) mutant(m mutants.Mutant) result {
	t0 := time.Now()
	files, err := m.Apply(r.root)
	if err != nil {
		return result{status: stale, line: fmt.Sprintf("STALE: %s (%v; fix its anchor in mutants/)", m.Name, err)}
	}
	dir := filepath.Join(r.work, m.Name)
	os.RemoveAll(dir)
	replace := map[string]string{}
	for f, b := range files {
		dst := filepath.Join(dir, "files", filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return result{status: broken, line: fmt.Sprintf("BROKEN: %s (%v)", m.Name, err)}
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return result{status: broken, line: fmt.Sprintf("BROKEN: %s (%v)", m.Name, err)}
		}
		replace[filepath.Join(r.root, filepath.FromSlash(f))] = dst
	}
	ov, _ := json.Marshal(map[string]any{"Replace": replace})
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		return result{status: broken, line: fmt.Sprintf("BROKEN: %s (%v)", m.Name, err)}
	}
	res := r.goTest(context.Background(), m.Packages, m.Run, overlay, filepath.Join(dir, "test.log"))
	took := secs(time.Since(t0))
	switch {
	case errors.Is(res.err, errDeadline):
		return result{status: hung, line: fmt.Sprintf("TIMEOUT: %s (%v; proves nothing, rerun with a larger MUTATION_TIMEOUT) [%s]", m.Name, res.err, took)}
	case res.err != nil:
		return result{status: broken, line: fmt.Sprintf("BROKEN: %s (go test did not run: %v)", m.Name, res.err)}
	case res.exit == 0:
		return result{status: survived, line: fmt.Sprintf("SURVIVED: %s (%s) [%s]", m.Name, m.Why, took)}
	case buildFailed.Match(res.out):
		return result{status: broken, line: fmt.Sprintf("BROKEN: %s (does not compile; a mutant must build)", m.Name), detail: head(res.out, 8)}
	}
	// Name the test that caught it, so that a kill by an unrelated flaky
	// test can be spotted.
	by := "a failing package"
	if s := failedTest.FindSubmatch(res.out); s != nil {
		by = string(s[1])
	}
	if bytes.Contains(res.out, []byte("panic: test timed out")) {
		by = "timeout (" + by + ")"
	}
	return result{status: killed, line: fmt.Sprintf("killed: %s [%s, by %s]", m.Name, took, by)}
}

// parallel calls f(0..n-1) on at most jobs goroutines at once.
func parallel(n, jobs int, f func(int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, n) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

func secs(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds())) }

func runSuffix(run string) string {
	if run == "" {
		return ""
	}
	return " -run '" + run + "'"
}

func head(b []byte, n int) string {
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "FAIL") || l == "" {
			continue
		}
		if keep = append(keep, "    "+l); len(keep) == n {
			break
		}
	}
	return strings.Join(keep, "\n")
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
