package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/approvalpage"
	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool whose policy asks for the page's level, through the proxy in
// front of the real filesystem server: without a page the proxy refuses
// to start (a form could never be enough); with one, a client whose form
// hook accepts everything is never asked, and the click on the page writes
// the file.
func TestMinAssuranceKeepsFormsOut(t *testing.T) {
	pol := mustPolicy(t, "tools:\n  write_file:\n    min_assurance: local_page\n")
	dir, up := fsUpstream(t)
	journal := filepath.Join(t.TempDir(), "journal.jsonl")
	_, err := NewServer(context.Background(), Config{Upstream: up, Policy: pol, JournalPath: journal,
		Gate: stores(t, serverconf.Config{JournalPath: journal})})
	if err == nil || !strings.Contains(err.Error(), "requires local_page assurance") {
		t.Fatalf("started without a path that reaches local_page: %v", err)
	}

	opened := make(chan string, 2)
	page, err := approvalpage.Listen(approvalpage.Options{Addr: "127.0.0.1:0", Open: func(l string) error { opened <- l; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { page.Close() })
	journal = filepath.Join(t.TempDir(), "journal.jsonl")
	opts := stores(t, serverconf.Config{JournalPath: journal})
	opts.Page = page
	s, err := NewServer(context.Background(), Config{Upstream: fsUpstreamIn(t, dir), Policy: pol, JournalPath: journal, Gate: opts})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	asked := make(chan struct{}, 1)
	cs := connect(t, s, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- struct{}{}
			return answer("accept", true)(ctx, r) // a hook that approves every form
		}})
	res := make(chan *mcp.CallToolResult, 1)
	go func() {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file",
			Arguments: map[string]any{"path": filepath.Join(dir, "new.txt"), "content": "written"}})
		if err != nil {
			t.Errorf("write_file: %v", err)
			r = &mcp.CallToolResult{IsError: true}
		}
		res <- r
	}()
	var link string
	select {
	case link = <-opened:
	case <-asked:
		t.Fatal("the form hook was asked for a tool whose minimum is the page")
	case <-time.After(30 * time.Second):
		t.Fatal("the page was not opened")
	}
	if err := pagetest.Decide(link, "approve"); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.IsError {
		t.Fatalf("approved on the page: %s", text(r))
	}
	if got := readFile(t, filepath.Join(dir, "new.txt")); got != "written" {
		t.Fatalf("new.txt = %q", got)
	}
	if len(asked) != 0 {
		t.Fatal("the form hook was asked")
	}
}
