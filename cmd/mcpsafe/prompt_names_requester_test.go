package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/oidctest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// promptCatcher records the approval prompt it is shown and declines.
type promptCatcher struct {
	mu  sync.Mutex
	msg string
}

func (p *promptCatcher) handler(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.msg = r.Params.Message
	return &mcp.ElicitResult{Action: "decline"}, nil
}

func (p *promptCatcher) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.msg
}

// The approval prompt says who asked in words a person understands: over
// stdio there is nobody to name (the transport's name "stdio" is not a
// person), so there is no "Requested by" line; a signed-in caller is named.
func TestPromptNamesRequesterInWords(t *testing.T) {
	// Attack on the reader's understanding: stdio.
	w := newWorkspace(t)
	var stdio promptCatcher
	cs := w.serve(&mcp.ClientOptions{ElicitationHandler: stdio.handler})
	if r := reasonOf(t, call(t, cs, "delete_file", map[string]any{"path": "cache.txt"})); r != "declined" {
		t.Fatalf("stdio: reason %q, want declined", r)
	}
	msg := stdio.text()
	if !strings.Contains(msg, "Tool: delete_file") {
		t.Fatalf("stdio: no approval prompt seen: %q", msg)
	}
	if strings.Contains(msg, "stdio") || strings.Contains(msg, "Requested by") {
		t.Fatalf("stdio prompt names the transport as the requester:\n%s", msg)
	}

	// An HTTP caller that did not sign in is said to be one.
	anonRoot := t.TempDir()
	must(t, os.WriteFile(filepath.Join(anonRoot, "a.txt"), []byte("a"), 0o644))
	anonURL := startBinary(t, "files", "--root", anonRoot, "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "--http", "127.0.0.1:0")
	var anon promptCatcher
	acs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: anon.handler}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: anonURL, MaxRetries: -1}, nil)
	must(t, err)
	defer acs.Close()
	call(t, acs, "delete_file", map[string]any{"path": "a.txt"})
	if m := anon.text(); !strings.Contains(m, "Requested by: a client that did not sign in") || strings.Contains(m, `"anonymous"`) {
		t.Fatalf("anonymous HTTP prompt:\n%s", m)
	}

	// Control: a signed-in caller is named by its principal.
	p := oidctest.Start(t, nil, audience)
	s := startAuthServer(t, "--http", "0.0.0.0:0", "--auth-issuer", p.Issuer(), "--auth-audience", audience, "--mode", "elicit")
	must(t, os.WriteFile(filepath.Join(s.root, "a.txt"), []byte("a"), 0o644))
	var signed promptCatcher
	alice, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: signed.handler}).
		Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint: s.url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearer{p.Token(t, "alice")}},
		}, nil)
	must(t, err)
	defer alice.Close()
	if r := reasonOf(t, call(t, alice, "delete_file", map[string]any{"path": "a.txt"})); r != "declined" {
		t.Fatalf("alice: reason %q, want declined", r)
	}
	if m := signed.text(); !strings.Contains(m, `Requested by: "user:alice"`) {
		t.Fatalf("signed-in prompt does not name the principal:\n%s", m)
	}
}
