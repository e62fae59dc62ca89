package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// The conformance comparison of TestProxyConformance, through a gateway
// with two upstreams: the SDK's conformance server (served without a
// prefix, so that the suite finds its tools by their names) and the npm
// filesystem server (under fs__). The gateway is transparent when the
// same scored scenarios pass as directly.
func TestGatewayConformance(t *testing.T) {
	node, entry := conformanceSuite(t)
	fsBin := npmFilesystemServer(t)
	everything := buildEverythingServer(t)
	for _, g := range generations {
		t.Run(g.name, func(t *testing.T) {
			upstream := startEverything(t, everything, g.stateful)
			direct := runSuite(t, node, entry, upstream, g)
			if len(direct.passing()) == 0 {
				t.Fatalf("no scenario passes directly; the set-up is broken:\n%s", direct.output)
			}
			config := filepath.Join(t.TempDir(), "gateway.yaml")
			must(t, os.WriteFile(config, []byte(fmt.Sprintf(
				"servers:\n  everything:\n    url: %s\n    prefix: false\n    policy_file: %s\n  fs:\n    command: [%q, %q]\n",
				upstream, autoApproveAll(t, upstream), fsBin, t.TempDir())), 0o644))
			var extra []string
			if g.stateful {
				extra = append(extra, "--http-stateful")
			}
			through := runSuite(t, node, entry, startHTTPGateway(t, config, extra...), g)
			t.Logf("%s, direct vs through a two-upstream mcpsafe gateway (auto-approve-all policy):\n%s", g.name, table(direct, through))
			if !slices.Equal(direct.passing(), through.passing()) {
				t.Errorf("%s: the gateway is not transparent: passing scored scenarios differ (direct %d, through the gateway %d): %v",
					g.name, len(direct.passing()), len(through.passing()), diff(direct, through))
			}
		})
	}
}
