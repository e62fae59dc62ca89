package proxy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchPath is one way of making a call, timed call by call.
type benchPath struct {
	name string
	cs   *mcp.ClientSession
	tool string
	args func(i int) map[string]any
	lat  []time.Duration
}

type benchStat struct{ p50us, perSec float64 }

// compare makes one call on every path per iteration, interleaved in a
// random order so that machine noise hits every path alike, and returns p50 latency and
// throughput per path.
func compare(b *testing.B, paths []*benchPath) map[string]benchStat {
	return compareFrom(b, paths, func() {})
}

// compareFrom is compare, calling start once warm-up is over and the
// measured calls begin.
func compareFrom(b *testing.B, paths []*benchPath, start func()) map[string]benchStat {
	ctx := context.Background()
	one := func(p *benchPath, i int) {
		t0 := time.Now()
		res, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: p.tool, Arguments: p.args(i)})
		d := time.Since(t0)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %s", p.name, err, text(res))
		}
		p.lat = append(p.lat, d)
	}
	for i := range 20 { // warm up every path
		for _, p := range paths {
			one(p, i)
		}
	}
	for _, p := range paths {
		p.lat = p.lat[:0]
	}
	start()
	b.ResetTimer()
	// A fresh random order every iteration, so that no path always
	// follows the same one (a journal fsync or a GC left behind by one
	// path would otherwise always land on the next).
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < b.N; i++ {
		for _, k := range rng.Perm(len(paths)) {
			one(paths[k], i)
		}
	}
	b.StopTimer()
	stats := map[string]benchStat{}
	for _, p := range paths {
		var total time.Duration
		for _, d := range p.lat {
			total += d
		}
		slices.Sort(p.lat)
		st := benchStat{float64(p.lat[len(p.lat)/2].Nanoseconds()) / 1e3, float64(len(p.lat)) / total.Seconds()}
		stats[p.name] = st
		b.ReportMetric(st.p50us, p.name+"_p50_µs")
	}
	return stats
}

// benchLine prints the figure scripts/bench-proxy reports. The framework's
// first probe run (b.N == 1) prints nothing.
func benchLine(b *testing.B, stats map[string]benchStat, name, proxied, direct string) {
	a, d := stats[proxied], stats[direct]
	b.ReportMetric(a.p50us/d.p50us, name+"_ratio")
	if b.N < 50 {
		return
	}
	fmt.Printf("BENCH %s ratio=%.2f p50_proxy=%.1fµs p50_direct=%.1fµs throughput_proxy=%.0f/s throughput_direct=%.0f/s n=%d\n",
		name, a.p50us/d.p50us, a.p50us, d.p50us, a.perSec, d.perSec, b.N)
}

// BenchmarkProxyVsDirect: tools/call through the proxy against the same
// call straight to the same in-process upstream (in-memory transports, so
// the proxy's extra hop is not hidden behind any real work). Paths: a
// read-only pass-through; a gated tool auto-approved by a CEL rule with the
// real fsync'd journal (the default); the same without a journal, to show
// the gate's own cost.
func BenchmarkProxyVsDirect(b *testing.B) {
	u, up := newGoUpstream(b)
	pol := mustPolicy(b, "tools:\n  set_flag: {auto_approve: ['args.n >= 0']}\n")
	withJournal := newProxy(b, up, pol)
	noJournal, err := NewServer(context.Background(), Config{Upstream: u.transport(b), Policy: pol, Gate: stores(b, serverconf.Config{NoJournal: true})})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { noJournal.Close() })
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench-direct"}, nil).Connect(context.Background(), u.transport(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })
	viaJ, viaN := connect(b, withJournal, nil), connect(b, noJournal, nil)
	n := func(i int) map[string]any { return map[string]any{"n": i} }
	stats := compare(b, []*benchPath{
		{name: "direct_readonly", cs: direct, tool: "echo", args: n},
		{name: "passthrough", cs: viaJ, tool: "echo", args: n},
		{name: "passthrough_nojournal", cs: viaN, tool: "echo", args: n},
		{name: "direct_gated_tool", cs: direct, tool: "set_flag", args: n},
		{name: "gated_auto_approved", cs: viaJ, tool: "set_flag", args: n},
		{name: "gated_auto_approved_nojournal", cs: viaN, tool: "set_flag", args: n},
	})
	benchLine(b, stats, "proxy_passthrough_vs_direct", "passthrough", "direct_readonly")
	benchLine(b, stats, "proxy_gated_auto_approved_vs_direct", "gated_auto_approved", "direct_gated_tool")
	benchLine(b, stats, "proxy_gated_auto_approved_nojournal_vs_direct", "gated_auto_approved_nojournal", "direct_gated_tool")
}

// BenchmarkProxyVsDirectFilesystem: the same comparison against the real
// npm filesystem server over stdio (two instances on one directory: one
// behind the proxy, one direct). create_directory on an existing directory
// changes nothing, so it can be auto-approved and repeated.
func BenchmarkProxyVsDirectFilesystem(b *testing.B) {
	dir, up := fsUpstream(b)
	writeFile(b, filepath.Join(dir, "f.txt"), "some content\n")
	s := newProxy(b, up, mustPolicy(b, "tools:\n  create_directory: {auto_approve: ['true']}\n"))
	via := connect(b, s, nil)
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench-direct"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), fsUpstreamIn(b, dir), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })
	read := func(int) map[string]any { return map[string]any{"path": filepath.Join(dir, "f.txt")} }
	mkdir := func(int) map[string]any { return map[string]any{"path": dir} }
	stats := compare(b, []*benchPath{
		{name: "fs_direct_read", cs: direct, tool: "read_text_file", args: read},
		{name: "fs_passthrough_read", cs: via, tool: "read_text_file", args: read},
		{name: "fs_direct_mkdir", cs: direct, tool: "create_directory", args: mkdir},
		{name: "fs_gated_mkdir", cs: via, tool: "create_directory", args: mkdir},
	})
	benchLine(b, stats, "proxy_fs_passthrough_vs_direct", "fs_passthrough_read", "fs_direct_read")
	benchLine(b, stats, "proxy_fs_gated_auto_approved_vs_direct", "fs_gated_mkdir", "fs_direct_mkdir")
}
