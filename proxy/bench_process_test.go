package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Benchmarks of the proxy as its own process, as users run it: its CPU and
// memory are read from /proc, apart from the benchmark's own. The proxy
// and the minimal relay run as this test binary re-executed (see
// benchModeEnv in TestMain), with the same code the mcpsafe binary runs.

const (
	benchModeEnv     = "MCPSAFE_PROXY_BENCH_MODE" // relay | http-proxy
	benchUpstreamEnv = "MCPSAFE_PROXY_BENCH_UPSTREAM"
)

func runBenchProcess(mode string) int {
	switch mode {
	case "relay":
		var up []string
		if err := json.Unmarshal([]byte(os.Getenv(benchUpstreamEnv)), &up); err != nil || len(up) == 0 {
			fmt.Fprintln(os.Stderr, benchUpstreamEnv+": want a JSON array")
			return 2
		}
		return minimalRelay(up)
	case "http-proxy", "http-proxy-stateful":
		return serveHTTPProxy(os.Getenv(benchUpstreamEnv), mode == "http-proxy-stateful")
	case "http-gateway":
		return serveHTTPGateway(os.Getenv(benchUpstreamEnv))
	case "http-relay":
		return serveHTTPRelay(os.Getenv(benchUpstreamEnv))
	}
	fmt.Fprintln(os.Stderr, "unknown bench mode", mode)
	return 2
}

