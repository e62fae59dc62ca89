package files_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approvalpage"
	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The local approval page shows what a delete would lose: the first lines
// of a text file, "binary, 12.3 KB" for one that is not text. The model
// never reads it: not in the pending answer, not in anything with a JSON
// form (a channel request, the journal). The page shows the plan too
// (control).
func TestPageShowsWhatADeleteWouldLose(t *testing.T) {
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "diary.txt"), []byte("Dear diary,\ntoday the secret is tangerine.\n"), 0o600))
	bin := append([]byte{0x7f, 'E', 'L', 'F', 0}, make([]byte, 12*1024+300)...)
	must(t, os.WriteFile(filepath.Join(root, "tool.bin"), bin, 0o600))
	opened := make(chan string, 4)
	page, err := approvalpage.Listen(approvalpage.Options{Addr: "127.0.0.1:0", Open: func(link string) error { opened <- link; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { page.Close() })
	gate, path := journaled(t)
	gate.Page, gate.ChannelWait = page, 50*time.Millisecond
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
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "model", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	for _, c := range []struct{ file, want, notSeen string }{
		{"diary.txt", "today the secret is tangerine.", "tangerine"},
		{"tool.bin", "binary, 12.3 KB", "binary, 12.3 KB"},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: files.DeleteFile, Arguments: map[string]any{"path": c.file}})
		if err != nil {
			t.Fatal(err)
		}
		seen, _ := json.Marshal(res)
		if !strings.Contains(string(seen), "approval_pending") || strings.Contains(string(seen), c.notSeen) {
			t.Fatalf("%s: the model's answer: %s", c.file, seen)
		}
		var link string
		select {
		case link = <-opened:
		case <-time.After(10 * time.Second):
			t.Fatal("no page opened")
		}
		html, _, err := pagetest.Open(link)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"What would be lost: &#34;" + c.file + "&#34;", c.want, "never to the assistant", "modified less than a minute ago", "Content fingerprint: "} {
			if !strings.Contains(html, want) {
				t.Errorf("%s: the page does not show %q:\n%s", c.file, want, html)
			}
		}
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "tangerine") {
		t.Fatalf("the journal holds the file's content: %s", b)
	}
	// A request's JSON form (what a channel is sent) has none of it.
	b, _ := json.Marshal(approver.Request{ID: "x", PageOnly: &plan.PageOnly{Title: "t", Lines: []string{"tangerine"}}})
	if strings.Contains(string(b), "tangerine") {
		t.Fatalf("a request's JSON carries PageOnly: %s", b)
	}
}
