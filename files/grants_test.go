package files_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/files"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// grantFixture is a files server with grants, whose person approves the
// first call asked with the answer first and declines every later one.
type grantFixture struct {
	root string
	cs   *mcp.ClientSession

	mu      sync.Mutex
	asked   []string // the requested schema of each elicitation, as JSON
	answer1 map[string]any
}

func newGrantFixture(t *testing.T, g files.Grants, first map[string]any, mkdirs ...string) *grantFixture {
	t.Helper()
	f := &grantFixture{root: t.TempDir(), answer1: first}
	for _, d := range mkdirs {
		must(t, os.MkdirAll(filepath.Join(f.root, d), 0o755))
	}
	gate, path := journaled(t)
	srv, err := files.NewServer(context.Background(), files.Config{Roots: []string{f.root}, Grants: g, Gate: gate, JournalPath: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.MCP.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cl := mcp.NewClient(&mcp.Implementation{Name: "files-test", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			b, _ := json.Marshal(r.Params.RequestedSchema)
			f.mu.Lock()
			defer f.mu.Unlock()
			f.asked = append(f.asked, string(b))
			if len(f.asked) == 1 {
				return &mcp.ElicitResult{Action: "accept", Content: f.answer1}, nil
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	if f.cs, err = cl.Connect(ctx, ct, &mcp.ClientSessionOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.cs.Close() })
	return f
}

func (f *grantFixture) write(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		must(t, os.WriteFile(filepath.Join(f.root, n), []byte(n), 0o644))
	}
}

func (f *grantFixture) exists(name string) bool {
	_, err := os.Lstat(filepath.Join(f.root, name))
	return err == nil
}

func (f *grantFixture) asks() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

func (f *grantFixture) call(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := f.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return res
}

// With MaxTTL 15m and MaxUses 3 one limit is offered, so the offers are
// grant-1-1 (exactly these arguments) and grant-2-1 (the directory).
var smallGrants = files.Grants{MaxTTL: 15 * time.Minute, MaxUses: 3, ClientRelayed: true}

func withTools(g files.Grants, tools ...string) files.Grants { g.Tools = tools; return g }

// TestDeleteGrantCoversTheDirectory: approving one delete with "files
// directly in tmp/, 3 uses" lets two more deletes there run without
// asking; a file in a subdirectory or another directory, and a fourth
// delete, are asked (and declined: they stay).
func TestDeleteGrantCoversTheDirectory(t *testing.T) {
	f := newGrantFixture(t, withTools(smallGrants, files.DeleteFile),
		map[string]any{"approve": true, "grant": "grant-2-1"}, "tmp/sub", "other")
	f.write(t, "tmp/a.txt", "tmp/b.txt", "tmp/c.txt", "tmp/d.txt", "tmp/sub/e.txt", "other/f.txt")

	if res := f.call(t, files.DeleteFile, map[string]any{"path": "tmp/a.txt"}); res.IsError || f.exists("tmp/a.txt") {
		t.Fatalf("the approved delete did not run: %s", resultText(res))
	}
	dir, _ := filepath.EvalSymlinks(filepath.Join(f.root, "tmp"))
	if !strings.Contains(f.asked[0], "files directly in "+dir+"/") {
		t.Fatalf("the offer does not name the directory %s: %s", dir, f.asked[0])
	}
	for _, tc := range []struct {
		path string
		runs bool
	}{
		{"tmp/b.txt", true},      // covered: second use
		{"tmp/sub/e.txt", false}, // a subdirectory is not "directly in"
		{"other/f.txt", false},   // another directory
		{"tmp/../tmp/c.txt", true},
		{"tmp/d.txt", false}, // all three uses taken
	} {
		before := f.asks()
		res := f.call(t, files.DeleteFile, map[string]any{"path": tc.path})
		asked := f.asks() > before
		gone := !f.exists(filepath.Clean(tc.path))
		if tc.runs && (res.IsError || asked || !gone) {
			t.Errorf("%s: want it run under the grant without asking; error %v, asked %v, deleted %v: %s", tc.path, res.IsError, asked, gone, resultText(res))
		}
		if !tc.runs && (!res.IsError || !asked || gone) {
			t.Errorf("%s: want it asked and declined; error %v, asked %v, deleted %v", tc.path, res.IsError, asked, gone)
		}
	}
}

// TestGrantScopeIsTheLiteralDirectory: a directory name is matched as
// text, never as a pattern or as CEL: a grant for "a.b/" does not cover
// "aXb/", and a name made to end the CEL string does not widen the scope.
func TestGrantScopeIsTheLiteralDirectory(t *testing.T) {
	for _, tc := range []struct{ granted, other string }{
		{"a.b", "aXb"},
		{"x\") || true || (\"", "y"},
		{`back\slash.*`, `back\slashes`},
	} {
		f := newGrantFixture(t, withTools(smallGrants, files.DeleteFile),
			map[string]any{"approve": true, "grant": "grant-2-1"}, tc.granted, tc.other)
		f.write(t, tc.granted+"/1", tc.granted+"/2", tc.other+"/3")
		if res := f.call(t, files.DeleteFile, map[string]any{"path": tc.granted + "/1"}); res.IsError {
			t.Fatalf("%q: the approved delete failed: %s", tc.granted, resultText(res))
		}
		// Attack: the other directory is asked, and declined.
		if res := f.call(t, files.DeleteFile, map[string]any{"path": tc.other + "/3"}); !res.IsError || f.asks() != 2 || !f.exists(tc.other+"/3") {
			t.Errorf("%q: a delete in %q ran under its grant (asked %d)", tc.granted, tc.other, f.asks())
		}
		// Control: the granted directory itself is covered.
		if res := f.call(t, files.DeleteFile, map[string]any{"path": tc.granted + "/2"}); res.IsError || f.asks() != 2 || f.exists(tc.granted+"/2") {
			t.Errorf("%q: the covered delete did not run under the grant: %s", tc.granted, resultText(res))
		}
	}
}

// TestMoveGrantCoversBothDirectories: a move grant covers moves from the
// same source directory to the same destination directory only.
func TestMoveGrantCoversBothDirectories(t *testing.T) {
	f := newGrantFixture(t, withTools(smallGrants, files.MoveFile),
		map[string]any{"approve": true, "grant": "grant-2-1"}, "in", "out", "elsewhere")
	f.write(t, "in/a", "in/b", "in/c")
	move := func(src, dst string) *mcp.CallToolResult {
		return f.call(t, files.MoveFile, map[string]any{"source": src, "destination": dst})
	}
	if res := move("in/a", "out/a"); res.IsError || !f.exists("out/a") {
		t.Fatalf("the approved move failed: %s", resultText(res))
	}
	if res := move("in/b", "elsewhere/b"); !res.IsError || f.asks() != 2 || !f.exists("in/b") {
		t.Errorf("a move to another directory ran under the grant: %s", resultText(res))
	}
	if res := move("in/c", "out/c"); res.IsError || f.asks() != 2 || !f.exists("out/c") {
		t.Errorf("the covered move did not run under the grant: %s", resultText(res))
	}
}

// TestGrantsOfferedOnlyWhereNamed: no grant is offered for a tool not
// named (delete_file is irreversible), nor to a client-relayed answer
// unless allowed; an answer choosing one anyway is refused whole.
func TestGrantsOfferedOnlyWhereNamed(t *testing.T) {
	choose := map[string]any{"approve": true, "grant": "grant-2-1"}
	for name, tc := range map[string]struct {
		g      files.Grants
		offers bool
	}{
		"not named":                  {withTools(smallGrants, files.MoveFile), false},
		"client-relayed not allowed": {files.Grants{Tools: []string{files.DeleteFile}, MaxTTL: time.Minute, MaxUses: 3}, false},
		"named (control)":            {withTools(smallGrants, files.DeleteFile), true},
	} {
		f := newGrantFixture(t, tc.g, choose, "tmp")
		f.write(t, "tmp/a", "tmp/b")
		res := f.call(t, files.DeleteFile, map[string]any{"path": "tmp/a"})
		offered := strings.Contains(f.asked[0], "grant-2-1")
		if offered != tc.offers {
			t.Errorf("%s: offered %v, want %v: %s", name, offered, tc.offers, f.asked[0])
		}
		if tc.offers != !res.IsError {
			t.Errorf("%s: the call choosing grant-2-1 ran %v, want %v: %s", name, !res.IsError, tc.offers, resultText(res))
		}
		if !tc.offers && !f.exists("tmp/a") {
			t.Errorf("%s: an answer choosing an offer never made ran the call", name)
		}
	}
}

func TestGrantsConfigRefused(t *testing.T) {
	root := t.TempDir()
	for name, g := range map[string]files.Grants{
		"unknown tool":       {Tools: []string{"write_file"}},
		"read-only tool":     {Tools: []string{files.ListDirectory}},
		"named twice":        {Tools: []string{files.DeleteFile, files.DeleteFile}},
		"one use":            {Tools: []string{files.DeleteFile}, MaxUses: 1},
		"negative ttl":       {Tools: []string{files.DeleteFile}, MaxTTL: -time.Minute},
		"limits, no tool":    {MaxUses: 5},
		"relayed, no tool":   {ClientRelayed: true},
		"too many uses":      {Tools: []string{files.MoveFile}, MaxUses: 2_000_000},
		"case-folded name":   {Tools: []string{"Delete_File"}},
		"name with a suffix": {Tools: []string{"delete_file "}},
	} {
		if s, err := files.NewServer(context.Background(), files.Config{Roots: []string{root}, Grants: g, Gate: mcpsafe.Options{Journal: journal.Discard}}); err == nil {
			s.Close()
			t.Errorf("%s: NewServer accepted %+v", name, g)
		}
	}
	s, err := files.NewServer(context.Background(), files.Config{Roots: []string{root},
		Grants: files.Grants{Tools: []string{files.DeleteFile, files.MoveFile}}, Gate: mcpsafe.Options{Journal: journal.Discard}})
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	s.Close()
}
