package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

// A start-up probe with the service's secret is answered, creates nothing
// and is never an approval; with another secret, or at a URL that is not
// the webhook, it fails as a misconfiguration that names what to change.
func TestProbeChecksSecretAndURL(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ctx := context.Background()
	if err := e.hook.Probe(ctx); err != nil {
		t.Fatalf("probe with the right secret: %v", err)
	}
	if code, out := e.api("GET", "/api/requests", "alice"); code != 200 || len(out["requests"].([]any)) != 0 {
		t.Fatalf("the probe left requests behind: %v", out)
	}
	wrong, err := channel.NewWebhook(e.srv.URL+"/webhook", bytes.Repeat([]byte{'x'}, 32))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		hook *channel.Webhook
		want string
	}{
		"wrong secret":  {wrong, "--approver-secret-file must hold the same secret"},
		"no /webhook":   {newHook(t, e.srv.URL), "/webhook"},
		"another path":  {newHook(t, e.srv.URL+"/hook"), "no webhook at"},
		"host not here": {newHook(t, strings.Replace(e.srv.URL, "127.0.0.1", "localhost", 1)+"/webhook"), ""},
	} {
		err := tc.hook.Probe(ctx)
		if tc.want == "" { // control: localhost is always served
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, channel.ErrMisconfigured) || !errors.Is(err, channel.ErrUnavailable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want ErrMisconfigured saying %q", name, err, tc.want)
		}
	}
	// A signed body that says "probe" but carries a request is refused,
	// and opens nothing.
	body, _ := json.Marshal(map[string]any{"version": 1, "type": "probe", "nonce": "n", "id": "req-in-a-probe", "tool": "delete_file"})
	if code, out := e.postSigned(body, channel.Sign(testSecret, body, time.Now())); code != 400 || strings.Contains(out, `"approved":true`) {
		t.Fatalf("a probe with request fields: %d %s", code, out)
	}
	if code, _ := e.api("GET", "/api/requests/req-in-a-probe", "alice"); code != 404 {
		t.Fatalf("a probe opened a request: HTTP %d", code)
	}
}

// A request the service refused outright (wrong secret) never opened, so
// withdrawing it sends nothing and is no failure; a request the service
// keeps open is withdrawn for real even after a later send of it was
// taken over by another caller (the first is told so: 409).
func TestWithdrawOnlyWhatNeverOpenedIsSkipped(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	ctx := context.Background()
	wrong, err := channel.NewWebhook(e.srv.URL+"/webhook", bytes.Repeat([]byte{'x'}, 32))
	if err != nil {
		t.Fatal(err)
	}
	refused := testRequest("req-refused")
	if _, err := wrong.Approve(ctx, refused); !errors.Is(err, channel.ErrMisconfigured) {
		t.Fatalf("approve with the wrong secret: %v", err)
	}
	if err := wrong.Withdraw(ctx, refused, approver.WithdrawTimedOut); err != nil {
		t.Fatalf("withdrawing a request that never opened: %v", err)
	}
	// Only once: a second withdrawal is sent, and refused as before.
	if err := wrong.Withdraw(ctx, refused, approver.WithdrawTimedOut); !errors.Is(err, channel.ErrMisconfigured) {
		t.Fatalf("second withdrawal: %v", err)
	}

	open := testRequest("req-open")
	first := e.ask(open)
	e.waitPending(open.ID)
	ch := e.ask(open) // takes the request over
	if r := wait(t, first); r.err == nil || !strings.Contains(r.err.Error(), "HTTP 409") {
		t.Fatalf("the first caller of a request taken over: %+v %v", r.d, r.err)
	}
	if err := e.hook.Withdraw(ctx, open, approver.WithdrawTimedOut); err != nil {
		t.Fatalf("withdrawing the open request: %v", err)
	}
	if _, got := e.api("GET", "/api/requests/"+open.ID, "alice"); got["status"] != channel.StatusWithdrawn {
		t.Fatalf("the open request was not withdrawn: %v", got)
	}
	if r := wait(t, ch); r.d.Approved {
		t.Fatal("approved")
	}
}
