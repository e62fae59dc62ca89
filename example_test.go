package mcpsafe_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The README's library example, kept compiling and running here.
func Example() {
	dir, _ := os.MkdirTemp("", "mcpsafe-example-")
	defer os.RemoveAll(dir)
	j, err := journal.Open(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		panic(err)
	}
	defer j.Close()
	notes := map[string]string{"n1": "groceries"}
	schema := map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}, "required": []string{"id"}}
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)

	gate, err := mcpsafe.New(mcpsafe.Options{Audience: "notes-server", Journal: j})
	if err != nil {
		panic(err)
	}
	err = gate.Register(server, mcpsafe.Tool{
		Name:         "delete_note",
		InputSchema:  schema,
		Irreversible: true,
		Resolve: func(ctx context.Context, c mcpsafe.Call) (mcpsafe.Resolved, error) {
			var a struct{ ID string }
			if err := c.Decode(&a); err != nil {
				return nil, err
			}
			title, ok := notes[a.ID]
			if !ok {
				return nil, errors.New("no such note")
			}
			return mcpsafe.Resolved{"id": a.ID, "title": title}, nil
		},
		Preview: func(ctx context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "Delete note " + prompt.Quote(r["title"].(string))}, nil
		},
		Execute: func(ctx context.Context, c mcpsafe.Call, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			delete(notes, a.Resolved["id"].(string))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted"}}}, nil
		},
	})
	if err != nil {
		panic(err)
	}

	// A client whose user approves.
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(ctx, st, nil)
	defer ss.Close()
	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
	}).Connect(ctx, ct, nil)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"id": "n1"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text, len(notes))
	// Output: deleted 0
}
