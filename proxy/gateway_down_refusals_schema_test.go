package proxy

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call to a tool of a server that is down is refused as
// server_unavailable. A tool that had an output schema (server-filesystem's
// read_text_file, write_file under mode: elicit) gets the refusal without
// structuredContent, which would not follow the schema a client may still
// hold (TypeScript SDK 1.x validates error results too); the reason stays
// in the text. The control: a tool without a schema keeps the structured
// refusal.
func TestGatewayDownRefusalsFollowOutputSchemas(t *testing.T) {
	gs := newGoServer(t)
	dir := t.TempDir()
	data := t.TempDir()
	_, f := gatewayFile(t, dir, "servers:\n"+gs.yaml(t, "go", "")+fsServerYAML(t, "fs", data, "    policy: {mode: elicit}\n"))
	opts := gatewayTestOptions()
	opts.RestartMin = time.Hour // stays down
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectGateway(t, g, nil)
	pid, err := strconv.Atoi(strings.TrimSpace(call(t, cs, "go__pid", map[string]any{}).Content[0].(*mcp.TextContent).Text))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, gs.Block, "")
	fsPid := g.Server("fs").pipe.cmd.Process.Pid
	for _, p := range []int{pid, fsPid} {
		proc, err := os.FindProcess(p)
		if err == nil {
			err = proc.Kill()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "both servers down", func() bool { return g.Server("go") == nil && g.Server("fs") == nil })
	for _, c := range []struct {
		tool       string
		structured bool
	}{{"fs__read_text_file", false}, {"fs__write_file", false}, {"go__pid", true}} {
		res := call(t, cs, c.tool, map[string]any{"path": filepath.Join(data, "a.txt"), "content": "x"})
		if !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "Refused ("+ReasonServerUnavailable+")") {
			t.Fatalf("%s: %s", c.tool, text(res))
		}
		if (res.StructuredContent != nil) != c.structured {
			t.Errorf("%s: structured content %v, want it present: %v", c.tool, res.StructuredContent, c.structured)
		}
	}
}
