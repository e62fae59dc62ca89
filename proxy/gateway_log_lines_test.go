package proxy

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log destination the gateway's goroutines share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The gateway's log at INFO (as `mcpsafe proxy --config` writes it) carries
// the gateway's own lines, not the SDK's ("server session connected",
// "session initialized"), which it used to pass the same logger. The
// control: the gateway's warning about an unreachable server and its
// INFO line when that server starts are there.
func TestGatewayLogHasNoSDKInfoLines(t *testing.T) {
	var buf lockedBuffer
	up, late := newGoServer(t), newGoServer(t)
	writeFile(t, late.Block, "")
	dir := t.TempDir()
	_, f := gatewayFile(t, dir, "servers:\n"+up.yaml(t, "up", "")+late.yaml(t, "late", ""))
	opts := gatewayTestOptions()
	opts.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectGateway(t, g, nil)
	if res := call(t, cs, "up__echo", map[string]any{}); res.IsError {
		t.Fatal(text(res))
	}
	removeBlock(t, late)
	eventually(t, "the late server starts", func() bool { return strings.Contains(buf.String(), "gateway server started") })
	cs.Close()
	log := buf.String()
	for _, sdk := range []string{"session initialized", "server session connected", "server connecting", "server session ended"} {
		if strings.Contains(log, sdk) {
			t.Errorf("the log has the SDK's %q:\n%s", sdk, log)
		}
	}
	if !strings.Contains(log, "gateway server unreachable") || strings.Contains(log, "proxy: proxy:") {
		t.Errorf("the gateway's own lines:\n%s", log)
	}
}
