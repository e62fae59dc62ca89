package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %s: %s", resp.Status, b)
	}
	return string(b)
}

// sample returns the value of one series (name and labels exactly as
// exposed, labels in name order), or -1 when it is absent.
func sample(body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return -2
			}
			return f
		}
	}
	return -1
}

// A scripted set of calls to the built `mcpsafe files`, then a scrape of
// its --metrics endpoint: every count matches the calls made, and no
// argument value or principal appears anywhere in the output.
func TestFilesMetricsCountTheCalls(t *testing.T) {
	w := newWorkspace(t)
	addr := freeAddr(t)
	answer := "accept"
	cs := w.serve(&mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if answer == "accept" {
			return acceptAll(ctx, r)
		}
		return &mcp.ElicitResult{Action: answer}, nil
	}}, "--metrics", addr)
	for _, f := range []string{"cache.txt", "d/inner.txt"} {
		if res := call(t, cs, "delete_file", map[string]any{"path": f}); res.IsError {
			t.Fatalf("delete %s: %v", f, res.Content)
		}
	}
	answer = "decline"
	if got := reasonOf(t, call(t, cs, "delete_file", map[string]any{"path": "thesis.txt"})); got != "declined" {
		t.Fatalf("decline: %q", got)
	}
	for _, p := range []string{"../outside/secret.txt", "../outside/secret.txt", "missing.txt"} {
		call(t, cs, "delete_file", map[string]any{"path": p})
	}
	body := scrape(t, addr)
	want := map[string]float64{
		`mcpsafe_calls_total{outcome="executed",tool="delete_file"}`: 2,
		`mcpsafe_calls_total{outcome="refused",tool="delete_file"}`:  4,
		`mcpsafe_refusals_total{reason="declined"}`:                  1,
		`mcpsafe_refusals_total{reason="outside_roots"}`:             2,
		`mcpsafe_refusals_total{reason="not_found"}`:                 1,
		`mcpsafe_human_decision_seconds_count{path="elicit"}`:        3, // two accepts, one decline
		`mcpsafe_pending_approvals`:                                  0,
		// each executed call (MRTR: its request state came back from the
		// client): redemption + approval + outcome; each refusal: one record
		`mcpsafe_journal_append_duration_seconds_count{result="ok"}`:     2*3 + 4,
		`mcpsafe_ledger_duration_seconds_count{op="issue",result="ok"}`:  3,
		`mcpsafe_ledger_duration_seconds_count{op="redeem",result="ok"}`: 3,
		`mcpsafe_component_up{component="journal"}`:                      1,
		`mcpsafe_component_up{component="ledger"}`:                       1,
	}
	for series, v := range want {
		if got := sample(body, series); got != v {
			t.Errorf("%s = %v, want %v", series, got, v)
		}
	}
	for _, leak := range []string{"cache.txt", "secret.txt", "thesis", "stdio", w.root} {
		if strings.Contains(body, leak) {
			t.Errorf("metrics expose %q", leak)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}

// The pending gauge counts approvals issued and not yet redeemed: a token
// waiting for its second call.
func TestFilesMetricsPendingApprovals(t *testing.T) {
	w := newWorkspace(t)
	addr := freeAddr(t)
	cs := w.serve(nil, "--allow-token-for", "delete_file", "--metrics", addr)
	tok := tokenOf(t, call(t, cs, "delete_file", map[string]any{"path": "cache.txt"}))
	tokenOf(t, call(t, cs, "delete_file", map[string]any{"path": "thesis.txt"}))
	body := scrape(t, addr)
	if got := sample(body, "mcpsafe_pending_approvals"); got != 2 {
		t.Fatalf("pending %v, want 2", got)
	}
	if got := sample(body, `mcpsafe_calls_total{outcome="approval_required",tool="delete_file"}`); got != 2 {
		t.Fatalf("approval_required %v, want 2", got)
	}
	if res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt", "approval_token": tok}); res.IsError {
		t.Fatalf("redeem: %v", res.Content)
	}
	body = scrape(t, addr)
	if got := sample(body, "mcpsafe_pending_approvals"); got != 1 {
		t.Fatalf("pending after one redeem %v, want 1", got)
	}
	if got := sample(body, `mcpsafe_human_decision_seconds_count{path="token"}`); got != 1 {
		t.Fatalf("token decisions %v, want 1", got)
	}
}

