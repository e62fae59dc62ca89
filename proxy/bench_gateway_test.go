package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mcpsafe/mcpsafe/proxy/policy"
)

// gatewayBenchEnv makes the test binary serve a gateway over stdio from
// the configuration file it names, as `mcpsafe proxy --config` does.
const gatewayBenchEnv = "MCPSAFE_PROXY_BENCH_GATEWAY"

func serveGateway(config string) int {
	f, err := policy.LoadGateway(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	g, err := NewGateway(context.Background(), f, stores(nil, serverconfFor(os.Getenv("MCPSAFE_PROXY_TEST_JOURNAL"))), GatewayOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer g.Close()
	if err := g.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		return 1
	}
	return 0
}

// BenchmarkGatewayProcessFilesystem: read_text_file against the real npm
// filesystem server over stdio, interleaved: through the single-upstream
// proxy process, and through a gateway process that also fronts a second
// (Go) upstream. Reports the p50 ratio gateway / proxy (goal <= 1.05).
func BenchmarkGatewayProcessFilesystem(b *testing.B) {
	fsBin := fsServerBin(b)
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(dir, "f.txt"), "some content\n")
	upstream, _ := json.Marshal([]string{fsBin, dir})
	policy := filepath.Join(b.TempDir(), "policy.yaml")
	writeFile(b, policy, "")
	gs := newGoServer(b)
	config := filepath.Join(b.TempDir(), "gateway.yaml")
	writeFile(b, config, "servers:\n"+fsServerYAML(b, "fs", dir, "")+gs.yaml(b, "go", ""))

	proxyCmd := benchChild(b, "", serveEnv+"=1", "MCPSAFE_PROXY_TEST_POLICY="+policy,
		"MCPSAFE_PROXY_TEST_UPSTREAM="+string(upstream), "MCPSAFE_PROXY_TEST_JOURNAL="+filepath.Join(b.TempDir(), "j.jsonl"))
	via := stdioClient(b, proxyCmd)
	gwCmd := benchChild(b, "", gatewayBenchEnv+"="+config, "MCPSAFE_PROXY_TEST_JOURNAL="+filepath.Join(b.TempDir(), "gj.jsonl"))
	gw := stdioClient(b, gwCmd)
	direct := stdioClient(b, exec.Command(fsBin, dir))

	read := func(int) map[string]any { return map[string]any{"path": filepath.Join(dir, "f.txt")} }
	stats := compareFrom(b, []*benchPath{
		{name: "fs_direct_read", cs: direct, tool: "read_text_file", args: read},
		{name: "fs_proxy_process_read", cs: via, tool: "read_text_file", args: read},
		{name: "fs_gateway_process_read", cs: gw, tool: "fs__read_text_file", args: read},
	}, func() {})
	benchLine(b, stats, "gateway_two_upstreams_stdio_passthrough_vs_single_proxy", "fs_gateway_process_read", "fs_proxy_process_read")
	benchLine(b, stats, "gateway_two_upstreams_stdio_passthrough_vs_direct", "fs_gateway_process_read", "fs_direct_read")
}
