package mcpsafe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The README's library example, kept compiling and running here: a typed
// tool (Register), its input schema inferred from noteID.
func Example() {
	dir, _ := os.MkdirTemp("", "mcpsafe-example-")
	defer os.RemoveAll(dir)
	j, err := journal.Open(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		panic(err)
	}
	defer j.Close()
	notes := map[string]string{"n1": "groceries"}
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)

	type noteID struct {
		ID string `json:"id" jsonschema:"the note to delete"`
	}
	type note struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	gate, err := mcpsafe.New(mcpsafe.Options{Audience: "notes-server", Journal: j})
	if err != nil {
		panic(err)
	}
	err = mcpsafe.Register(gate, server, mcpsafe.ToolFor[noteID, note]{
		Tool: mcpsafe.Tool{Name: "delete_note", Irreversible: true},
		Resolve: func(ctx context.Context, c mcpsafe.Call, in noteID) (note, error) {
			title, ok := notes[in.ID]
			if !ok {
				return note{}, errors.New("no such note")
			}
			return note{ID: in.ID, Title: title}, nil
		},
		Preview: func(ctx context.Context, c mcpsafe.Call, in noteID, n note) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "Delete note " + prompt.Quote(n.Title)}, nil
		},
		Execute: func(ctx context.Context, c mcpsafe.Call, in noteID, n note, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			delete(notes, n.ID)
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

// A typed tool on the token path: the State is bound into the approval, so
// a note that changed after the plan was shown is not deleted, and Execute
// receives the checked call (canonical arguments, the digest the approval
// bound, the principal).
func ExampleRegister() {
	type args struct {
		ID string `json:"id"`
	}
	type state struct {
		Body string `json:"body"` // what the approval binds
	}
	notes := map[string]string{"n1": "milk, eggs"}
	gate, _ := mcpsafe.New(mcpsafe.Options{Audience: "notes-server", Journal: journal.Discard})
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	err := mcpsafe.Register(gate, server, mcpsafe.ToolFor[args, state]{
		Tool: mcpsafe.Tool{Name: "clear_note"}, // reversible: a one-time token when the client cannot elicit
		Resolve: func(ctx context.Context, c mcpsafe.Call, in args) (state, error) {
			body, ok := notes[in.ID]
			if !ok {
				return state{}, mcpsafe.Refuse("not_found", "no note %s", prompt.Quote(in.ID))
			}
			return state{Body: body}, nil
		},
		Preview: func(ctx context.Context, c mcpsafe.Call, in args, s state) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: fmt.Sprintf("Clear note %s (%d bytes)", prompt.Quote(in.ID), len(s.Body))}, nil
		},
		Execute: func(ctx context.Context, c mcpsafe.Call, in args, s state, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			notes[in.ID] = ""
			fmt.Printf("cleared %s for %s: arguments %s, digest %d hex digits\n", in.ID, c.Principal, c.Arguments, len(c.ArgsDigest))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "cleared"}}}, nil
		},
	})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(ctx, st, nil)
	defer ss.Close()
	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	defer cs.Close()
	call := func(tok string) *mcp.CallToolResult {
		a := map[string]any{"id": "n1"}
		if tok != "" {
			a[mcpsafe.TokenField] = tok
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "clear_note", Arguments: a})
		if err != nil {
			panic(err)
		}
		return res
	}
	field := func(res *mcp.CallToolResult, name string) string {
		b, _ := json.Marshal(res.StructuredContent)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		s, _ := m[name].(string)
		return s
	}

	tok := field(call(""), mcpsafe.TokenField) // the plan is shown; the person says yes
	notes["n1"] = "milk, eggs, the new PIN"
	fmt.Println(field(call(tok), "reason"))
	call(field(call(""), mcpsafe.TokenField)) // shown and approved again, on the current state
	// Output:
	// target_changed
	// cleared n1 for stdio: arguments {"id":"n1"}, digest 64 hex digits
}
