package mcpsafe_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/appcard"
	"github.com/mcpsafe/mcpsafe/approvalpage/pagetest"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// appsCaps declares the MCP Apps extension as hosts do.
func appsCaps(elicit bool) *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{}
	caps.AddExtension("io.modelcontextprotocol/ui", map[string]any{"mimeTypes": []string{"text/html;profile=mcp-app"}})
	if elicit {
		caps.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
	}
	return caps
}

// connectCaps connects a legacy client (sessions carry its capabilities)
// declaring caps; nil caps declares nothing.
func (e *env) connectCaps(caps *mcp.ClientCapabilities, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	e.t.Helper()
	return e.connectProto(legacy, caps, elicit)
}

// connectProto is connectCaps on a protocol ("" for the latest, whose
// requests carry the client's capabilities in their _meta).
func (e *env) connectProto(proto string, caps *mcp.ClientCapabilities, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	e.t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := e.server.Connect(ctx, st, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { ss.Close() })
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{Capabilities: caps, ElicitationHandler: elicit})
	cs, err := cl.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// touchTool is a reversible tool that leaves its target as it was, so that
// only single use keeps a decision from running it twice.
func (n *notes) touchTool() mcpsafe.Tool {
	return mcpsafe.Tool{
		Name:        "touch_note",
		InputSchema: pathSchema,
		Resolve: func(_ context.Context, c mcpsafe.Call) (mcpsafe.Resolved, error) {
			var a pathArgs
			if err := c.Decode(&a); err != nil {
				return nil, err
			}
			return mcpsafe.Resolved{"path": a.Path}, nil
		},
		Preview: func(_ context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "Touch " + r["path"].(string)}, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			n.mu.Lock()
			n.execs++
			n.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil
		},
	}
}

func cardEnv(t *testing.T, adjust func(*mcpsafe.Options, *[]mcpsafe.Tool)) *env {
	var e *env
	var n *notes
	e = newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Card = appcard.New()
		n = newNotes()
		*tools = append(*tools, n.touchTool())
		if adjust != nil {
			adjust(o, tools)
		}
	})
	e.touched = n
	return e
}

