package mcpsafe_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client that forwards only content (not structuredContent) to the model
// must still give it the token: the structured result is serialized in a
// text block as well, and the token from there redeems.
func TestTokenInTextContent(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{})
	res := callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt"})
	want := token(t, res)
	var fromText result.Required
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok && strings.HasPrefix(tc.Text, "{") {
			if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fromText.ApprovalToken != want || fromText.Status != "approval_required" || fromText.Plan.Summary == "" {
		t.Fatalf("text content carries %+v; structured token %q", fromText, want)
	}
	if !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "approval_token of the JSON below") {
		t.Fatalf("instructions: %q", res.Content[0].(*mcp.TextContent).Text)
	}
	// The model, having seen only the text, calls again with it.
	if res := callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": fromText.ApprovalToken}); res.IsError {
		t.Fatalf("redeeming the token from the text: %v", text(res))
	}
	if !e.notes.has("done.txt") {
		t.Fatal("not renamed")
	}
}
