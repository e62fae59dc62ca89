package proxy

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An effect's read tool that answers with input requests instead of the
// file's content has not read the file: the call is refused before the
// human is asked, never shown as an overwrite of an empty file. Control:
// the same read answering with the content shows the overwrite, asked once.
func TestEffectReadMustAnswerAlone(t *testing.T) {
	for _, c := range []struct {
		name  string
		asks  bool
		asked int32
	}{
		{"read asks for input", true, 0},
		{"control: read answers", false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := mcp.NewServer(&mcp.Implementation{Name: "notes"}, nil)
			var wrote atomic.Int32
			schema := map[string]any{"type": "object", "properties": map[string]any{
				"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}}
			up.AddTool(&mcp.Tool{Name: "write_note", InputSchema: schema},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					wrote.Add(1)
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
				})
			up.AddTool(&mcp.Tool{Name: "read_note", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
				func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					if c.asks {
						return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "which note?",
							RequestedSchema: map[string]any{"type": "object"}}}, RequestState: "read-state"}, nil
					}
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "old line\n"}}}, nil
				})
			ut, st := mcp.NewInMemoryTransports()
			ss, err := up.Connect(context.Background(), st, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ss.Close() })
			s := newProxy(t, ut, mustPolicy(t, "mode: elicit\ntools:\n  write_note:\n    effect:\n      write:\n"+
				"        path: args.path\n        content: args.content\n        read: {tool: read_note, args: {path: args.path}}\n"))
			var asked atomic.Int32
			var msg atomic.Value
			cs := connect(t, s, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				msg.Store(r.Params.Message)
				return answer("accept", true)(ctx, r)
			}})
			res := call(t, cs, "write_note", map[string]any{"path": "a.txt", "content": "new line\n"})
			if asked.Load() != c.asked {
				t.Fatalf("asked %d times, want %d: %s", asked.Load(), c.asked, text(res))
			}
			if c.asks {
				if reasonOf(t, res) != mcpsafe.ReasonPreviewFailed || wrote.Load() != 0 {
					t.Fatalf("want refused (%s) and not run; got %s, ran %d times", mcpsafe.ReasonPreviewFailed, text(res), wrote.Load())
				}
				return
			}
			if m, _ := msg.Load().(string); res.IsError || wrote.Load() != 1 || !strings.Contains(m, `overwrites "a.txt", which exists (1 line now, 1 after)`) {
				t.Fatalf("control: %s, ran %d times, asked with:\n%s", text(res), wrote.Load(), m)
			}
		})
	}
}