// cardOf asserts a pending result for the card and returns what only the
// card gets (its _meta) and the model's handle.
func cardOf(t *testing.T, res *mcp.CallToolResult) (card map[string]any, handle string) {
	t.Helper()
	m := structured(t, res)
	if res.IsError || m["status"] != "approval_pending" {
		t.Fatalf("want approval_pending for the card, got %v %v", m, text(res))
	}
	b, _ := json.Marshal(res.Meta["io.mcpsafe/approval-card"])
	if err := json.Unmarshal(b, &card); err != nil || card["decision"] == nil {
		t.Fatalf("no card in _meta: %s", b)
	}
	if card["server"] != "test-server" { // the card's title names the server
		t.Fatalf("the card does not name the server: %s", b)
	}
	if strings.Contains(text(res), card["decision"].(string)) || strings.Contains(string(mustJSON(t, res.StructuredContent)), card["decision"].(string)) {
		t.Fatal("the decision capability is in what the model reads")
	}
	return card, m["approval_token"].(string)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decide(t *testing.T, cs *mcp.ClientSession, decision string, args map[string]any, approve any) *mcp.CallToolResult {
	t.Helper()
	return callTool(t, cs, approver.CardDecisionTool, map[string]any{"decision": decision, "arguments": args, "approve": approve})
}

// Approve in the card runs the call once, journaled card-accepted at the
// client-relayed level; a second decision does nothing; the model's handle
// picks up the outcome and runs nothing more.
func TestCardApproveRunsOnce(t *testing.T) {
	e := cardEnv(t, nil)
	cs := e.connectCaps(appsCaps(false), nil)
	args := map[string]any{"path": "cache.txt"}
	card, handle := cardOf(t, callTool(t, cs, "delete_note", args))
	if card["tool"] != "delete_note" || !strings.Contains(card["summary"].(string), "cache.txt") || card["decision_tool"] != approver.CardDecisionTool {
		t.Fatalf("card does not show the plan: %v", card)
	}
	if e.notes.executions() != 0 {
		t.Fatal("ran before the decision")
	}
	wantExecuted(t, decide(t, cs, card["decision"].(string), args, true))
	if e.notes.has("cache.txt") || e.notes.executions() != 1 {
		t.Fatalf("approved: executions %d, want 1", e.notes.executions())
	}
	if res := decide(t, cs, card["decision"].(string), args, true); !res.IsError {
		t.Fatalf("a second decision was taken: %v", text(res))
	}
	res := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": handle})
	wantExecuted(t, res)
	if e.notes.executions() != 1 {
		t.Fatalf("the handle ran the call again: executions %d", e.notes.executions())
	}
	var approval journal.Record
	for _, r := range e.journal.records() {
		if r.Decision == journal.CardAccepted {
			approval = r
		}
	}
	if approval.Assurance != mcpsafe.AssuranceClientRelayed.String() || approval.By != "card" {
		t.Fatalf("journal: want card-accepted at client_relayed, got %+v (all: %v)", approval, e.journal.decisions())
	}
}

// A decision is single use even where the call could run again.
func TestCardDecisionSingleUse(t *testing.T) {
	e := cardEnv(t, nil)
	cs := e.connectCaps(appsCaps(false), nil)
	args := map[string]any{"path": "a"}
	card, _ := cardOf(t, callTool(t, cs, "touch_note", args))
	wantExecuted(t, decide(t, cs, card["decision"].(string), args, true))
	wantRefused(t, decide(t, cs, card["decision"].(string), args, true), mcpsafe.ReasonTokenSpent)
	if n := e.touched.executions(); n != 1 {
		t.Fatalf("executions %d, want 1", n)
	}
	// The decision is not an approval token either.
	c2, _ := cardOf(t, callTool(t, cs, "touch_note", args))
	wantRefused(t, callTool(t, cs, "touch_note", map[string]any{"path": "a", "approval_token": c2["decision"]}), mcpsafe.ReasonTokenInvalid)
	if n := e.touched.executions(); n != 1 {
		t.Fatalf("executions %d, want 1", n)
	}
}

// On 2026-07-28, where each request carries the client's capabilities,
// the card is listed, asked and decided the same way.
func TestCardOnTheLatestProtocol(t *testing.T) {
	e := cardEnv(t, nil)
	cs := e.connectProto("", appsCaps(false), nil)
	l, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, tl := range l.Tools {
		listed = listed || tl.Name == approver.CardDecisionTool
	}
	if !listed {
		t.Fatal("the decision tool is not listed on the latest protocol")
	}
	args := map[string]any{"path": "cache.txt"}
	card, _ := cardOf(t, callTool(t, cs, "delete_note", args))
	wantExecuted(t, decide(t, cs, card["decision"].(string), args, true))
	if e.notes.executions() != 1 {
		t.Fatalf("executions %d, want 1", e.notes.executions())
	}
	wantRefused(t, decide(t, e.connectProto("", nil, nil), card["decision"].(string), args, true), mcpsafe.ReasonPolicyDenied)
}

// Once shutdown began a card decides nothing: the pending approval is
// journaled withdrawn, and Approve after it runs nothing.
func TestCardAfterShutdown(t *testing.T) {
	e := cardEnv(t, nil)
	cs := e.connectCaps(appsCaps(false), nil)
	args := map[string]any{"path": "cache.txt"}
	card, _ := cardOf(t, callTool(t, cs, "delete_note", args))
	if err := e.gate.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, decide(t, cs, card["decision"].(string), args, true), mcpsafe.ReasonShuttingDown)
	if e.notes.executions() != 0 || !e.notes.has("cache.txt") {
		t.Fatal("a card decision ran after shutdown began")
	}
	if d := e.journal.decisions(); !slices.Contains(d, journal.Refused+":"+mcpsafe.ReasonShuttingDown) {
		t.Fatalf("the pending card approval was not journaled withdrawn: %v", d)
	}
}

