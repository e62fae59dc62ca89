package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"
)

// grantReplica is one gate with one reversible tool that offers standing
// grants, on a shared ledger.
type grantReplica struct {
	server *mcp.Server
	runs   *atomic.Int32
}

func newGrantReplica(t *testing.T, url string, keys mcpsafe.Keys, runs *atomic.Int32) *grantReplica {
	t.Helper()
	store, err := ledger.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	g, err := mcpsafe.New(mcpsafe.Options{Audience: "grants-test", Ledger: store, Keys: keys, Journal: journal.Discard,
		Principal: func(req *mcp.CallToolRequest) string {
			return "client:" + req.Session.InitializeParams().ClientInfo.Name
		}})
	if err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "grants-test", Version: "1"}, nil)
	err = g.Register(s, mcpsafe.Tool{
		Name:        "touch",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}},
		Grants:      &mcpsafe.GrantPolicy{MaxTTL: time.Hour, MaxUses: 10, ClientRelayed: true},
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "touch a name"}, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &grantReplica{server: s, runs: runs}
}

func (r *grantReplica) connect(t *testing.T, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := r.server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cl := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	cs, err := cl.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// `mcpsafe grants list` shows a grant made on one replica; `mcpsafe grants
// revoke` ends it, and the other replica asks again at the next call.
func TestGrantsRevokeAcrossReplicas(t *testing.T) {
	needService(t, "Redis", "127.0.0.1:6379")
	b := make([]byte, 6)
	rand.Read(b)
	prefix := "mcpsafe:test-grants-cli:" + hex.EncodeToString(b) + ":"
	url := "redis://127.0.0.1:6379/0?ledger_prefix=" + prefix
	t.Cleanup(func() {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
		keys, _ := c.Keys(context.Background(), prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(context.Background(), keys...)
		}
		c.Close()
	})
	keys, err := mcpsafe.NewKeys(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var runs, asked atomic.Int32
	a, bRep := newGrantReplica(t, url, keys, &runs), newGrantReplica(t, url, keys, &runs)
	elicit := func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if asked.Add(1) > 1 {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true, "grant": "grant-1-2"}}, nil
	}
	call := func(cs *mcp.ClientSession) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"name": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(a.connect(t, elicit)); res.IsError {
		t.Fatalf("approving call refused: %v", res.Content)
	}
	onB := bRep.connect(t, elicit)
	// Control: replica B honours the grant without asking.
	if res := call(onB); res.IsError || asked.Load() != 1 || runs.Load() != 2 {
		t.Fatalf("before revoke: isError=%v asked=%d runs=%d", res.IsError, asked.Load(), runs.Load())
	}

	var out, errb bytes.Buffer
	if code := run([]string{"grants", "list", "--ledger", url}, &out, &errb); code != 0 {
		t.Fatalf("grants list: %d %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"client:alice"`) || !strings.Contains(out.String(), "8 of 10") || !strings.Contains(out.String(), "exactly these arguments") {
		t.Fatalf("grants list output:\n%s", out.String())
	}
	jpath := filepath.Join(t.TempDir(), "admin.jsonl")
	out.Reset()
	if code := run([]string{"grants", "revoke", "--ledger", url, "--journal", jpath, "--principal", "client:alice"}, &out, &errb); code != 0 {
		t.Fatalf("grants revoke: %d %s", code, errb.String())
	}
	if res := call(onB); !res.IsError || asked.Load() != 2 || runs.Load() != 2 {
		t.Fatalf("after revoke: isError=%v asked=%d runs=%d; want refused after asking", res.IsError, asked.Load(), runs.Load())
	}
	if sum, err := journal.VerifyFile(jpath); err != nil || sum.Records != 1 {
		t.Fatalf("revocation journal: %v %v", sum, err)
	}
	// Nothing left to revoke: the command says so and fails.
	if code := run([]string{"grants", "revoke", "--ledger", url, "--tool", "touch"}, &out, &errb); code != 1 {
		t.Fatalf("second revoke exit %d, want 1", code)
	}
	// Usage errors.
	for _, args := range [][]string{
		{"grants", "revoke", "--ledger", url},
		{"grants", "revoke", "--ledger", url, "--tool", "touch", "--principal", "p"},
		{"grants", "list"},
	} {
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
