package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// grantAnswer approves the first elicitation and chooses the grant id, which
// it must offer; every later elicitation is declined. asked counts them.
func grantAnswer(t *testing.T, asked *atomic.Int32, id string) *mcp.ClientOptions {
	return &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if asked.Add(1) > 1 {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		b, _ := json.Marshal(r.Params.RequestedSchema)
		if !strings.Contains(string(b), `"`+id+`"`) {
			t.Errorf("the elicitation does not offer %s: %s", id, b)
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": id}}, nil
	}}
}

// The metrics wrapper around the ledger forwards its standing grants: a
// server that offers grants starts with --metrics, the grant works, and
// the scrape shows the grant's ledger operations. Before the fix the
// wrapper hid the store and the server refused to start ("the ledger
// (*metrics.timedLedger) cannot keep them").
func TestFilesGrantsWithMetrics(t *testing.T) {
	w := newWorkspace(t)
	w.write("d/a.txt", "a")
	w.write("d/b.txt", "b")
	addr := freeAddr(t)
	var asked atomic.Int32
	cs := w.serve(grantAnswer(t, &asked, "grant-2-1"), "--mode", "elicit", "--grants", "delete_file", "--grants-client-relayed", "--metrics", addr)
	for _, f := range []string{"d/a.txt", "d/b.txt"} {
		if res := call(t, cs, "delete_file", map[string]any{"path": f}); res.IsError || content(t, w.path(f)) != "<missing>" {
			b, _ := json.Marshal(res.Content)
			t.Fatalf("delete %s: %s", f, b)
		}
	}
	if asked.Load() != 1 {
		t.Fatalf("asked %d times; the second delete should have used the grant", asked.Load())
	}
	body := scrape(t, addr)
	for series, want := range map[string]float64{
		`mcpsafe_ledger_duration_seconds_count{op="grant_put",result="ok"}`: 1,
		`mcpsafe_ledger_duration_seconds_count{op="grant_use",result="ok"}`: 1,
		`mcpsafe_calls_total{outcome="executed",tool="delete_file"}`:        2,
	} {
		if got := sample(body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if got := sample(body, `mcpsafe_ledger_duration_seconds_count{op="grant_list",result="ok"}`); got < 1 {
		t.Errorf("grant lookups not counted: %v", got)
	}
}

// The same for a proxy whose policy offers grants.
func TestProxyGrantsWithMetrics(t *testing.T) {
	up := mcp.NewServer(&mcp.Implementation{Name: "http-upstream"}, nil)
	var ran atomic.Int32
	up.AddTool(&mcp.Tool{Name: "drop_table", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "dropped"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.yaml")
	must(t, os.WriteFile(pol, []byte("mode: elicit\nallow_grants_for: [drop_table]\ntools:\n  drop_table:\n    grants: {max_ttl: 1h, max_uses: 3, client_relayed: true}\n"), 0o644))
	addr := freeAddr(t)
	var asked atomic.Int32
	cs := startProxy(t, grantAnswer(t, &asked, "grant-1-1"), "--journal", filepath.Join(dir, "j.jsonl"), "--policy", pol, "--metrics", addr, "--upstream-url", hs.URL)
	for range 2 {
		if res := call(t, cs, "drop_table", map[string]any{"name": "users"}); res.IsError {
			t.Fatalf("drop_table: %v", res.Content)
		}
	}
	if asked.Load() != 1 || ran.Load() != 2 {
		t.Fatalf("asked %d times, ran %d; want one question and two runs (the second under the grant)", asked.Load(), ran.Load())
	}
	body := scrape(t, addr)
	for series, want := range map[string]float64{
		`mcpsafe_ledger_duration_seconds_count{op="grant_put",result="ok"}`: 1,
		`mcpsafe_ledger_duration_seconds_count{op="grant_use",result="ok"}`: 1,
	} {
		if got := sample(body, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
}
