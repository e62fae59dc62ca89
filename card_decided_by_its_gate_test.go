package mcpsafe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/appcard"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// secondCardGate puts a second gate on e's server, as a gateway does for
// its next member: the same key and ledger as e's gate (given in keys and
// l), its own audience, and tool registered under name.
func secondCardGate(t *testing.T, e *env, audience string, keys mcpsafe.Keys, l ledger.Ledger, tool mcpsafe.Tool) {
	t.Helper()
	g, err := mcpsafe.New(mcpsafe.Options{Audience: audience, Keys: keys, Ledger: l, Journal: e.journal, Clock: e.clock.Now, Card: appcard.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	if err := g.Register(e.server, tool); err != nil {
		t.Fatal(err)
	}
}

func testKeys(t *testing.T) mcpsafe.Keys {
	k, err := mcpsafe.NewKeys(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Two gates on one server (a gateway's members): one decision tool and
// one card resource; each card's decision goes to the gate whose audience
// opens it, whichever gate registered last. Two gates that both open it
// (the same audience and key, the same tool name) make it ambiguous: it
// is refused, and neither gate runs anything.
func TestCardDecidedByItsOwnGate(t *testing.T) {
	t.Run("distinct audiences", func(t *testing.T) {
		keys, l := testKeys(t), ledger.NewMemory(0)
		e := cardEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Keys, o.Ledger = keys, l })
		other := newNotes()
		tool := other.touchTool()
		tool.Name = "touch_other"
		secondCardGate(t, e, "other-server", keys, l, tool) // registered last
		cs := e.connectCaps(appsCaps(false), nil)
		decisionToolIsTheGates(t, cs)
		res, err := cs.ListResources(context.Background(), nil)
		if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != appcard.URI {
			t.Fatalf("resources: %v %v, want the card once", res, err)
		}

		args := map[string]any{"path": "a"}
		mine, _ := cardOf(t, callTool(t, cs, "touch_note", args))
		// (cardOf expects the first gate's server in the card.)
		res2 := callTool(t, cs, "touch_other", args)
		var theirs map[string]any
		if err := json.Unmarshal(mustJSON(t, res2.Meta["io.mcpsafe/approval-card"]), &theirs); err != nil || theirs["decision"] == nil || theirs["server"] != "other-server" {
			t.Fatalf("the second gate's card, naming its own server: %v %s", err, text(res2))
		}
		wantExecuted(t, decide(t, cs, mine["decision"].(string), args, true))
		if e.touched.executions() != 1 || other.executions() != 0 {
			t.Fatalf("the first gate's card ran: first %d, second %d; want the first once", e.touched.executions(), other.executions())
		}
		wantExecuted(t, decide(t, cs, theirs["decision"].(string), args, true))
		if e.touched.executions() != 1 || other.executions() != 1 {
			t.Fatalf("the second gate's card ran: first %d, second %d", e.touched.executions(), other.executions())
		}
	})
	t.Run("one audience for two gates", func(t *testing.T) {
		keys, l := testKeys(t), ledger.NewMemory(0)
		e := cardEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Keys, o.Ledger = keys, l })
		other := newNotes()
		secondCardGate(t, e, "test-server", keys, l, other.touchTool()) // the SDK now calls the second's touch_note
		cs := e.connectCaps(appsCaps(false), nil)
		args := map[string]any{"path": "a"}
		card, _ := cardOf(t, callTool(t, cs, "touch_note", args))
		wantRefused(t, decide(t, cs, card["decision"].(string), args, true), mcpsafe.ReasonTokenInvalid)
		if e.touched.executions()+other.executions() != 0 {
			t.Fatalf("an ambiguous decision ran: first %d, second %d", e.touched.executions(), other.executions())
		}
		// Control: the other tools of the first gate still take its card.
		args = map[string]any{"path": "cache.txt"}
		c2, _ := cardOf(t, callTool(t, cs, "delete_note", args))
		wantExecuted(t, decide(t, cs, c2["decision"].(string), args, true))
		if e.notes.has("cache.txt") {
			t.Fatal("approved, but delete_note did not run")
		}
	})
}

// decisionToolIsTheGates: tools/list shows the decision tool once.
func decisionToolIsTheGates(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	l, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tl := range l.Tools {
		if tl.Name == "mcpsafe_card_decision" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("the decision tool is listed %d times", n)
	}
}
