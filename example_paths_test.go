package mcpsafe_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// desk is an out-of-band approver: a person at a desk who sees each
// request and answers. Real ones are a webhook or `mcpsafe approvals
// serve` (package channel); this one answers at once.
type desk struct {
	answer func(r approver.Request) approver.Decision
}

func (d desk) Approve(ctx context.Context, r approver.Request) (approver.Decision, error) {
	fmt.Printf("asked: %s\n", r.Summary)
	return d.answer(r), nil
}
func (desk) Awaiter() approver.Awaiter       { return nil } // no approval_pending handles
func (desk) Withdrawer() approver.Withdrawer { return nil }

// notesServer is a server with one gated tool, delete_note, on notes, and
// a client connected to it.
func notesServer(opts mcpsafe.Options, grants *mcpsafe.GrantPolicy, notes map[string]string) (*mcp.ClientSession, func()) {
	gate, err := mcpsafe.New(opts)
	if err != nil {
		panic(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	type noteID struct {
		ID string `json:"id"`
	}
	err = mcpsafe.Register(gate, server, mcpsafe.ToolFor[noteID, string]{
		Tool: mcpsafe.Tool{Name: "delete_note", Irreversible: grants == nil, Grants: grants},
		Resolve: func(ctx context.Context, c mcpsafe.Call, in noteID) (string, error) {
			body, ok := notes[in.ID]
			if !ok {
				return "", errors.New("no such note")
			}
			return body, nil
		},
		Preview: func(ctx context.Context, c mcpsafe.Call, in noteID, body string) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: fmt.Sprintf("Delete note %s (%d bytes)", in.ID, len(body))}, nil
		},
		Execute: func(ctx context.Context, c mcpsafe.Call, in noteID, body string, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			delete(notes, in.ID)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deleted " + in.ID + " (" + a.Decision + " by " + a.By + ")"}}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, _ := server.Connect(ctx, st, nil)
	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
	return cs, func() { cs.Close(); ss.Close(); gate.Close() }
}

func deleteNote(cs *mcp.ClientSession, id string) string {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"id": id}})
	if err != nil {
		panic(err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// The out-of-band channel: the person who decides is not behind the
// client, so the model cannot answer for them; the approval is journaled
// as channel-approved, with the approver the channel names. A denial
// refuses the call, and nothing runs.
func Example_channel() {
	notes := map[string]string{"n1": "groceries", "n2": "passwords"}
	cs, stop := notesServer(mcpsafe.Options{
		Audience: "notes-server", Journal: journal.Discard, Mode: mcpsafe.ModeChannel,
		Approver: desk{answer: func(r approver.Request) approver.Decision {
			return approver.Decision{Approved: r.Arguments != nil && string(r.Arguments) == `{"id":"n1"}`, Approvers: []string{"alice"}}
		}},
	}, nil, notes)
	defer stop()
	fmt.Println(deleteNote(cs, "n1"))
	fmt.Println(deleteNote(cs, "n2"))
	fmt.Println(len(notes), "note left")
	// Output:
	// asked: Delete note n1 (9 bytes)
	// deleted n1 (channel-approved by alice)
	// asked: Delete note n2 (9 bytes)
	// Refused (channel_denied): the approver did not approve the request
	// 1 note left
}

// A standing grant: the approver chooses one of the request's grant
// offers (here "exactly these arguments", for up to 3 calls in 10
// minutes) instead of approving a single call, and the same call then
// runs without asking again until the grant is used up (the fourth call
// asks again). Each use is one
// atomic step in the ledger, bound to the tool's policy and the caller.
func Example_standingGrant() {
	notes := map[string]string{}
	cs, stop := notesServer(mcpsafe.Options{
		Audience: "notes-server", Journal: journal.Discard, Mode: mcpsafe.ModeChannel,
		Approver: desk{answer: func(r approver.Request) approver.Decision {
			fmt.Printf("offered: %s\n", r.Grants[0].Label)
			return approver.Decision{Approved: true, Approvers: []string{"alice"}, Grant: r.Grants[0].ID}
		}},
	}, &mcpsafe.GrantPolicy{MaxTTL: 10 * time.Minute, MaxUses: 3}, notes)
	defer stop()
	for range 4 {
		notes["tmp"] = "scratch"
		fmt.Println(deleteNote(cs, "tmp"))
	}
	// Output:
	// asked: Delete note tmp (7 bytes)
	// offered: this and calls with "exactly these arguments", for 10m, 3 uses in all
	// deleted tmp (channel-approved by alice)
	// deleted tmp (grant-used by alice)
	// deleted tmp (grant-used by alice)
	// asked: Delete note tmp (7 bytes)
	// offered: this and calls with "exactly these arguments", for 10m, 3 uses in all
	// deleted tmp (channel-approved by alice)
}
