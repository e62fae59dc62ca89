package proxy

import (
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveGatewayStdio runs g.ServeStdio on pipes and connects a real SDK
// client of the 2025-11-25 generation to it.
func serveGatewayStdio(t *testing.T, g *Gateway, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cr, gw := io.Pipe()
	gr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		g.ServeStdio(ctx, gr, gw)
		close(done)
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-client"}, copts).
		Connect(context.Background(), &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); cancel(); cw.Close(); gw.Close(); <-done })
	return cs
}

// Over stdio, a pass-through call takes its server's fast lane with the
// upstream's tool name; a gated call never does (attack), whatever its
// prefix or spelling, and is asked for as on the SDK path.
func TestGatewayFastLane(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "f.txt"), "fast")
	gs := newGoServer(t)
	g, _ := newGateway(t, "servers:\n"+fsServerYAML(t, "fs", dir, "")+gs.yaml(t, "go", "    prefix: false\n"))
	asked := 0
	cs := serveGatewayStdio(t, g, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	fs, goSrv := g.Server("fs"), g.Server("go")
	res := call(t, cs, "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "f.txt")})
	if res.IsError || !strings.Contains(text(res), "fast") || fs.pipe.fastCalls.Load() != 1 {
		t.Fatalf("control, pass-through: %s (fast calls %d)", text(res), fs.pipe.fastCalls.Load())
	}
	// The Go upstream's session is of the 2026-07-28 generation, so its
	// fast lane stays closed to this client, as with a single proxy.
	if res := call(t, cs, "echo", map[string]any{}); res.IsError || goSrv.pipe.fastCalls.Load() != 0 {
		t.Fatalf("bare pass-through: %s (fast calls %d)", text(res), goSrv.pipe.fastCalls.Load())
	}
	target := filepath.Join(dir, "w.txt")
	for _, name := range []string{"fs__write_file", "note"} {
		res := call(t, cs, name, map[string]any{"path": target, "content": "x"})
		if !res.IsError || reasonOf(t, res) != "declined" {
			t.Fatalf("%s: %s", name, text(res))
		}
	}
	if asked != 2 || fs.pipe.fastCalls.Load() != 1 || goSrv.pipe.fastCalls.Load() != 0 || gs.calls() != "" {
		t.Fatalf("a gated call took the fast lane: asked %d, fast %d/%d, calls %q", asked, fs.pipe.fastCalls.Load(), goSrv.pipe.fastCalls.Load(), gs.calls())
	}
	// Attack: the upstream's own name of a gated tool under another
	// server's prefix, and a bare upstream name that no server serves.
	for _, name := range []string{"go__write_file", "write_file"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"path": target, "content": "x"}})
		if err == nil && !res.IsError {
			t.Fatalf("%s ran: %s", name, text(res))
		}
	}
	if fs.pipe.fastCalls.Load() != 1 {
		t.Fatal("an unknown name took the fast lane")
	}
}

// A fast-lane call whose upstream exits before answering gets an error
// response (the client would wait forever otherwise); control: no call in
// flight, nothing is sent.
func TestFastLaneUpstreamExitFailsCallsInFlight(t *testing.T) {
	for _, inFlight := range []bool{true, false} {
		u, err := StartUpstream(exec.Command("sh", "-c", "read line; exit 3"))
		if err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		var mu sync.Mutex
		u.setDown(func(line []byte) error {
			mu.Lock()
			got = append(got, line)
			mu.Unlock()
			return nil
		})
		if inFlight && !u.register(fastCall{id: `"c-7"`}) {
			t.Fatal("register")
		}
		u.writeUpstream([]byte(`{"jsonrpc":"2.0","id":"c-7","method":"tools/call","params":{"name":"x"}}` + "\n"))
		<-u.exited
		mu.Lock()
		if inFlight && (len(got) != 1 || !strings.Contains(string(got[0]), `"id":"c-7","error"`)) {
			t.Fatalf("in flight: %q", got)
		}
		if !inFlight && len(got) != 0 {
			t.Fatalf("nothing in flight, yet sent: %q", got)
		}
		mu.Unlock()
	}
}
