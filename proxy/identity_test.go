package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approvals"
	"github.com/mcpsafe/mcpsafe/internal/seal"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestDefaultAudience(t *testing.T) {
	cmd := func(dir string, argv ...string) mcp.Transport {
		c := exec.Command(argv[0], argv[1:]...)
		c.Dir = dir
		return &mcp.CommandTransport{Command: c}
	}
	url := func(u string) mcp.Transport { return &mcp.StreamableClientTransport{Endpoint: u} }
	// What the CLI really passes for a stdio upstream: the fast lane's pipe
	// (not started here; only its command is read).
	pipe := func(argv ...string) mcp.Transport { return &UpstreamPipe{cmd: exec.Command(argv[0], argv[1:]...)} }
	fs := []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/a"}
	for _, c := range []struct {
		name string
		a, b mcp.Transport
		same bool
	}{
		{"same command line", cmd("", fs...), cmd("", fs...), true},
		{"fast-lane pipe and command, same command line", pipe(fs...), cmd("", fs...), true},
		{"two fast-lane pipes, same command line", pipe(fs...), pipe(fs...), true},
		{"two fast-lane pipes, another directory argument", pipe(fs...), pipe("npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/b"), false},
		{"same URL", url("https://mcp.example/mcp"), url("https://mcp.example/mcp"), true},
		{"another directory argument", cmd("", fs...), cmd("", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/b"), false},
		{"another package", cmd("", fs...), cmd("", "npx", "-y", "@modelcontextprotocol/server-everything", "/srv/a"), false},
		{"arguments split differently", cmd("", "srv", "a b"), cmd("", "srv", "a", "b"), false},
		{"relative program in another directory", cmd("/opt/one", "./server"), cmd("/opt/two", "./server"), false},
		{"another URL path", url("https://mcp.example/mcp"), url("https://mcp.example/admin/mcp"), false},
		{"another URL host", url("https://mcp.example/mcp"), url("https://mcp.example.org/mcp"), false},
		{"command versus URL", cmd("", "https://mcp.example/mcp"), url("https://mcp.example/mcp"), false},
		{"two in-memory upstreams", func() mcp.Transport { c, _ := mcp.NewInMemoryTransports(); return c }(),
			func() mcp.Transport { c, _ := mcp.NewInMemoryTransports(); return c }(), false},
	} {
		a, b := DefaultAudience(c.a), DefaultAudience(c.b)
		if (a == b) != c.same {
			t.Errorf("%s: %q and %q, want same=%v", c.name, a, b, c.same)
		}
	}
	for _, c := range []struct {
		t    mcp.Transport
		want string
	}{
		{cmd("", fs...), "mcpsafe-proxy/server-filesystem/"},
		{cmd("", "uv", "run", "--quiet", "My Server.py"), "mcpsafe-proxy/my-server.py/"},
		{cmd("", "/usr/local/bin/DB-Tool"), "mcpsafe-proxy/db-tool/"},
		{url("http://127.0.0.1:8080/mcp"), "mcpsafe-proxy/127.0.0.1-8080/"},
		{func() mcp.Transport { c, _ := mcp.NewInMemoryTransports(); return c }(), "mcpsafe-proxy/unnamed-upstream/"},
	} {
		got := DefaultAudience(c.t)
		if !strings.HasPrefix(got, c.want) || len(got) != len(c.want)+16 {
			t.Errorf("DefaultAudience = %q, want %s and 16 hex digits", got, c.want)
		}
	}
}

// Two proxies share a key but front different upstream servers: an
// approval issued by one is not valid at the other. Control: two replicas
// of one proxy (same audience, key and ledger) accept each other's.
func TestGrantsBoundToUpstream(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := seal.WriteKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	pol := "mode: token\nallow_token_for: [write_file]\n"
	start := func(dir string, gc serverconf.Config) (*Server, *mcp.ClientSession) {
		gc.KeyFile = keyFile
		gc.JournalPath = filepath.Join(t.TempDir(), "journal.jsonl")
		s, err := NewServer(context.Background(), Config{Upstream: fsUpstreamIn(t, dir), Policy: mustPolicy(t, pol), Gate: stores(t, gc)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, connect(t, s, nil)
	}
	dirA, _ := filepath.EvalSymlinks(t.TempDir())
	dirB, _ := filepath.EvalSymlinks(t.TempDir())
	a, csA := start(dirA, serverconf.Config{})
	b, csB := start(dirB, serverconf.Config{})
	if a.Audience == b.Audience || !strings.HasPrefix(a.Audience, "mcpsafe-proxy/mcp-server-filesystem/") {
		t.Fatalf("audiences %q and %q", a.Audience, b.Audience)
	}
	// A's token, presented to B with the same arguments: B's audience
	// differs, so the grant does not even open (with one audience it would
	// open and only B's own ledger would stop it).
	mine := map[string]any{"path": filepath.Join(dirA, "x.txt"), "content": "x"}
	tok := tokenOf(t, call(t, csA, "write_file", mine))
	mine[mcpsafe.TokenField] = tok
	if r := reasonOf(t, call(t, csB, "write_file", mine)); r != mcpsafe.ReasonTokenInvalid {
		t.Fatalf("A's token at B: reason %q, want %s", r, mcpsafe.ReasonTokenInvalid)
	}
	if _, err := os.Stat(filepath.Join(dirA, "x.txt")); !os.IsNotExist(err) {
		t.Fatal("the call ran")
	}

	// Control: replicas in front of one directory with an explicit shared
	// audience and a shared ledger.
	ledger := "file:" + filepath.Join(t.TempDir(), "ledger.db")
	dirC, _ := filepath.EvalSymlinks(t.TempDir())
	_, cs1 := start(dirC, serverconf.Config{Audience: "files-replicas", LedgerURL: ledger})
	_, cs2 := start(dirC, serverconf.Config{Audience: "files-replicas", LedgerURL: ledger})
	ok := map[string]any{"path": filepath.Join(dirC, "ok.txt"), "content": "replica"}
	ok[mcpsafe.TokenField] = tokenOf(t, call(t, cs1, "write_file", ok))
	if res := call(t, cs2, "write_file", ok); res.IsError {
		t.Fatalf("replica redeem: %s", text(res))
	}
	if got := readFile(t, filepath.Join(dirC, "ok.txt")); got != "replica" {
		t.Fatalf("file holds %q", got)
	}
}

// Every plan names the server, by the name a person knows it by (here the
// upstream's own, as the policy gives none) and never by the derived
// audience with its hash: in the client's approval prompt, in the token's
// plan, and in the request the approval service shows (whose audience
// field still carries the audience, the binding).
func TestPlanNamesServer(t *testing.T) {
	secret := make([]byte, 32)
	rand.Read(secret)
	secretFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secretFile, []byte(base64.StdEncoding.EncodeToString(secret)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const bearer = "alice-token-0123456789abcdef"
	svc, err := approvals.NewService(approvals.ServiceOptions{Secret: secret, Approvers: []approvals.Approver{{Name: "alice", Token: bearer}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc)
	t.Cleanup(func() { hs.Close(); svc.Close() })

	u, up := newGoUpstream(t)
	s, err := NewServer(context.Background(), Config{
		Upstream: up,
		Policy:   mustPolicy(t, "tools:\n  gated_fail: {mode: channel}\n  delete_thing: {mode: elicit, preview: 'Delete {{.id}}'}\n  set_flag: {mode: token}\n"),
		Gate: stores(t, serverconf.Config{
			JournalPath: filepath.Join(t.TempDir(), "j.jsonl"),
			ApproverURL: hs.URL + "/webhook", ApproverSecretFile: secretFile,
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	want := `server: "go-upstream" (the name the upstream gives itself)`

	// The client's prompt, for a tool with an operator's preview template.
	var msg atomic.Value
	cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg.Store(r.Params.Message)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	call(t, cs, "delete_thing", map[string]any{"id": "7"})
	if m, _ := msg.Load().(string); !strings.Contains(m, want) || !strings.Contains(m, `Delete "7"`) || strings.Contains(m, s.Audience) {
		t.Fatalf("approval prompt %q does not name the server (%s)", m, want)
	}
	// The token's plan, for the default preview.
	plain := connect(t, s, nil)
	plan := structured(t, call(t, plain, "set_flag", map[string]any{}))["plan"].(map[string]any)
	if plan["summary"] != `Call "set_flag" on "go-upstream"` || plan["details"].([]any)[0] != want {
		t.Fatalf("token plan %v", plan)
	}
	// The approval service's request.
	done := make(chan *mcp.CallToolResult, 1)
	go func() { done <- call(t, plain, "gated_fail", map[string]any{}) }()
	// The fields of the service's API this test reads.
	type apiItem struct {
		ID, Summary, Audience string
		Details               []string
	}
	var item apiItem
	deadline := time.Now().Add(10 * time.Second)
	for item.ID == "" {
		if time.Now().After(deadline) {
			t.Fatal("the request never reached the approval service")
		}
		var list struct{ Requests []apiItem }
		apiJSON(t, http.MethodGet, hs.URL+"/api/requests", bearer, &list)
		if len(list.Requests) > 0 {
			item = list.Requests[0]
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if len(item.Details) == 0 || item.Details[0] != want || item.Summary != `Call "gated_fail" on "go-upstream"` || item.Audience != s.Audience {
		t.Fatalf("approval service item %+v does not name the server (%s)", item, want)
	}
	apiJSON(t, http.MethodPost, hs.URL+"/api/requests/"+item.ID+"/deny", bearer, nil)
	if res := <-done; reasonOf(t, res) != mcpsafe.ReasonChannelDenied || u.count("gated_fail") != 0 {
		t.Fatalf("denied channel request: %s", text(res))
	}
}

func apiJSON(t testing.TB, method, url, bearer string, out any) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(nil))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s", method, url, resp.Status)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
}
