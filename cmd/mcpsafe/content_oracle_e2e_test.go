package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFilesPlanIsNoContentOracle runs the built binary over stdio: what a
// model gets back from a gated call (the approval_required result) carries
// no SHA-256 of a file it cannot read, nor a prefix of one, while the human
// prompt (elicitation) shows a short fingerprint and no digest either. The
// control: the token still deletes exactly the approved file.
// (mutant: files-plan-shows-content-digest)
func TestFilesPlanIsNoContentOracle(t *testing.T) {
	w := newWorkspace(t)
	w.write("pin.txt", "4711\n")
	sum := sha256.Sum256([]byte("4711\n"))
	digest := hex.EncodeToString(sum[:])
	leak := func(seen string) string {
		for _, run := range regexp.MustCompile(`[0-9a-f]{8,}`).FindAllString(strings.ToLower(seen), -1) {
			for i := 0; i+8 <= len(run); i++ {
				if strings.Contains(digest, run[i:i+8]) {
					return run
				}
			}
		}
		return ""
	}

	var prompt string
	human := w.serve(&mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		prompt = r.Params.Message
		return &mcp.ElicitResult{Action: "decline"}, nil
	}})
	call(t, human, "delete_file", map[string]any{"path": "pin.txt"})
	human.Close() // frees the journal for the next server
	if !strings.Contains(prompt, "Content fingerprint: ") || leak(prompt) != "" {
		t.Fatalf("human prompt: want a fingerprint and no digest: %q", prompt)
	}

	model := w.serve(nil, "--allow-token-for", "delete_file")
	res := call(t, model, "delete_file", map[string]any{"path": "pin.txt"})
	b, _ := json.Marshal(res)
	if run := leak(string(b)); run != "" {
		t.Fatalf("approval_required shows %q of the content's SHA-256: %s", run, b)
	}
	if !regexp.MustCompile(`Content fingerprint: [0-9a-f]{12}`).Match(b) {
		t.Fatalf("the plan shows no fingerprint: %s", b)
	}

	if res := call(t, model, "delete_file", map[string]any{"path": "pin.txt", "approval_token": tokenOf(t, res)}); res.IsError {
		t.Fatalf("approved delete refused: %v", res.Content)
	}
	if content(t, w.path("pin.txt")) != "<missing>" || content(t, w.path("cache.txt")) != "cache" {
		t.Fatal("the token did not delete exactly pin.txt")
	}
}
