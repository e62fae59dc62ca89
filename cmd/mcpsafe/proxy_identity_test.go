package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/seal"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
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

// A ledger other processes share needs an explicit audience; the refusal
// names the flag and comes before any connection to the store.
func TestSharedLedgerNeedsAudience(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := seal.WriteKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ledger, audience string
		ok               bool
	}{
		{"file:" + filepath.Join(t.TempDir(), "l.db"), "", false},
		{"redis://127.0.0.1:1/0", "", false}, // nothing listens there: refused before connecting
		{"postgres://postgres@127.0.0.1:1/test", "", false},
		{"REDIS://127.0.0.1:1/0", "", false},
		{"memory:", "", true},
		{"", "", true},
		{"file:" + filepath.Join(t.TempDir(), "l.db"), "my-proxy", true},
	} {
		up := &mcp.CommandTransport{Command: exec.Command("some-mcp-server", "--flag")}
		conf, err := proxyStores(context.Background(), serverconf.Config{
			LedgerURL: c.ledger, Audience: c.audience, KeyFile: keyFile, JournalPath: filepath.Join(t.TempDir(), "j.jsonl"),
		}, nil, up)
		if c.ok {
			if err != nil {
				t.Errorf("%s, audience %q: %v", c.ledger, c.audience, err)
				continue
			}
			want := c.audience
			if want == "" {
				want = "mcpsafe-proxy/some-mcp-server/"
			}
			if !strings.HasPrefix(conf.Options.Audience, want) {
				t.Errorf("%s: audience %q", c.ledger, conf.Options.Audience)
			}
			conf.Close()
			continue
		}
		if err == nil {
			conf.Close()
			t.Errorf("%s with the default audience: started", c.ledger)
			continue
		}
		if !strings.Contains(err.Error(), "--audience") || strings.Contains(err.Error(), "127.0.0.1") {
			t.Errorf("%s: error %q should name --audience and not echo the URL", c.ledger, err)
		}
	}
}
