package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/internal/frame"
)

// Every request the SDK client writes to a command upstream goes under a
// reserved id, so that it can never collide with a fast-lane call's id
// (the client numbers its calls 1, 2, 3 as the SDK client does). That holds
// for the lines frame.Read names no kind for too: the SDK passes the
// client's arguments on as they came, a lone surrogate escape included
// (JavaScript's JSON.stringify writes one), and such a request written
// under the SDK's own id 6 would take the answer of the client's fast call
// 6, and the SDK's cancellation of it would cancel that call. Control: a
// plain request and its cancellation. Nor does a cancellation of an
// unaliased id go upstream.
func TestSDKRequestsAliasedUpstream(t *testing.T) {
	for _, args := range []string{`{"q":"ok"}`, `{"q":"\ud800"}`} {
		u := &UpstreamPipe{sdkIDs: map[string]json.RawMessage{}}
		req := `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read","arguments":` + args + `}}` + "\n"
		if args != `{"q":"ok"}` && frame.Read([]byte(req)).Kind != frame.Invalid {
			t.Fatalf("the attack line is read as a %v; it no longer tests what frame.Read names no kind for", frame.Read([]byte(req)).Kind)
		}
		out, err := u.fromSDK([]byte(req))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(out, &m); err != nil || string(m["id"]) != `"mcpsafe-sdk-1"` || !strings.Contains(string(out), args) {
			t.Fatalf("%s went upstream as %s", args, out)
		}
		cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}` + "\n"
		out, err = u.fromSDK([]byte(cancel))
		if err != nil || !strings.Contains(string(out), `"requestId":"mcpsafe-sdk-1"`) {
			t.Fatalf("the SDK's cancellation went upstream as %s (%v)", out, err)
		}
	}
	// A cancellation of a request no longer aliased (answered already) or
	// never sent goes nowhere: under the SDK's own id 6 it would cancel
	// the client's fast-lane call 6.
	u := &UpstreamPipe{sdkIDs: map[string]json.RawMessage{}}
	for _, line := range []string{
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}` + "\n",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":"odd"}` + "\n",
	} {
		if out, err := u.fromSDK([]byte(line)); err != nil || len(out) != 0 {
			t.Fatalf("%s went upstream as %s (%v)", line, out, err)
		}
	}
}
