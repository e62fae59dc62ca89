package mcpsafe_test

import (
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client that forwards only content (not structuredContent) to the model
// must still give it the token: the one text block carries the plan and the
// token, and the token from there redeems. The token appears once in the
// content (no second block repeating the structured content).
func TestTokenInTextContent(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{})
	res := callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt"})
	want := token(t, res)
	if len(res.Content) != 1 {
		t.Fatalf("%d content blocks, want 1", len(res.Content))
	}
	txt := res.Content[0].(*mcp.TextContent).Text
	const lead = `plus "approval_token" set to "`
	i := strings.Index(txt, lead)
	if i < 0 {
		t.Fatalf("instructions: %q", txt)
	}
	fromText, _, ok := strings.Cut(txt[i+len(lead):], `"`)
	if !ok || fromText != want || strings.Count(txt, want) != 1 {
		t.Fatalf("text carries %q (%d times); structured token %q", fromText, strings.Count(txt, want), want)
	}
	if !strings.Contains(txt, "Plan: ") {
		t.Fatalf("the text does not show the plan: %q", txt)
	}
	// Attack: the text token with one character changed is refused.
	forged := []byte(fromText)
	if forged[len(forged)/2] == 'A' {
		forged[len(forged)/2] = 'B'
	} else {
		forged[len(forged)/2] = 'A'
	}
	wantRefused(t, callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": string(forged)}), mcpsafe.ReasonTokenInvalid)
	// The model, having seen only the text, calls again with it.
	if res := callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt", "approval_token": fromText}); res.IsError {
		t.Fatalf("redeeming the token from the text: %v", text(res))
	}
	if !e.notes.has("done.txt") {
		t.Fatal("not renamed")
	}
}
