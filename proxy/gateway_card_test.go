package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/appcard"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cardFor calls tool with args from an MCP Apps client and returns the
// decision capability the card is given.
func cardFor(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res := call(t, cs, tool, args)
	var card map[string]any
	b, _ := json.Marshal(res.Meta["io.mcpsafe/approval-card"])
	if json.Unmarshal(b, &card) != nil || card["decision"] == nil || card["tool"] != tool {
		t.Fatalf("%s: no approval card for it in the answer: %s", tool, text(res))
	}
	return card["decision"].(string)
}

func cardDecide(t *testing.T, cs *mcp.ClientSession, decision string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	return call(t, cs, approver.CardDecisionTool, map[string]any{"decision": decision, "arguments": args, "approve": true})
}

// cardResources counts the card's ui:// resource in resources/list.
func cardResources(t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	l, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range l.Resources {
		if r.URI == appcard.URI {
			n++
		}
	}
	return n
}

// sharedKeys are one key for every gate of a test, as a --key-file gives
// them: only the audience then keeps one gate's capabilities from opening
// at another.
func sharedKeys(t *testing.T) mcpsafe.Keys {
	k, err := mcpsafe.NewKeys(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// In a gateway of two card members (each its own gate and audience, one
// shared key), each member's card decides its own member's call: member
// a's capability, decided after b's gate registered its tools, runs a's
// call once on a, never on b. a's capability with the arguments of b's
// call, and a capability of a gate outside the gateway (another audience,
// the same key), are refused and run nothing. The decision tool and the
// card's resource are listed once.
func TestGatewayCardDecidesOnTheMembersGate(t *testing.T) {
	a, b := newSquatter("echo").withDelete(), newSquatter("look").withDelete()
	opts := stores(t, cardStores(t))
	opts.Keys = sharedKeys(t)
	_, f := gatewayFile(t, t.TempDir(), "servers:\n  a:\n    url: "+a.url(t)+"\n    policy:\n      mode: card\n"+
		"  b:\n    url: "+b.url(t)+"\n    policy:\n      mode: card\n")
	g, err := NewGateway(context.Background(), f, opts, gatewayTestOptions())
	if err != nil {
		t.Fatalf("NewGateway: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectGateway(t, g, appsClient())
	decisionToolIsTheGates(t, cs)
	if n := cardResources(t, cs); n != 1 {
		t.Fatalf("the card's resource is listed %d times, want once", n)
	}
	if n := cardResources(t, connectGateway(t, g, nil)); n != 0 {
		t.Fatalf("a client without MCP Apps is listed the card's resource (%d)", n)
	}

	argsA, argsB := map[string]any{"x": "a"}, map[string]any{"x": "b"}
	decA := cardFor(t, cs, "a__delete", argsA)
	decB := cardFor(t, cs, "b__delete", argsB)

	// Attack: a's capability with b's call's arguments.
	if res := cardDecide(t, cs, decA, argsB); reasonOf(t, res) != mcpsafe.ReasonArgumentsChanged {
		t.Fatalf("a's capability with b's arguments: %s", text(res))
	}
	// Attack: a capability sealed by a gate of another audience (a plain
	// proxy in front of a third upstream), with the same key.
	third := newSquatter().withDelete()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := third.srv.Connect(context.Background(), st, nil); err != nil {
		t.Fatal(err)
	}
	topts := opts
	topts.Audience = "third"
	ts, err := NewServer(context.Background(), Config{Upstream: ct, Policy: mustPolicy(t, "mode: card\n"), Gate: topts})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	t.Cleanup(func() { ts.Close() })
	decThird := cardFor(t, connect(t, ts, appsClient()), "delete", argsA)
	if res := cardDecide(t, cs, decThird, argsA); reasonOf(t, res) != mcpsafe.ReasonTokenInvalid {
		t.Fatalf("a third gate's capability: %s", text(res))
	}
	if a.deletes.Load()+b.deletes.Load()+third.deletes.Load() != 0 {
		t.Fatalf("an attack ran a call: a %d, b %d, third %d", a.deletes.Load(), b.deletes.Load(), third.deletes.Load())
	}

	// a's own decision runs a's call once, on a; then b's on b.
	if res := cardDecide(t, cs, decA, argsA); res.IsError {
		t.Fatalf("a's card: %s", text(res))
	}
	if a.deletes.Load() != 1 || b.deletes.Load() != 0 {
		t.Fatalf("a's card ran: a %d, b %d; want a once", a.deletes.Load(), b.deletes.Load())
	}
	if res := cardDecide(t, cs, decA, argsA); reasonOf(t, res) != mcpsafe.ReasonTokenSpent {
		t.Fatalf("a's card decided twice: %s", text(res))
	}
	if res := cardDecide(t, cs, decB, argsB); res.IsError {
		t.Fatalf("b's card: %s", text(res))
	}
	if a.deletes.Load() != 1 || b.deletes.Load() != 1 {
		t.Fatalf("after b's card: a %d, b %d; want once each", a.deletes.Load(), b.deletes.Load())
	}
}

// Control: a plain proxy and a gateway of one card member list the
// decision tool and the resource once, and their card runs the call once.
func TestCardOfOneGateUnchanged(t *testing.T) {
	t.Run("plain proxy", func(t *testing.T) {
		q := newSquatter("echo").withDelete()
		ct, st := mcp.NewInMemoryTransports()
		if _, err := q.srv.Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		s, err := NewServer(context.Background(), Config{Upstream: ct, Policy: mustPolicy(t, "mode: card\n"), Gate: stores(t, cardStores(t))})
		if err != nil {
			t.Fatalf("NewServer: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		cs := connect(t, s, appsClient())
		decisionToolIsTheGates(t, cs)
		if n := cardResources(t, cs); n != 1 {
			t.Fatalf("the card's resource is listed %d times", n)
		}
		if res := decideByCard(t, cs, "delete"); res.IsError || q.deletes.Load() != 1 {
			t.Fatalf("card: %s (deletes %d)", text(res), q.deletes.Load())
		}
	})
	t.Run("gateway of one member", func(t *testing.T) {
		q := newSquatter("echo").withDelete()
		_, f := gatewayFile(t, t.TempDir(), "servers:\n  a:\n    url: "+q.url(t)+"\n    policy:\n      mode: card\n")
		g, err := NewGateway(context.Background(), f, stores(t, cardStores(t)), gatewayTestOptions())
		if err != nil {
			t.Fatalf("NewGateway: %v", err)
		}
		t.Cleanup(func() { g.Close() })
		cs := connectGateway(t, g, appsClient())
		decisionToolIsTheGates(t, cs)
		if n := cardResources(t, cs); n != 1 {
			t.Fatalf("the card's resource is listed %d times", n)
		}
		if res := decideByCard(t, cs, "a__delete"); res.IsError || q.deletes.Load() != 1 {
			t.Fatalf("card: %s (deletes %d)", text(res), q.deletes.Load())
		}
	})
}

// A card member that crashed and restarted has a new gate on the same
// shared server: its cards work again, the other member's too, and the
// decision tool and the resource are still listed once.
func TestGatewayCardAfterMemberRestart(t *testing.T) {
	gs, other := newGoServer(t), newGoServer(t)
	_, f := gatewayFile(t, t.TempDir(), "servers:\n"+gs.yaml(t, "go", "    policy:\n      mode: card\n")+other.yaml(t, "other", "    policy:\n      mode: card\n"))
	g, err := NewGateway(context.Background(), f, stores(t, cardStores(t)), gatewayTestOptions())
	if err != nil {
		t.Fatalf("NewGateway: %v", err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectGateway(t, g, appsClient())
	pid, err := strconv.Atoi(strings.TrimSpace(call(t, cs, "go__pid", map[string]any{}).Content[0].(*mcp.TextContent).Text))
	if err != nil {
		t.Fatal(err)
	}
	proc, err := os.FindProcess(pid)
	if err == nil {
		err = proc.Kill()
	}
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "go restarted", func() bool {
		// (A call while it is down may fail below the protocol.)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "go__pid", Arguments: map[string]any{}})
		return err == nil && !res.IsError && res.Content[0].(*mcp.TextContent).Text != strconv.Itoa(pid)
	})
	decisionToolIsTheGates(t, cs)
	if n := cardResources(t, cs); n != 1 {
		t.Fatalf("the card's resource is listed %d times", n)
	}
	for _, m := range []struct {
		tool string
		srv  goServer
	}{{"go__note", gs}, {"other__note", other}} {
		args := map[string]any{"x": m.tool}
		if res := cardDecide(t, cs, cardFor(t, cs, m.tool, args), args); res.IsError {
			t.Fatalf("%s's card after the restart: %s", m.tool, text(res))
		}
		if n := strings.Count(m.srv.calls(), "note "); n != 1 {
			t.Fatalf("%s ran %d times on its server, want once: %q", m.tool, n, m.srv.calls())
		}
	}
}
