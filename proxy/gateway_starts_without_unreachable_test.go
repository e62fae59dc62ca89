package proxy

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe/metrics"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// componentUp reads mcpsafe_component_up for component from m's registry:
// 1 up, 0 down, -1 not set.
func componentUp(t *testing.T, m *metrics.Metrics, component string) float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "mcpsafe_component_up" {
			continue
		}
		for _, mm := range f.GetMetric() {
			for _, l := range mm.GetLabel() {
				if l.GetName() == "component" && l.GetValue() == component {
					return mm.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// One member that cannot be reached does not take the gateway down: with
// a healthy server, one whose command exits at once and one whose URL
// refuses connections, the gateway serves the healthy one's tools, refuses
// a call to the others as server_unavailable (saying why), reports them
// down in mcpsafe_component_up, and retries them with the restart
// backoff: when they come up their tools appear and the client hears
// tools/list_changed. The control: with no server up at all it does not
// start.
func TestGatewayStartsWithoutUnreachableServers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there until the test starts the upstream
	good, late := newGoServer(t), newGoServer(t)
	writeFile(t, late.Block, "") // its command exits 1 while this exists
	body := "servers:\n" + good.yaml(t, "good", "") + late.yaml(t, "late", "") + "  web:\n    url: http://" + addr + "/\n"
	dir := t.TempDir()
	_, f := gatewayFile(t, dir, body)
	m := metrics.New()
	opts := gatewayTestOptions()
	opts.Metrics = m
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), opts)
	if err != nil {
		t.Fatalf("one unreachable server took the gateway down: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	var changed atomic.Int32
	cs := connectGateway(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed.Add(1)
	}})
	if !hasTool(t, cs, "good__echo") || hasTool(t, cs, "late__echo") || hasTool(t, cs, "web__echo") {
		t.Fatalf("tools listed: %v", toolNames(t, cs))
	}
	if res := call(t, cs, "good__echo", map[string]any{}); res.IsError {
		t.Fatalf("the healthy server: %s", text(res))
	}
	res := call(t, cs, "late__echo", map[string]any{})
	if reasonOf(t, res) != ReasonServerUnavailable || !strings.Contains(text(res), "has not started yet") {
		t.Fatalf("a call to the unreachable server: %s", text(res))
	}
	if componentUp(t, m, "server:good") != 1 || componentUp(t, m, "server:late") != 0 || componentUp(t, m, "server:web") != 0 {
		t.Fatalf("mcpsafe_component_up: good %v, late %v, web %v", componentUp(t, m, "server:good"), componentUp(t, m, "server:late"), componentUp(t, m, "server:web"))
	}

	removeBlock(t, late)
	httpUpstream(t, addr)
	eventually(t, "the late servers' tools are listed", func() bool {
		return hasTool(t, cs, "late__echo") && hasTool(t, cs, "web__echo")
	})
	eventually(t, "tools/list_changed", func() bool { return changed.Load() > 0 })
	if res := call(t, cs, "late__echo", map[string]any{}); res.IsError {
		t.Fatalf("the server that came up: %s", text(res))
	}
	if res := call(t, cs, "web__echo", map[string]any{}); res.IsError || !strings.Contains(text(res), "http echo") {
		t.Fatalf("the HTTP server that came up: %s", text(res))
	}
	if componentUp(t, m, "server:late") != 1 || componentUp(t, m, "server:web") != 1 {
		t.Fatal("mcpsafe_component_up still says down")
	}

	t.Run("control: no server up does not start", func(t *testing.T) {
		_, f := gatewayFile(t, t.TempDir(), "servers:\n"+late.yaml(t, "late", ""))
		writeFile(t, late.Block, "")
		g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(t.TempDir(), "j.jsonl"))), gatewayTestOptions())
		if err == nil {
			g.Close()
			t.Fatal("a gateway with no server up started")
		}
		if !strings.Contains(err.Error(), "no server of the gateway started") || strings.Contains(err.Error(), "proxy: proxy:") ||
			strings.Count(err.Error(), "proxy: ") != 1 {
			t.Fatalf("error: %v", err)
		}
	})
}

// removeBlock lets a held-down Go upstream start.
func removeBlock(t *testing.T, g goServer) {
	t.Helper()
	if err := os.Remove(g.Block); err != nil {
		t.Fatal(err)
	}
}