// minimalRelay is the floor a stdio proxy cannot go below: it passes each
// line on as is, parsing only method, id and tool name, as any relay that
// routes messages must.
func minimalRelay(up []string) int {
	cmd := exec.Command(up[0], up[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		return 1
	}
	go func() {
		relayLines(os.Stdin, in)
		in.Close()
	}()
	relayLines(out, os.Stdout)
	cmd.Wait()
	return 0
}

func relayLines(r io.Reader, w io.Writer) {
	br := bufio.NewReaderSize(r, 64<<10)
	var peek struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			json.Unmarshal(line, &peek)
			if _, werr := w.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// serveHTTPProxy runs the proxy over streamable HTTP in front of an HTTP
// upstream, as `mcpsafe proxy --http ADDR --upstream-url URL` does, and
// prints its address on stdout.
func serveHTTPProxy(upstream string, stateful bool) int {
	s, err := NewServer(context.Background(), Config{
		Upstream:       &mcp.StreamableClientTransport{Endpoint: upstream, HTTPClient: UpstreamHTTPClient()},
		LegacyUpstream: &mcp.StreamableClientTransport{Endpoint: upstream, HTTPClient: UpstreamHTTPClient()},
		Gate:           stores(nil, serverconfFor(filepath.Join(os.TempDir(), fmt.Sprintf("mcpsafe-bench-%d.jsonl", os.Getpid())))),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1
	}
	fmt.Printf("http://%s/mcp\n", l.Addr())
	// The idle-session measurement opens 65 sessions from one address:
	// above the default per-caller cap, which is not what it measures.
	web := mcphttp.HTTP{Stateful: stateful, MaxSessionsPerClient: 1000}
	// As web.Serve wraps it (less authentication), fast lane included.
	h := s.HTTPFastLane(web.MCPHandler(s.MCP), web)
	http.Serve(l, mcphttp.LimitBodies(h, mcphttp.DefaultBodyTimeout, mcphttp.DefaultMaxBodyBytes))
	return 0
}

// serveHTTPGateway runs a gateway over streamable HTTP, as `mcpsafe proxy
// --config FILE --http ADDR` does, with two members on the same HTTP
// upstream: "bare" (prefix: false, the names clients call, which the HTTP
// fast lane serves) and "pre" (prefixed, on the SDK path). It prints its
// address on stdout.
func serveHTTPGateway(upstream string) int {
	dir, err := os.MkdirTemp("", "mcpsafe-bench-gateway")
	if err != nil {
		return 1
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "gateway.yaml")
	yaml := "servers:\n  bare:\n    url: " + upstream + "\n    prefix: false\n  pre:\n    url: " + upstream + "\n"
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		return 1
	}
	f, err := policy.LoadGateway(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	g, err := NewGateway(context.Background(), f, stores(nil, serverconfFor(filepath.Join(dir, "journal.jsonl"))),
		GatewayOptions{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer g.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1
	}
	fmt.Printf("http://%s/mcp\n", l.Addr())
	web := mcphttp.HTTP{MaxSessionsPerClient: 1000}
	h := g.HTTPFastLane(web.MCPHandler(g.MCP), web)
	http.Serve(l, mcphttp.LimitBodies(h, mcphttp.DefaultBodyTimeout, mcphttp.DefaultMaxBodyBytes))
	return 0
}

// serveHTTPRelay is the floor an HTTP proxy process cannot go below: the
// standard library's reverse proxy, forwarding each request and streaming
// each response as bytes, parsing no JSON at all (so it could not gate or
// route anything). It pays what every proxy in its own process pays: one
// more HTTP server and client, and a hop through the kernel each way.
func serveHTTPRelay(upstream string) int {
	target, err := url.Parse(upstream)
	if err != nil {
		return 2
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = UpstreamHTTPClient().Transport
	rp.FlushInterval = -1 // SSE responses stream as they come
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 1
	}
	fmt.Printf("http://%s%s\n", l.Addr(), target.Path)
	http.Serve(l, rp)
	return 0
}

// child is a benchmark subprocess whose CPU and memory are measured.
type child struct {
	cmd *exec.Cmd
}

// cpu is the process's own user+system time so far.
func (c child) cpu(b *testing.B) time.Duration {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the parenthesised command name; utime and stime are
	// the 14th and 15th fields overall, in clock ticks (100 per second).
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// rss is the process's resident set in KiB.
func (c child) rss(b *testing.B) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(raw)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kib
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

func benchChild(b *testing.B, mode string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	if mode != "" {
		cmd.Env = append(cmd.Env, benchModeEnv+"="+mode)
	}
	cmd.Stderr = os.Stderr
	return cmd
}

// stdioClient speaks protocol 2025-11-25, the generation of the npm
// filesystem server (and of most desktop clients), on every path alike.
func stdioClient(b *testing.B, cmd *exec.Cmd) *mcp.ClientSession {
	b.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// BenchmarkProxyProcessFilesystem: read_text_file against the real npm
// filesystem server over stdio, interleaved: direct, through the proxy
// process, and through the minimal relay. Reports the p50 ratios to direct
// and the CPU each intermediary spends per call.
func BenchmarkProxyProcessFilesystem(b *testing.B) {
	fsBin := fsServerBin(b)
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(dir, "f.txt"), "some content\n")
	upstream, _ := json.Marshal([]string{fsBin, dir})
	policy := filepath.Join(b.TempDir(), "policy.yaml")
	writeFile(b, policy, "")

	direct := stdioClient(b, exec.Command(fsBin, dir))
	proxyCmd := benchChild(b, "", serveEnv+"=1", "MCPSAFE_PROXY_TEST_POLICY="+policy,
		"MCPSAFE_PROXY_TEST_UPSTREAM="+string(upstream), "MCPSAFE_PROXY_TEST_JOURNAL="+filepath.Join(b.TempDir(), "j.jsonl"))
	via := stdioClient(b, proxyCmd)
	relayCmd := benchChild(b, "relay", benchUpstreamEnv+"="+string(upstream))
	relayed := stdioClient(b, relayCmd)
	proxyProc, relayProc := child{proxyCmd}, child{relayCmd}

	read := func(int) map[string]any { return map[string]any{"path": filepath.Join(dir, "f.txt")} }
	var cpu0Proxy, cpu0Relay time.Duration
	stats := compareFrom(b, []*benchPath{
		{name: "fs_direct_read", cs: direct, tool: "read_text_file", args: read},
		{name: "fs_proxy_process_read", cs: via, tool: "read_text_file", args: read},
		{name: "fs_minimal_relay_read", cs: relayed, tool: "read_text_file", args: read},
	}, func() { cpu0Proxy, cpu0Relay = proxyProc.cpu(b), relayProc.cpu(b) })
	proxyCPU := float64((proxyProc.cpu(b) - cpu0Proxy).Microseconds()) / float64(b.N)
	relayCPU := float64((relayProc.cpu(b) - cpu0Relay).Microseconds()) / float64(b.N)
	benchLine(b, stats, "proxy_stdio_passthrough_vs_direct", "fs_proxy_process_read", "fs_direct_read")
	benchLine(b, stats, "minimal_relay_stdio_vs_direct", "fs_minimal_relay_read", "fs_direct_read")
	b.ReportMetric(proxyCPU, "proxy_cpu_µs/call")
	b.ReportMetric(relayCPU, "relay_cpu_µs/call")
	if b.N >= 50 && relayCPU > 0 {
		fmt.Printf("BENCH proxy_cpu_per_passthrough_call_vs_minimal_relay ratio=%.2f proxy_cpu=%.0fµs relay_cpu=%.0fµs n=%d\n",
			proxyCPU/relayCPU, proxyCPU, relayCPU, b.N)
	}
}

func httpClients() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}}
}

func httpSession(b *testing.B, hc *http.Client, url string, opts *mcp.ClientSessionOptions) *mcp.ClientSession {
	b.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func startHTTPChild(b *testing.B, mode, upstream string) (child, string) {
	b.Helper()
	cmd := benchChild(b, mode, benchUpstreamEnv+"="+upstream)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("the proxy process did not report its address: %v", err)
	}
	return child{cmd}, strings.TrimSpace(line)
}

// throughput runs calls pass-through calls spread over n concurrent
// sessions and returns calls per second.
func throughput(b *testing.B, sessions []*mcp.ClientSession, calls int) float64 {
	var wg sync.WaitGroup
	per := calls / len(sessions)
	t0 := time.Now()
	for _, cs := range sessions {
		wg.Go(func() {
			for i := range per {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"n": i}})
				if err != nil {
					b.Errorf("echo: %v", err)
					return
				}
				if res.IsError {
					b.Errorf("echo: %s", text(res))
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(per*len(sessions)) / time.Since(t0).Seconds()
}

// BenchmarkProxyProcessHTTP: pass-through calls over streamable HTTP with 1,
// 8 and 64 concurrent clients, direct to a Go upstream, through the proxy
// process in front of it, through a gateway process whose unprefixed member
// it is (both on the HTTP fast lane), and through httputil.ReverseProxy
// (the floor), alternating rounds; then the proxy's resident memory per
// idle stateful session. The goal: the proxy and the gateway at >= 0.85 of
// the floor's throughput, measured in the same run.
func BenchmarkProxyProcessHTTP(b *testing.B) {
	u, _ := newGoUpstream(b)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return u.srv },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	b.Cleanup(hs.Close)
	_, proxyURL := startHTTPChild(b, "http-proxy", hs.URL)
	_, relayURL := startHTTPChild(b, "http-relay", hs.URL)
	_, gatewayURL := startHTTPChild(b, "http-gateway", hs.URL)
	hc := httpClients()
	for range b.N { // b.N rounds of every concurrency; the figures are the last round's
		for _, n := range []int{1, 8, 64} {
			var direct, via, gw, relay []*mcp.ClientSession
			for range n {
				direct = append(direct, httpSession(b, hc, hs.URL, nil))
				via = append(via, httpSession(b, hc, proxyURL, nil))
				gw = append(gw, httpSession(b, hc, gatewayURL, nil))
				relay = append(relay, httpSession(b, hc, relayURL, nil))
			}
			calls := max(400, 20*n)
			var d, p, g, r []float64
			for range 3 {
				d = append(d, throughput(b, direct, calls))
				p = append(p, throughput(b, via, calls))
				g = append(g, throughput(b, gw, calls))
				r = append(r, throughput(b, relay, calls))
			}
			slices.Sort(d)
			slices.Sort(p)
			slices.Sort(g)
			slices.Sort(r)
			b.ReportMetric(p[1]/d[1], fmt.Sprintf("c%d_ratio", n))
			b.ReportMetric(r[1]/d[1], fmt.Sprintf("c%d_relay_ratio", n))
			b.ReportMetric(p[1]/r[1], fmt.Sprintf("c%d_vs_floor", n))
			b.ReportMetric(g[1]/r[1], fmt.Sprintf("c%d_gateway_vs_floor", n))
			fmt.Printf("BENCH proxy_http_throughput_c%d_vs_direct ratio=%.2f proxy=%.0f/s direct=%.0f/s\n", n, p[1]/d[1], p[1], d[1])
			fmt.Printf("BENCH reverse_proxy_floor_http_throughput_c%d_vs_direct ratio=%.2f relay=%.0f/s\n", n, r[1]/d[1], r[1])
			fmt.Printf("BENCH proxy_http_throughput_c%d_vs_reverse_proxy ratio=%.2f proxy=%.0f/s floor=%.0f/s goal=>=0.85\n", n, p[1]/r[1], p[1], r[1])
			fmt.Printf("BENCH gateway_member_http_throughput_c%d_vs_reverse_proxy ratio=%.2f gateway=%.0f/s floor=%.0f/s goal=>=0.85\n", n, g[1]/r[1], g[1], r[1])
			for _, cs := range slices.Concat(direct, via, gw, relay) {
				cs.Close()
			}
		}
	}

	stateful, statefulURL := startHTTPChild(b, "http-proxy-stateful", hs.URL)
	// Sessions exist on the 2025-11-25 protocol (2026-07-28 has none). One
	// first, so that what every session shares is loaded.
	legacy := &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	if _, err := httpSession(b, hc, statefulURL, legacy).ListTools(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	before := stateful.rss(b)
	const idle = 64
	for range idle {
		cs := httpSession(b, hc, statefulURL, legacy)
		if _, err := cs.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	per := float64(stateful.rss(b)-before) / idle
	b.ReportMetric(per, "KiB/idle_session")
	fmt.Printf("BENCH proxy_http_rss_per_idle_session kib=%.1f sessions=%d\n", per, idle)
}
