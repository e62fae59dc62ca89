package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Secret values the calls below send; none may be stored or shown.
var errorSecrets = []string{"sk-live-ES1", "hunter2-ES2", "vault-ES3", "sk-live-RS4"}

// echoingUpstream serves tools whose errors echo their input, as
// validation errors do ("input_value=..."): rotate_key fails with a
// protocol error, lookup_key (read-only, revoke_key's resolver) with an
// error result.
func echoingUpstream(t *testing.T) string {
	t.Helper()
	up := mcp.NewServer(&mcp.Implementation{Name: "echoing-upstream"}, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"user": map[string]any{"type": "string"}, "api_key": map[string]any{"type": "string"},
		"password": map[string]any{"type": "string"}, "vault_ref": map[string]any{"type": "string"},
	}}
	echo := func(req *mcp.CallToolRequest) string {
		var a map[string]string
		json.Unmarshal(req.Params.Arguments, &a)
		// The password first: `journal show` cuts long text.
		return fmt.Sprintf("pw %s for %s: invalid %s\n api_key: short [input_value=%q]; vault_ref=%s",
			a["password"], a["user"], req.Params.Name, a["api_key"], a["vault_ref"])
	}
	up.AddTool(&mcp.Tool{Name: "rotate_key", InputSchema: schema},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("%s", echo(req))
		})
	up.AddTool(&mcp.Tool{Name: "revoke_key", InputSchema: schema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "revoked"}}}, nil
		})
	up.AddTool(&mcp.Tool{Name: "lookup_key", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: echo(req)}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// An approved call whose upstream error echoes its secret arguments, and a
// resolver whose error does: the journal file, `journal show`, `journal
// export --format ocsf` and the approval service's journal page hold the
// error text with every secret value cut out (common names and the
// policy's secret_fields), while the rest of the text, a non-secret
// argument's value included, stays for the operator to debug with.
func TestErrorTextNeverStoresSecretArguments(t *testing.T) {
	base := t.TempDir()
	jpath := filepath.Join(base, "j.jsonl")
	policy := filepath.Join(base, "policy.yaml")
	must(t, os.WriteFile(policy, []byte(`mode: elicit
tools:
  rotate_key:
    secret_fields: [vault_ref]
  revoke_key:
    resolver:
      tool: lookup_key
      args:
        user: args.user
        api_key: args.api_key
        password: args.password
`), 0o644))
	cs := startProxy(t, &mcp.ClientOptions{ElicitationHandler: acceptAll},
		"--policy", policy, "--journal", jpath, "--upstream-url", echoingUpstream(t))

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "rotate_key", Arguments: map[string]any{
		"user": "alice-ops-77", "api_key": errorSecrets[0], "password": errorSecrets[1], "vault_ref": errorSecrets[2]}})
	if err == nil && !res.IsError {
		t.Fatalf("rotate_key succeeded: %+v", res)
	}
	if r := reasonOf(t, call(t, cs, "revoke_key", map[string]any{"user": "bob-ops-88", "api_key": errorSecrets[3], "password": errorSecrets[1]})); r != "resolver_failed" {
		t.Fatalf("revoke_key: reason %q, want resolver_failed", r)
	}
	cs.Close() // the proxy exits: its journal is complete

	// The records are there, with the text an operator needs.
	var failed, refused string
	for _, r := range readJournalFile(t, jpath) {
		switch {
		case r.Tool == "rotate_key" && r.Decision == "failed":
			failed = r.Error
		case r.Tool == "revoke_key" && r.Decision == "refused" && r.Reason == "resolver_failed":
			refused = r.Summary
		}
	}
	for what, text := range map[string]string{"the failed call's error": failed, "the refusal's summary": refused} {
		if !strings.Contains(text, "invalid ") || !strings.Contains(text, "input_value=") || !strings.Contains(text, "[redacted]") {
			t.Errorf("%s lost its text or was not redacted: %q", what, text)
		}
	}
	if !strings.Contains(failed, "alice-ops-77") || !strings.Contains(refused, "bob-ops-88") {
		t.Errorf("a non-secret argument's value was cut out: error %q, summary %q", failed, refused)
	}

	raw, err := os.ReadFile(jpath)
	must(t, err)
	_, show, errs := journalCmd("show", jpath)
	if strings.Count(show, "pw [redacted] for") != 2 {
		t.Errorf("journal show lacks the error texts: %s %s", show, errs)
	}
	code, ocsf, errs := journalCmd("export", jpath, "--format", "ocsf")
	if code != 0 || !strings.Contains(ocsf, "alice-ops-77") || !strings.Contains(ocsf, "bob-ops-88") {
		t.Errorf("ocsf export: %d %s %s", code, ocsf, errs)
	}
	page := journalPage(t, jpath)
	if !strings.Contains(page, "alice-ops-77") || !strings.Contains(page, "bob-ops-88") {
		t.Errorf("the approval service's journal page lacks the error texts:\n%s", page)
	}
	for what, out := range map[string]string{"the journal file": string(raw), "journal show": show, "the ocsf export": ocsf, "the journal page": page} {
		for _, s := range errorSecrets {
			if strings.Contains(out, s) {
				t.Errorf("%s holds the secret %q", what, s)
			}
		}
	}
}

// journalPage is the approval service's journal page for the journal at
// path, as a signed-in approver sees it.
func journalPage(t *testing.T, path string) string {
	t.Helper()
	sf, af := approvalsFiles(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, "approvals", "serve", "--listen", "127.0.0.1:0", "--secret-file", sf, "--approvers-file", af, "--journal", path)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	must(t, cmd.Start())
	defer func() { cancel(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v %s", err, stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	base := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(line)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"name": {"alice"}, "password": {"alice-token-0123456789"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := c.Do(req)
	must(t, err)
	resp.Body.Close()
	span := url.Values{"since": {time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)}, "until": {time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}
	resp, err = c.Get(base + "/journal?" + span.Encode())
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "rotate_key") {
		t.Fatalf("journal page: HTTP %d\n%s\n%s", resp.StatusCode, b, stderr.String())
	}
	return string(b)
}
