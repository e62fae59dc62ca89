package files_test

// The server over the real SDK: the HTTP transport handler serving
// a real client, an opt-in named twice refused at startup, and a safefs
// error of no known kind (a name longer than the kernel allows) refused as
// "failed" instead of being passed through as a success.

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestHTTPHandlerServesTools(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("abc"), 0o644))
	s, err := files.NewServer(context.Background(), files.Config{Roots: []string{root}, Gate: mcpsafe.Options{Journal: journal.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, stateless := range []bool{true, false} {
		hs := httptest.NewServer(mcphttp.HTTP{Stateful: !stateless}.MCPHandler(s.MCP))
		c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
		if err != nil {
			hs.Close()
			t.Fatalf("stateless=%v: connect: %v", stateless, err)
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: files.FileInfo, Arguments: map[string]any{"path": "a.txt"}})
		if err != nil || res.IsError {
			t.Errorf("stateless=%v: file_info over HTTP: %v %v", stateless, err, res)
		}
		// The gated tool over HTTP without an approval path must not run.
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: files.DeleteFile, Arguments: map[string]any{"path": "a.txt"}})
		if err == nil && !res.IsError && res.StructuredContent == nil {
			t.Errorf("stateless=%v: delete_file answered with neither refusal nor plan: %+v", stateless, res)
		}
		if _, err := os.Stat(filepath.Join(root, "a.txt")); err != nil {
			t.Errorf("stateless=%v: a.txt gone after an unapproved delete over HTTP: %v", stateless, err)
		}
		cs.Close()
		hs.Close()
	}
}

func TestNewServerRefusesDuplicateOptIn(t *testing.T) {
	root := t.TempDir()
	dup := []mcpsafe.OptIn{{Tool: files.DeleteFile}, {Tool: files.DeleteFile}}
	s, err := files.NewServer(context.Background(), files.Config{Roots: []string{root}, Gate: mcpsafe.Options{Journal: journal.Discard, AllowTokenFor: dup}})
	if err == nil {
		s.Close()
		t.Fatal("NewServer accepted an opt-in named twice")
	}
	if !strings.Contains(err.Error(), "twice") {
		t.Fatalf("error should say the opt-in is named twice: %v", err)
	}
	// Control: named once, accepted.
	s, err = files.NewServer(context.Background(), files.Config{Roots: []string{root}, Gate: mcpsafe.Options{Journal: journal.Discard, AllowTokenFor: dup[:1]}})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestUnknownErrorKindRefusedAsFailed(t *testing.T) {
	f := newFixture(t, "accept")
	long := strings.Repeat("n", 300) // NAME_MAX is 255: ENAMETOOLONG, no sentinel of its own
	for _, tool := range []string{files.FileInfo, files.ListDirectory} {
		res, m := f.call(t, tool, map[string]any{"path": long})
		if !res.IsError || m["reason"] != "failed" || !strings.Contains(resultText(res), "file name too long") {
			t.Errorf("%s on a 300-byte name: want reason failed with the OS cause, got %v %s", tool, m, resultText(res))
		}
	}
	// Control: the longest legal name works.
	ok := strings.Repeat("n", 255)
	must(t, os.WriteFile(filepath.Join(f.root, ok), []byte("x"), 0o644))
	if res, m := f.call(t, files.FileInfo, map[string]any{"path": ok}); res.IsError {
		t.Fatalf("255-byte name refused: %v %s", m, resultText(res))
	}
}

// journaled is the gate's options with a journal in a file of its own
// (outside the roots), closed after the server the test builds on it.
func journaled(t *testing.T) (mcpsafe.Options, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return mcpsafe.Options{Journal: j}, path
}
