package proxy

import (
	"encoding/json"
	"strings"
	"testing"
)

// A policy's preview template never shows a secret, not even part of one:
// it sees secret_fields and the common sensitive names redacted. The
// upstream still receives the real values, and a field that is not
// secret is shown (the controls).
func TestPreviewTemplateRedactsSecrets(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `tools:
  set_flag:
    secret_fields: [pin2]
    preview: 'Log in as {{.user}} with {{printf "%.6s" .password}} and {{printf "%.5s" .pin2}}'
`))
	cs := connect(t, s, nil)
	args := map[string]any{"user": "root", "password": "pw-proxy-1", "pin2": "zz-pin-9"}
	res := call(t, cs, "set_flag", args)
	tok := tokenOf(t, res)
	b, _ := json.Marshal(res.StructuredContent)
	shown := text(res) + string(b)
	for _, bad := range []string{"pw-pr", "pw-proxy-1", "zz-p", "zz-pin-9"} {
		if strings.Contains(shown, bad) {
			t.Errorf("the plan shows %q:\n%s", bad, shown)
		}
	}
	if !strings.Contains(shown, `Log in as \"root\" with \"[reda and \"[red`) {
		t.Errorf("the template output is not what the redacted arguments give:\n%s", shown)
	}
	args["approval_token"] = tok
	if res := call(t, cs, "set_flag", args); res.IsError {
		t.Fatalf("redeem: %s", text(res))
	}
	if got := u.lastArgs["set_flag"]; !strings.Contains(got, `"password":"pw-proxy-1"`) || !strings.Contains(got, `"pin2":"zz-pin-9"`) {
		t.Fatalf("upstream received %s, want the real values", got)
	}
}
