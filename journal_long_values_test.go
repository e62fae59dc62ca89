package mcpsafe_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A long write, approved and run: by default the journal file holds none
// of the content, only its SHA-256 and size (and still verifies and
// shows); with journal.WithKeepLongValues(true) it holds the content
// whole. A secret-named argument is redacted in both, its value nowhere in
// the file.
func TestJournalKeepsNoLongContentByDefault(t *testing.T) {
	const secret = "s3cr3t-api-token-value-7f2a"
	content := lines("confidential line", 2000)
	sum := sha256.Sum256([]byte(content))
	digest := fmt.Sprintf(`{"sha256":"%s","bytes":%d}`, hex.EncodeToString(sum[:]), len(content))
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.jsonl")
			j, err := journal.Open(path, journal.WithKeepLongValues(keep))
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			f := &memFile{}
			var runs atomic.Int32
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode, o.Journal = mcpsafe.ModeElicit, j
				*tools = append(*tools, writeTool(f, &runs))
			})
			cs := e.connect(client{elicit: accept})
			wantExecuted(t, callTool(t, cs, "write_note", map[string]any{"path": "notes.txt", "content": content, "api_token": secret}))
			// A refused call (declined) of the same content is journaled too.
			cs2 := e.connect(client{elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "decline"}, nil
			}})
			wantRefused(t, callTool(t, cs2, "write_note", map[string]any{"path": "notes.txt", "content": content, "api_token": secret}), mcpsafe.ReasonDeclined)
			if err := j.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(secret)) {
				t.Fatal("the journal file holds the secret argument's value")
			}
			hasContent := bytes.Contains(b, []byte("confidential line 1000"))
			if keep {
				if !hasContent {
					t.Fatal("WithKeepLongValues(true): the approved write's content is not in the journal")
				}
			} else {
				if hasContent {
					t.Fatal("the journal file holds the written content by default")
				}
				if n := bytes.Count(b, []byte(digest)); n < 3 { // approval, outcome, the declined call
					t.Fatalf("the journal names the content by its digest and size %d times, want 3 (approval, outcome, declined):\n%.2000s", n, b)
				}
			}
			if _, err := journal.VerifyFile(path); err != nil {
				t.Fatalf("journal verify: %v", err)
			}
			var out strings.Builder
			if err := journal.ShowFile(&out, path, journal.Filter{}); err != nil {
				t.Fatalf("journal show: %v", err)
			}
			if !strings.Contains(out.String(), "write_note") {
				t.Fatalf("journal show lists no call:\n%s", out.String())
			}
		})
	}
}
