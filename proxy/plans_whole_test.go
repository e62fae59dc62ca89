package proxy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every argument is shown; 500 harmless ones before the one that matters
// used to push it past the 20-line cut. Now the arguments are shown whole
// or the call is refused before any approval is issued.
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
	// Control: 40 padding arguments fit, and the text the assistant is
	// asked to show lists every one, the last included, once: the plan
	// itself names the server and repeats none of them.
	small := map[string]any{"zz_target": "/etc/shadow"}
	for i := range 40 {
		small[fmt.Sprintf("a%03d", i)] = "harmless"
	}
	res = call(t, cs, "set_flag", small)
	tok := tokenOf(t, res)
	plan := structured(t, res)["plan"].(map[string]any)
	if d := plan["details"].([]any); len(d) != 1 || strings.Contains(fmt.Sprint(d), "harmless") {
		t.Fatalf("the plan repeats the arguments: %v", d)
	}
	shown := res.Content[0].(*mcp.TextContent).Text
	for k, v := range small {
		if line := fmt.Sprintf("\n  - %q: %q\n", k, v); strings.Count(shown, fmt.Sprintf("%q: %q", k, v)) != 1 || !strings.Contains(shown, line) {
			t.Fatalf("the text does not list %s once:\n%s", line, shown)
		}
	}
	small["approval_token"] = tok
	if res := call(t, cs, "set_flag", small); res.IsError || u.count("set_flag") != 1 {
		t.Fatalf("redeem: %s", text(res))
	}
}