// Deny runs nothing, and the handle then reads the denial.
func TestCardDenyRunsNothing(t *testing.T) {
	e := cardEnv(t, nil)
	cs := e.connectCaps(appsCaps(false), nil)
	args := map[string]any{"path": "cache.txt"}
	card, handle := cardOf(t, callTool(t, cs, "delete_note", args))
	pending := callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": handle})
	if structured(t, pending)["status"] != "approval_pending" {
		t.Fatalf("before the decision the handle must read pending, got %v", text(pending))
	}
	// The retry's pending answer repeats the plan.
	if !strings.Contains(text(pending), `Delete note "cache.txt"`) {
		t.Fatalf("the still-pending answer does not repeat the plan: %v", text(pending))
	}
	for _, no := range []any{false, "true", 1, nil} {
		c2, _ := cardOf(t, callTool(t, cs, "delete_note", args))
		wantRefused(t, decide(t, cs, c2["decision"].(string), args, no), mcpsafe.ReasonDeclined)
	}
	wantRefused(t, decide(t, cs, card["decision"].(string), args, false), mcpsafe.ReasonDeclined)
	wantRefused(t, decide(t, cs, card["decision"].(string), args, true), mcpsafe.ReasonTokenSpent)
	wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": handle}), mcpsafe.ReasonDeclined)
	if !e.notes.has("cache.txt") || e.notes.executions() != 0 {
		t.Fatal("denied, but the tool ran")
	}
}

// Each attack on the decision tool is refused, and the legitimate decision
// still works after it.
func TestCardDecisionAttacks(t *testing.T) {
	args := map[string]any{"path": "cache.txt"}
	other := map[string]any{"path": "thesis.txt"}
	cases := []struct {
		name   string
		attack func(t *testing.T, e *env, cs *mcp.ClientSession, card map[string]any, handle string) *mcp.CallToolResult
		reason string
	}{
		{"the model's handle as the decision", func(t *testing.T, e *env, cs *mcp.ClientSession, _ map[string]any, handle string) *mcp.CallToolResult {
			return decide(t, cs, handle, args, true)
		}, mcpsafe.ReasonTokenInvalid},
		{"another call's decision", func(t *testing.T, e *env, cs *mcp.ClientSession, _ map[string]any, _ string) *mcp.CallToolResult {
			c2, _ := cardOf(t, callTool(t, cs, "delete_note", other))
			return decide(t, cs, c2["decision"].(string), args, true)
		}, mcpsafe.ReasonArgumentsChanged},
		{"changed arguments", func(t *testing.T, e *env, cs *mcp.ClientSession, card map[string]any, _ string) *mcp.CallToolResult {
			return decide(t, cs, card["decision"].(string), other, true)
		}, mcpsafe.ReasonArgumentsChanged},
		{"a client without the extension", func(t *testing.T, e *env, _ *mcp.ClientSession, card map[string]any, _ string) *mcp.CallToolResult {
			return decide(t, e.connectCaps(nil, nil), card["decision"].(string), args, true)
		}, mcpsafe.ReasonPolicyDenied},
		{"a forged decision", func(t *testing.T, e *env, cs *mcp.ClientSession, card map[string]any, _ string) *mcp.CallToolResult {
			d := card["decision"].(string)
			return decide(t, cs, d[:len(d)-4]+"AAAA", args, true)
		}, mcpsafe.ReasonTokenInvalid},
		{"approval_token among the arguments", func(t *testing.T, e *env, cs *mcp.ClientSession, card map[string]any, handle string) *mcp.CallToolResult {
			return decide(t, cs, card["decision"].(string), map[string]any{"path": "cache.txt", "approval_token": handle}, true)
		}, mcpsafe.ReasonArgumentsInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := cardEnv(t, nil)
			cs := e.connectCaps(appsCaps(false), nil)
			card, handle := cardOf(t, callTool(t, cs, "delete_note", args))
			wantRefused(t, tc.attack(t, e, cs, card, handle), tc.reason)
			if e.notes.executions() != 0 {
				t.Fatal("the attack ran the call")
			}
			// The control: the card's own decision still runs it, once.
			wantExecuted(t, decide(t, cs, card["decision"].(string), args, true))
			if e.notes.executions() != 1 {
				t.Fatalf("executions %d, want 1", e.notes.executions())
			}
		})
	}
	t.Run("after expiry", func(t *testing.T) {
		e := cardEnv(t, nil)
		cs := e.connectCaps(appsCaps(false), nil)
		card, handle := cardOf(t, callTool(t, cs, "delete_note", args))
		e.clock.Set(e.clock.Now().Add(5*time.Minute + time.Millisecond))
		wantRefused(t, decide(t, cs, card["decision"].(string), args, true), mcpsafe.ReasonTokenExpired)
		wantRefused(t, callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt", "approval_token": handle}), mcpsafe.ReasonTokenExpired)
		if e.notes.executions() != 0 {
			t.Fatal("expired, but the tool ran")
		}
		// The control: a fresh card works.
		c2, _ := cardOf(t, callTool(t, cs, "delete_note", args))
		wantExecuted(t, decide(t, cs, c2["decision"].(string), args, true))
	})
}

