package files_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tokenFixture is a files server whose client cannot elicit, so plans come
// back to the model as approval_required results.
func tokenFixture(t *testing.T) (root string, cs *mcp.ClientSession) {
	t.Helper()
	root = t.TempDir()
	gate, path := journaled(t)
	gate.AllowTokenFor = []mcpsafe.OptIn{{Tool: files.DeleteFile}}
	srv, err := files.NewServer(context.Background(), files.Config{Roots: []string{root}, Gate: gate, JournalPath: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "model", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return root, cs
}

var hexRun = regexp.MustCompile(`[0-9a-fA-F]{8,}`)

// leaksDigest reports a run of 8 or more hex digits in what the model sees
// that is part of the SHA-256 of content: enough to confirm a guess.
func leaksDigest(seen, content string) string {
	sum := sha256.Sum256([]byte(content))
	digest := hex.EncodeToString(sum[:])
	for _, run := range hexRun.FindAllString(strings.ToLower(seen), -1) {
		for i := 0; i+8 <= len(run); i++ {
			if strings.Contains(digest, run[i:i+8]) {
				return run
			}
		}
	}
	return ""
}

func modelView(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var fingerprintRE = regexp.MustCompile(`Content fingerprint: ([0-9a-f]{12})\b`)

// TestPlanIsNoContentOracle: the model cannot read pin.txt, so nothing it
// is shown of a plan (approval_required text and structured content, and
// a target_changed refusal) may let it test a guess of the content: no
// digest, and no prefix of one. The control: the plan still shows the
// human a short fingerprint, which differs between contents, and the
// approval still binds the content (a changed file is target_changed; the
// unchanged one is deleted). (mutant: files-plan-shows-content-digest)
func TestPlanIsNoContentOracle(t *testing.T) {
	root, cs := tokenFixture(t)
	write := func(name, body string) {
		t.Helper()
		must(t, os.WriteFile(filepath.Join(root, name), []byte(body), 0o600))
	}
	call := func(tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	write("pin.txt", "4711\n")
	write("other.txt", "0815\n")

	del := call(files.DeleteFile, map[string]any{"path": "pin.txt"})
	mv := call(files.MoveFile, map[string]any{"source": "pin.txt", "destination": "pin2.txt"})
	for name, res := range map[string]*mcp.CallToolResult{"delete plan": del, "move plan": mv} {
		seen := modelView(t, res)
		if !strings.Contains(seen, "approval_required") {
			t.Fatalf("%s: not an approval_required result: %s", name, seen)
		}
		if run := leaksDigest(seen, "4711\n"); run != "" {
			t.Fatalf("%s shows the model %q, part of the content's SHA-256: %s", name, run, seen)
		}
	}
	// Control: a short fingerprint is there for the human, last in the
	// details, and another content has another one.
	m := fingerprintRE.FindStringSubmatch(modelView(t, del))
	if m == nil {
		t.Fatalf("the plan shows no content fingerprint: %s", modelView(t, del))
	}
	if !strings.Contains(modelView(t, mv), "Content fingerprint: "+m[1]) {
		t.Fatalf("the move plan's details lack the same fingerprint %s: %s", m[1], modelView(t, mv))
	}
	o := fingerprintRE.FindStringSubmatch(modelView(t, call(files.DeleteFile, map[string]any{"path": "other.txt"})))
	if o == nil || o[1] == m[1] {
		t.Fatalf("equal-sized files with different content share fingerprint %v / %v", m, o)
	}

	// A refusal after the content changed says so without any digest.
	tok := func(res *mcp.CallToolResult) string {
		var sc struct {
			Token string `json:"approval_token"`
		}
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &sc)
		return sc.Token
	}
	write("pin.txt", "1234\n")
	refused := call(files.DeleteFile, map[string]any{"path": "pin.txt", mcpsafe.TokenField: tok(del)})
	seen := modelView(t, refused)
	if !refused.IsError || !strings.Contains(seen, mcpsafe.ReasonTargetChanged) {
		t.Fatalf("changed content not refused: %s", seen)
	}
	for _, c := range []string{"4711\n", "1234\n"} {
		if run := leaksDigest(seen, c); run != "" {
			t.Fatalf("the refusal shows %q of a content digest: %s", run, seen)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "pin.txt")); err != nil {
		t.Fatal("the changed file was deleted")
	}
	// Control: an unchanged file's approval runs.
	fresh := call(files.DeleteFile, map[string]any{"path": "pin.txt"})
	if run := leaksDigest(modelView(t, fresh), "1234\n"); run != "" {
		t.Fatalf("new plan leaks %q", run)
	}
	if res := call(files.DeleteFile, map[string]any{"path": "pin.txt", mcpsafe.TokenField: tok(fresh)}); res.IsError {
		t.Fatalf("approved delete refused: %s", modelView(t, res))
	}
	if _, err := os.Stat(filepath.Join(root, "pin.txt")); !os.IsNotExist(err) {
		t.Fatal("approved delete did not delete")
	}
}
