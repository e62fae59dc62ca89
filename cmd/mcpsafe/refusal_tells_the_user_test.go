package main

import (
	"strings"
	"testing"
)

// A client that cannot elicit is refused an irreversible call, and the
// refusal tells the model what to tell its user and what the operator can
// change, naming the tool: the message is the user's only way out. The
// default stays a refusal: nothing ran.
func TestElicitationUnsupportedTellsTheUserWhatToDo(t *testing.T) {
	w := newWorkspace(t)
	cs := w.serve(nil) // the Go SDK client without a handler declares no elicitation
	res := call(t, cs, "delete_file", map[string]any{"path": "cache.txt"})
	if r := reasonOf(t, res); r != "elicitation_unsupported" {
		t.Fatalf("reason %q, want elicitation_unsupported: %v", r, res.Content)
	}
	msg, _ := sc(t, res)["message"].(string)
	for _, want := range []string{
		"Nothing ran.", "Tell the user:", "a client that supports elicitation",
		"--approval-page 127.0.0.1:0", "mcpsafe approvals serve", "--approver-url URL --approver-secret-file FILE",
		"--allow-token-for delete_file",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal message lacks %q:\n%s", want, msg)
		}
	}
	if content(t, w.path("cache.txt")) != "cache" {
		t.Fatal("the refused call ran")
	}

	// Control: the operator's change the message names works, by name, and
	// the user still approves (a token, not a run).
	w2 := newWorkspace(t)
	cs2 := w2.serve(nil, "--allow-token-for", "delete_file")
	tok := tokenOf(t, call(t, cs2, "delete_file", map[string]any{"path": "cache.txt"}))
	if content(t, w2.path("cache.txt")) != "cache" {
		t.Fatal("the file went before the token was presented")
	}
	if res := call(t, cs2, "delete_file", map[string]any{"path": "cache.txt", "approval_token": tok}); res.IsError || content(t, w2.path("cache.txt")) != "<missing>" {
		t.Fatalf("with the opt-in the approved call did not run: %v", res.Content)
	}
}
