package mcpsafe_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client that declared elicitation but is refused for it must be told
// what is in the way, not that it "cannot elicit". Over stateless HTTP a
// client before 2026-07-28 cannot be asked in-call; the
// mcpsafe servers' default (mcphttp.HTTP), gives it a session and it
// is asked.
func TestElicitationOverHTTPSessions(t *testing.T) {
	accept := func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}
	for _, tc := range []struct {
		name     string
		protocol string
		http     mcphttp.HTTP
		want     string // "" means the call is asked and runs
	}{
		{"legacy client, stateless", legacy, mcphttp.HTTP{Stateless: true}, "stateless HTTP cannot do"},
		{"control: legacy client, default", legacy, mcphttp.HTTP{}, ""},
		{"control: MRTR client, default", "", mcphttp.HTTP{}, ""},
		{"control: MRTR client, stateless", "", mcphttp.HTTP{Stateless: true}, ""},
		{"control: legacy client, stateful", legacy, mcphttp.HTTP{Stateful: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, nil)
			hs := httptest.NewServer(tc.http.MCPHandler(e.server))
			defer hs.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "http", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: accept}).
				Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL}, &mcp.ClientSessionOptions{ProtocolVersion: tc.protocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"})
			if tc.want == "" {
				if res.IsError || e.notes.executions() != 1 {
					t.Fatalf("not asked and run: %v", text(res))
				}
				return
			}
			wantRefused(t, res, mcpsafe.ReasonElicitationUnsupported)
			if msg, _ := structured(t, res)["message"].(string); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "protocol 2025-11-25") {
				t.Fatalf("message %q lacks %q", msg, tc.want)
			}
			if e.notes.executions() != 0 {
				t.Fatal("ran")
			}
		})
	}
	// In memory, a client without the capability is told exactly that.
	e := newEnv(t, nil)
	res := callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt"})
	wantRefused(t, res, mcpsafe.ReasonElicitationUnsupported)
	if msg, _ := structured(t, res)["message"].(string); !strings.Contains(msg, "did not declare the elicitation capability") {
		t.Fatalf("message %q", msg)
	}
}
