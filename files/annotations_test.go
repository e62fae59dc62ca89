package files_test

import (
	"context"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What a client reads from tools/list: read-only tools are idempotent and
// not destructive; the gated ones are neither read-only nor idempotent.
func TestToolAnnotations(t *testing.T) {
	s, err := files.NewServer(context.Background(), files.Config{Roots: []string{t.TempDir()}, Gate: mcpsafe.Options{Journal: journal.Discard}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.MCP.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]bool{ // readOnly, idempotent
		files.ListDirectory: {true, true}, files.FileInfo: {true, true},
		files.DeleteFile: {false, false}, files.MoveFile: {false, false},
	}
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			continue
		}
		delete(want, tool.Name)
		if a := tool.Annotations; a == nil || a.ReadOnlyHint != w[0] || a.IdempotentHint != w[1] {
			t.Errorf("%s: annotations %+v, want readOnly=%v idempotent=%v", tool.Name, a, w[0], w[1])
		}
	}
	if len(want) > 0 {
		t.Fatalf("tools missing: %v", want)
	}
}
