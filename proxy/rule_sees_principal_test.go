package proxy

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/serverconf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A policy rule sees the caller's principal, as grant scopes do (one CEL
// environment): through the proxy, with the gate's principal taken from
// each real SDK client's name, a deny rule naming one principal refuses
// only that principal's call, and an auto-approve rule naming another runs
// only that one's call unasked. The control, a third client that neither
// rule names, is asked as usual (here refused: it declares no elicitation),
// and its call does not run.
func TestRuleSeesPrincipal(t *testing.T) {
	u, up := newGoUpstream(t)
	journal := filepath.Join(t.TempDir(), "journal.jsonl")
	opts := stores(t, serverconf.Config{JournalPath: journal})
	opts.Principal = func(req *mcp.CallToolRequest) string {
		return "client:" + req.Session.InitializeParams().ClientInfo.Name
	}
	s, err := NewServer(context.Background(), Config{Upstream: up, JournalPath: journal, Gate: opts, Policy: mustPolicy(t, `
tools:
  delete_thing:
    deny: ['principal == "client:mallory"']
    auto_approve: ['principal == "client:alice"']
`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	client := func(name string) *mcp.ClientSession {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.MCP.Connect(context.Background(), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: name}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	for _, c := range []struct {
		name   string
		ran    bool
		reason string
	}{
		{"mallory", false, mcpsafe.ReasonPolicyDenied},
		{"alice", true, ""},
		{"carol", false, mcpsafe.ReasonElicitationUnsupported}, // control: no rule names carol
	} {
		before := u.count("delete_thing")
		res := call(t, client(c.name), "delete_thing", map[string]any{"a": 1})
		ran := u.count("delete_thing") > before
		if ran != c.ran || res.IsError == c.ran {
			t.Errorf("%s: ran=%v, want %v (%s)", c.name, ran, c.ran, text(res))
		}
		if !c.ran {
			if r := reasonOf(t, res); r != c.reason {
				t.Errorf("%s: reason %q, want %q (%s)", c.name, r, c.reason, text(res))
			}
		}
	}
}
