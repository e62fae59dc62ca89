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
			var extra []string
			if g.stateful {
				extra = append(extra, "--http-stateful")
			}
			// The conformance server over HTTP, then over stdio.
			// A fresh server's policy for the stdio one (see
			// TestProxyConformance).
			for _, up := range []struct{ name, entry, policy string }{
				{"HTTP", fmt.Sprintf("url: %s", upstream), autoApproveAll(t, upstream)},
				{"stdio", fmt.Sprintf("command: [%q]", everything), autoApproveAll(t, startEverything(t, everything, g.stateful))},
			} {
				config := filepath.Join(t.TempDir(), "gateway.yaml")
				must(t, os.WriteFile(config, []byte(fmt.Sprintf(
					"servers:\n  everything:\n    %s\n    prefix: false\n    policy_file: %s\n  fs:\n    command: [%q, %q]\n",
					up.entry, up.policy, fsBin, t.TempDir())), 0o644))
				through := runSuite(t, node, entry, startHTTPGateway(t, config, extra...), g)
				t.Logf("%s, direct vs through a two-upstream mcpsafe gateway, conformance server over %s (auto-approve-all policy):\n%s", g.name, up.name, table(direct, through))
				if !slices.Equal(direct.passing(), through.passing()) {
					t.Errorf("%s, conformance server over %s: the gateway is not transparent: passing scored scenarios differ (direct %d, through the gateway %d): %v",
						g.name, up.name, len(direct.passing()), len(through.passing()), diff(direct, through))
				}
			}
		})
	}
}