// tools/list shows the decision tool, app-only, to MCP Apps clients only;
// gated tools name the card (and say so) only where the card is the path.
func TestCardToolsList(t *testing.T) {
	e := cardEnv(t, nil)
	list := func(caps *mcp.ClientCapabilities) map[string]*mcp.Tool {
		var elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)
		if caps != nil && caps.Elicitation != nil {
			elicit = accept
		}
		res, err := e.connectCaps(caps, elicit).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*mcp.Tool{}
		for _, tl := range res.Tools {
			m[tl.Name] = tl
		}
		return m
	}
	plain := list(nil)
	if plain[approver.CardDecisionTool] != nil || plain["delete_note"].Meta["ui"] != nil || strings.Contains(plain["delete_note"].Description, "approval card") {
		t.Fatalf("a client without the extension sees the card: %+v", plain)
	}
	apps := list(appsCaps(false))
	d := apps[approver.CardDecisionTool]
	if d == nil || string(mustJSON(t, d.Meta["ui"])) != `{"visibility":["app"]}` {
		t.Fatalf("decision tool not listed app-only: %+v", d)
	}
	ui, _ := apps["delete_note"].Meta["ui"].(map[string]any)
	if ui["resourceUri"] != appcard.URI || !strings.Contains(apps["delete_note"].Description, "an approval card shows the user the plan") {
		t.Fatalf("gated tool does not name the card: %+v", apps["delete_note"])
	}
	// A client that elicits gets the form first: no card is named.
	both := list(appsCaps(true))
	if both["delete_note"].Meta["ui"] != nil {
		t.Fatal("the card is named for a client that elicits (the form comes first)")
	}
	// The listing is per client: the server's own tools are not changed.
	if again := list(nil); again["delete_note"].Meta["ui"] != nil {
		t.Fatal("one client's listing changed another's")
	}
	// The card's resource: listed to MCP Apps clients only, and no
	// resources capability is added for anyone (a proxy stays as its
	// upstream is).
	for _, apps := range []bool{false, true} {
		var caps *mcp.ClientCapabilities
		if apps {
			caps = appsCaps(false)
		}
		cs := e.connectCaps(caps, nil)
		if cs.InitializeResult().Capabilities.Resources != nil {
			t.Fatal("the card made the server declare resources")
		}
		rl, err := cs.ListResources(context.Background(), nil)
		listed := err == nil && len(rl.Resources) == 1 && rl.Resources[0].URI == appcard.URI
		if listed != apps {
			t.Fatalf("MCP Apps %v: resources/list %v (err %v)", apps, rl, err)
		}
	}
	res, err := e.connectCaps(appsCaps(false), nil).ReadResource(context.Background(), &mcp.ReadResourceParams{URI: appcard.URI})
	if err != nil || len(res.Contents) != 1 || res.Contents[0].MIMEType != "text/html;profile=mcp-app" ||
		!strings.Contains(res.Contents[0].Text, "Content-Security-Policy") || !strings.Contains(res.Contents[0].Text, "default-src 'none'") {
		t.Fatalf("card resource: %v %+v", err, res)
	}
}