// The built `mcpsafe approvals serve --metrics`: requests pending, then
// one approved and one denied by people; the counts match.
func TestApprovalsServeMetrics(t *testing.T) {
	sf, af := approvalsFiles(t)
	maddr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af, "--metrics", maddr)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	defer func() { cancel(); cmd.Wait() }()
	br := bufio.NewReader(stdout)
	var line string
	for !strings.Contains(line, "listening on") {
		if line, err = br.ReadString('\n'); err != nil {
			t.Fatalf("no banner: %v %s", err, stderr.String())
		}
	}
	go io.Copy(io.Discard, br)
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	secret, err := channel.LoadSecretFile(sf)
	must(t, err)
	hook, err := channel.NewWebhook(base+"/webhook", secret)
	must(t, err)
	results := make(chan bool, 3)
	for _, id := range []string{"m-1", "m-2", "m-3"} {
		go func() {
			d, err := hook.Approve(ctx, approver.Request{ID: id, Tool: "drop_table", Summary: "drop " + id,
				Principal: "ci", Audience: "db", ExpiresAt: time.Now().Add(time.Minute)})
			if err != nil {
				t.Logf("webhook %s: %v", id, err)
			}
			results <- err == nil && d.Approved
		}()
	}
	reaches := func(series string, v float64) string {
		t.Helper()
		var body string
		waitFor(t, fmt.Sprintf("%s at %v", series, v), func() bool { body = scrape(t, maddr); return sample(body, series) == v },
			func() string { return "metrics:\n" + body })
		return body
	}
	reaches("mcpsafe_pending_approvals", 3)
	decide := func(id, action, token string) {
		req, _ := http.NewRequest("POST", base+"/api/requests/"+id+"/"+action, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s %s: %s", action, id, resp.Status)
		}
	}
	decide("m-1", "approve", "alice-token-0123456789")
	decide("m-2", "deny", "bob-token-0123456789ab")
	body := reaches("mcpsafe_pending_approvals", 1)
	for series, v := range map[string]float64{
		`mcpsafe_channel_decisions_total{status="approved"}`:   1,
		`mcpsafe_channel_decisions_total{status="denied"}`:     1,
		`mcpsafe_human_decision_seconds_count{path="service"}`: 2,
	} {
		if got := sample(body, series); got != v {
			t.Errorf("%s = %v, want %v", series, got, v)
		}
	}
	if strings.Contains(body, "drop m-") || strings.Contains(body, "alice") || strings.Contains(body, `"ci"`) {
		t.Errorf("metrics leak request content or people:\n%s", body)
	}
	approved := 0
	for range 2 {
		if <-results {
			approved++
		}
	}
	if approved != 1 {
		t.Fatalf("%d approved, want 1", approved)
	}
}

// The built `mcpsafe proxy --metrics` counts gated calls by outcome and
// times every call it relays upstream (gated or passed through).
func TestProxyBinaryMetrics(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "http-upstream"}, nil)
	ok := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	}
	up.AddTool(&mcp.Tool{Name: "drop_table", InputSchema: map[string]any{"type": "object"}}, ok)
	up.AddTool(&mcp.Tool{Name: "count_rows", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, ok)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close)
	addr := freeAddr(t)
	answer := "accept"
	cs := startProxy(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if answer == "accept" {
			return acceptAll(ctx, r)
		}
		return &mcp.ElicitResult{Action: answer}, nil
	}}, "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "--upstream-url", hs.URL, "--metrics", addr)
	if res := call(t, cs, "drop_table", map[string]any{"name": "users"}); res.IsError {
		t.Fatalf("accepted drop_table: %v", res.Content)
	}
	if res := call(t, cs, "count_rows", map[string]any{}); res.IsError {
		t.Fatalf("count_rows: %v", res.Content)
	}
	answer = "decline"
	if res := call(t, cs, "drop_table", map[string]any{"name": "orders"}); !res.IsError {
		t.Fatal("declined drop_table ran")
	}
	body := scrape(t, addr)
	for series, v := range map[string]float64{
		`mcpsafe_calls_total{outcome="executed",tool="drop_table"}`:  1,
		`mcpsafe_calls_total{outcome="refused",tool="drop_table"}`:   1,
		`mcpsafe_refusals_total{reason="declined"}`:                  1,
		`mcpsafe_upstream_duration_seconds_count{result="ok"}`:       2,
		`mcpsafe_human_decision_seconds_count{path="elicit"}`:        2,
		`mcpsafe_journal_append_duration_seconds_count{result="ok"}`: 4, // redemption, approval, outcome; the decline
	} {
		if got := sample(body, series); got != v {
			t.Errorf("%s = %v, want %v", series, got, v)
		}
	}
	if strings.Contains(body, "users") || strings.Contains(body, "orders") {
		t.Error("metrics expose argument values")
	}
}

// The built gateway (`mcpsafe proxy --config`) exposes one pending gauge
// for all its servers: the approvals each server's gate issued and that
// were not redeemed yet, summed.
func TestGatewayBinaryMetricsPending(t *testing.T) {
	aURL, aTouched := goHTTPUpstream(t)
	bURL, _ := goHTTPUpstream(t)
	config := filepath.Join(t.TempDir(), "gateway.yaml")
	must(t, os.WriteFile(config, []byte(fmt.Sprintf(`servers:
  a:
    url: %s
    policy: {mode: token, allow_token_for: [touch]}
  b:
    url: %s
    policy: {mode: token, allow_token_for: [touch]}
`, aURL, bURL)), 0o644))
	maddr := freeAddr(t)
	url := startHTTPGateway(t, config, "--metrics", maddr)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	must(t, err)
	defer cs.Close()
	if got := sample(scrape(t, maddr), "mcpsafe_pending_approvals"); got != 0 {
		t.Fatalf("pending before any call %v, want 0", got)
	}
	tokens := map[string]string{}
	for _, tool := range []string{"a__touch", "b__touch"} {
		m := sc(t, call(t, cs, tool, map[string]any{}))
		tok, _ := m["approval_token"].(string)
		if m["status"] != "approval_required" || tok == "" {
			t.Fatalf("%s: %v", tool, m)
		}
		tokens[tool] = tok
	}
	if got := sample(scrape(t, maddr), "mcpsafe_pending_approvals"); got != 2 {
		t.Fatalf("pending with one token out per server %v, want 2", got)
	}
	if res := call(t, cs, "a__touch", map[string]any{"approval_token": tokens["a__touch"]}); res.IsError || aTouched.Load() != 1 {
		t.Fatalf("redeeming a's token: %+v", res)
	}
	if got := sample(scrape(t, maddr), "mcpsafe_pending_approvals"); got != 1 {
		t.Fatalf("pending after one redeem %v, want 1", got)
	}
}
