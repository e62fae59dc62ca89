package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The control of the shared-ledger refusal: with --audience the binary
// starts on a shared file ledger, and the plan names that audience.
func TestProxyBinarySharedLedgerWithAudience(t *testing.T) {
	fsBin := npmFilesystemServer(t)
	base := t.TempDir()
	data, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	key := filepath.Join(base, "key")
	if out, err := exec.Command(binary, "keygen", key).CombinedOutput(); err != nil {
		t.Fatalf("keygen: %v: %s", err, out)
	}
	var msg atomic.Value
	cs := startProxy(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg.Store(r.Params.Message)
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}, "--journal", filepath.Join(base, "journal.jsonl"), "--ledger", "file:"+filepath.Join(base, "ledger.db"),
		"--key-file", key, "--audience", "files.example.internal", "--", fsBin, data)
	if res := call(t, cs, "write_file", map[string]any{"path": filepath.Join(data, "x"), "content": "x"}); !res.IsError {
		t.Fatal("declined write succeeded")
	}
	m, _ := msg.Load().(string)
	// Named as a person knows it (no name in a policy or a gateway here:
	// the upstream's own), never by the audience's hash.
	if !strings.Contains(m, `server: "secure-filesystem-server"`) || strings.Contains(m, "mcpsafe-proxy/") {
		t.Fatalf("the approval prompt does not name the server: %q", m)
	}
}
