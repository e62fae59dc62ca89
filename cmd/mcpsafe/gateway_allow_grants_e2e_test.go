package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A gateway server's allow_grants_for reaches its gate: the irreversible
// tools it names offer standing grants, as behind a single proxy, and a
// name that cannot take one is refused at start-up.

func allowGrantsConfig(t *testing.T, url, allow string) string {
	config := filepath.Join(t.TempDir(), "gateway.yaml")
	must(t, os.WriteFile(config, []byte(fmt.Sprintf(`servers:
  web:
    url: %s
    policy:
%s      tools:
        touch:
          grants: {max_ttl: 1h, max_uses: 3, client_relayed: true}
`, url, allow)), 0o644))
	return config
}

// touch is irreversible (no annotations). Named in allow_grants_for, it
// offers "exactly these arguments", and the grant the approver picks covers
// the next identical call without asking. Control: not named, it offers
// none, and an answer choosing one is refused: nothing runs.
func TestGatewayAllowGrantsForReachesGate(t *testing.T) {
	for _, named := range []bool{true, false} {
		t.Run(fmt.Sprintf("named=%v", named), func(t *testing.T) {
			url, touched := goHTTPUpstream(t)
			allow := ""
			if named {
				allow = "      allow_grants_for: [touch]\n"
			}
			cs, asked, _, _ := grantingClient(t, allowGrantsConfig(t, url, allow), "grant-1-1")
			args := map[string]any{"path": "/data/a"}
			first := call(t, cs, "web__touch", args)
			if !named {
				if reasonOf(t, first) != "declined" || touched.Load() != 0 {
					t.Fatalf("an irreversible tool not named took a grant: %+v (%d runs)", first.Content, touched.Load())
				}
				return
			}
			if first.IsError || touched.Load() != 1 {
				t.Fatalf("allow_grants_for in a gateway was ignored: the grant choice was refused: %+v", first.Content)
			}
			if res := call(t, cs, "web__touch", args); res.IsError || touched.Load() != 2 || asked.Load() != 1 {
				t.Fatalf("the grant does not cover the same call: %+v (asked %d)", res.Content, asked.Load())
			}
		})
	}
}

// allow_grants_for naming a tool that cannot take a grant (read-only,
// hence not gated) is a start-up error naming the key, as for one proxy.
func TestGatewayAllowGrantsForCheckedAtStart(t *testing.T) {
	url, _ := goHTTPUpstream(t)
	config := allowGrantsConfig(t, url, "      allow_grants_for: [look]\n")
	code, stderr := runExit(t, nil, "proxy", "--config", config, "--journal", filepath.Join(t.TempDir(), "j.jsonl"))
	if code == 0 || !strings.Contains(stderr, "allow_grants_for") || !strings.Contains(stderr, "web__look") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}
