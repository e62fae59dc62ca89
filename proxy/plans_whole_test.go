package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
)

// The proxy's plan lists every argument; 500 harmless ones before the one
// that matters used to push it past the 20-line cut. Now the plan is
// shown whole or the call is refused before any approval is issued.
func TestPaddedProxyCallShownWholeOrRefused(t *testing.T) {
	u, up := newGoUpstream(t)
	cs := connect(t, newProxy(t, up, nil), nil)
	args := map[string]any{"zz_target": "/etc/shadow"}
	for i := range 500 {
		args[fmt.Sprintf("a%03d", i)] = "harmless"
	}
	res := call(t, cs, "set_flag", args)
	if r := reasonOf(t, res); r != mcpsafe.ReasonPlanTooLarge {
		t.Fatalf("reason %q, want plan_too_large: %s", r, text(res))
	}
	// Control: 40 padding arguments fit, and the plan shows every one,
	// the last included (after the line that names the server, and the
	// 40 padding lines).
	small := map[string]any{"zz_target": "/etc/shadow"}
	for i := range 40 {
		small[fmt.Sprintf("a%03d", i)] = "harmless"
	}
	res = call(t, cs, "set_flag", small)
	tok := tokenOf(t, res)
	plan := structured(t, res)["plan"].(map[string]any)
	if d := plan["details"].([]any); len(d) != 42 || !strings.Contains(fmt.Sprint(d[41]), "/etc/shadow") {
		t.Fatalf("the plan shows %d lines, last %v", len(d), d[len(d)-1])
	}
	small["approval_token"] = tok
	if res := call(t, cs, "set_flag", small); res.IsError || u.count("set_flag") != 1 {
		t.Fatalf("redeem: %s", text(res))
	}
}