// The order in mode auto: channel > form > card > token; and a tool whose
// minimum is above client-relayed never takes the card.
func TestCardPathOrder(t *testing.T) {
	args := map[string]any{"path": "cache.txt"}
	t.Run("form before card", func(t *testing.T) {
		e := cardEnv(t, nil)
		asked := 0
		cs := e.connectCaps(appsCaps(true), func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return accept(ctx, r)
		})
		wantExecuted(t, callTool(t, cs, "delete_note", args))
		if asked != 1 {
			t.Fatalf("elicited %d times, want 1", asked)
		}
	})
	t.Run("card before token", func(t *testing.T) {
		e := cardEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
			o.AllowTokenFor = []mcpsafe.OptIn{{Tool: "delete_note"}}
		})
		cardOf(t, callTool(t, e.connectCaps(appsCaps(false), nil), "delete_note", args))
		if got := structured(t, callTool(t, e.connectCaps(nil, nil), "delete_note", args))["status"]; got != "approval_required" {
			t.Fatalf("without the extension: want a token, got %v", got)
		}
	})
	t.Run("channel before card", func(t *testing.T) {
		asked := 0
		e := cardEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
			o.Approver = approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
				asked++
				return approver.Decision{Approved: false}, nil
			})
		})
		cs := e.connectCaps(appsCaps(false), nil)
		wantRefused(t, callTool(t, cs, "delete_note", args), mcpsafe.ReasonChannelDenied)
		if asked != 1 {
			t.Fatalf("channel asked %d times, want 1", asked)
		}
		res, _ := cs.ListTools(context.Background(), nil)
		for _, tl := range res.Tools {
			if tl.Meta["ui"] != nil && tl.Name == "delete_note" {
				t.Fatal("the card is named where the channel asks")
			}
		}
	})
	t.Run("page before card", func(t *testing.T) {
		pe := newPageEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Card = appcard.New() })
		cs := pe.connectCaps(appsCaps(false), nil)
		res := callAsync(t, cs, "todo.txt")
		link := receive(t, pe.opened, "browser opening the page")
		if err := pagetest.Decide(link, "approve"); err != nil {
			t.Fatal(err)
		}
		wantExecuted(t, receive2(t, res))
		l, _ := cs.ListTools(context.Background(), nil)
		for _, tl := range l.Tools {
			if tl.Name == "delete_note" && tl.Meta["ui"] != nil {
				t.Fatal("the card is named where the page asks")
			}
		}
	})
	t.Run("a minimum above client-relayed takes the stronger path", func(t *testing.T) {
		asked := 0
		e := cardEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
			o.Approver = approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
				asked++
				return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
			})
			(*tools)[0].MinAssurance = mcpsafe.AssuranceChannel
		})
		wantExecuted(t, callTool(t, e.connectCaps(appsCaps(false), nil), "delete_note", args))
		if asked != 1 {
			t.Fatalf("channel asked %d times, want 1", asked)
		}
	})
	t.Run("mode card refuses a minimum above it", func(t *testing.T) {
		g, err := mcpsafe.New(mcpsafe.Options{Audience: "a", Journal: journal.Discard, Card: appcard.New()})
		if err != nil {
			t.Fatal(err)
		}
		n := newNotes("x")
		tool := n.deleteTool()
		tool.Mode, tool.MinAssurance = mcpsafe.ModeCard, mcpsafe.AssuranceLocalPage
		if err := g.Register(mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil), tool); err == nil {
			t.Fatal("mode card registered with a minimum above client-relayed")
		}
	})
	t.Run("mode card without the extension", func(t *testing.T) {
		e := cardEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) { o.Mode = mcpsafe.ModeCard })
		wantRefused(t, callTool(t, e.connectCaps(nil, nil), "delete_note", args), mcpsafe.ReasonElicitationUnsupported)
		if d := e.journal.decisions(); !slices.ContainsFunc(d, func(s string) bool { return strings.Contains(s, "elicitation_unsupported") }) {
			t.Fatalf("journal %v", d)
		}
	})
}
