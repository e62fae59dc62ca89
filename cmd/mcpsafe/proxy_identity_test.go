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
	if !strings.Contains(m, `server: "files.example.internal" (the upstream calls itself "secure-filesystem-server"`) {
		t.Fatalf("the approval prompt does not name the server: %q", m)
	}
}
