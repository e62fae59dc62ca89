package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const reloadPolicy = `    policy:
      mode: token
      allow_token_for: [note, wipe]
      tools:
        note:
          deny: ['args.x == "never"']
        wipe:
          deny: ['args.x == "never"']
`

// A reload that changes one tool's policy voids the approvals of that
// tool only: the other tools of the same server, and every tool of the
// other servers, keep theirs.
func TestGatewayReloadVoidsOnlyChangedTools(t *testing.T) {
	a, b := newGoServer(t), newGoServer(t)
	dir := t.TempDir()
	body := "servers:\n" + a.yaml(t, "a", reloadPolicy) + b.yaml(t, "b", reloadPolicy)
	_, f := gatewayFile(t, dir, body)
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), GatewayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectGateway(t, g, nil)
	args := map[string]any{"x": "1"}
	tokens := map[string]string{}
	for _, name := range []string{"a__note", "a__wipe", "b__note"} {
		tokens[name] = tokenOf(t, call(t, cs, name, args))
	}

	changed := strings.Replace(reloadPolicy, `note:
          deny: ['args.x == "never"']`, `note:
          deny: ['args.x == "nope"']`, 1)
	_, f = gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", changed)+b.yaml(t, "b", reloadPolicy))
	if err := g.Reload(context.Background(), f); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	withTok := func(name string) *mcp.CallToolResult {
		return call(t, cs, name, map[string]any{"x": "1", mcpsafe.TokenField: tokens[name]})
	}
	// Attack: the approval given under the old policy of a__note is void.
	if res := withTok("a__note"); reasonOf(t, res) != mcpsafe.ReasonTokenInvalid || strings.Contains(a.calls(), "note") {
		t.Fatalf("a__note with a token from before its policy changed: %s (calls %q)", text(res), a.calls())
	}
	// Control: the unchanged tools keep theirs.
	if res := withTok("a__wipe"); res.IsError || !strings.Contains(a.calls(), "wipe") {
		t.Fatalf("a__wipe, policy unchanged: %s", text(res))
	}
	if res := withTok("b__note"); res.IsError || !strings.Contains(b.calls(), "note") {
		t.Fatalf("b__note, other server: %s", text(res))
	}
	// The new policy is in force.
	if res := call(t, cs, "a__note", map[string]any{"x": "nope"}); reasonOf(t, res) != mcpsafe.ReasonPolicyDenied {
		t.Fatalf("new deny rule: %s", text(res))
	}
}

// A reload whose policy does not fit the upstream is refused whole, and
// the running configuration stays, for every server.
func TestGatewayReloadBadFileRefused(t *testing.T) {
	a, b := newGoServer(t), newGoServer(t)
	dir := t.TempDir()
	_, f := gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", reloadPolicy)+b.yaml(t, "b", ""))
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), GatewayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectGateway(t, g, nil)
	tok := tokenOf(t, call(t, cs, "a__wipe", map[string]any{"x": "1"}))
	// b's part would be fine (deny everything), a's names a tool a lacks.
	bad := "servers:\n" + a.yaml(t, "a", reloadPolicy+"        nosuch:\n          gate: true\n") +
		b.yaml(t, "b", "    policy:\n      tools:\n        wipe:\n          deny: ['true']\n")
	_, f = gatewayFile(t, dir, bad)
	err = g.Reload(context.Background(), f)
	if err == nil || !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("Reload of a bad file: %v", err)
	}
	// The old policies run on: a's token still good, b's wipe not denied.
	if res := call(t, cs, "a__wipe", map[string]any{"x": "1", mcpsafe.TokenField: tok}); res.IsError {
		t.Fatalf("a__wipe after a refused reload: %s", text(res))
	}
	res := call(t, cs, "b__wipe", map[string]any{})
	if reasonOf(t, res) == mcpsafe.ReasonPolicyDenied {
		t.Fatalf("b's policy from the refused file took effect: %s", text(res))
	}
	// Control: the same change without the bad entry is applied.
	_, f = gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", reloadPolicy)+b.yaml(t, "b", "    policy:\n      tools:\n        wipe:\n          deny: ['true']\n"))
	if err := g.Reload(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if res := call(t, cs, "b__wipe", map[string]any{}); reasonOf(t, res) != mcpsafe.ReasonPolicyDenied {
		t.Fatalf("b's new policy: %s", text(res))
	}
}

// Servers added and removed by a reload come and go; the others are left
// as they run (same upstream process).
func TestGatewayReloadAddRemove(t *testing.T) {
	a, b, c := newGoServer(t), newGoServer(t), newGoServer(t)
	dir := t.TempDir()
	_, f := gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", "")+b.yaml(t, "b", ""))
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), GatewayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectGateway(t, g, nil)
	pid := text(call(t, cs, "a__pid", map[string]any{}))
	_, f = gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", "")+c.yaml(t, "c", ""))
	if err := g.Reload(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if hasTool(t, cs, "b__echo") || !hasTool(t, cs, "c__echo") {
		t.Fatalf("after reload: %v", toolNames(t, cs))
	}
	if got := text(call(t, cs, "a__pid", map[string]any{})); got != pid {
		t.Fatalf("an unchanged server was restarted: %s then %s", pid, got)
	}
}

// A reload that changes a server's audience restarts that server and
// voids all of its approvals; the other server's stay good and its
// upstream keeps running.
func TestGatewayReloadAudienceRestarts(t *testing.T) {
	a, b := newGoServer(t), newGoServer(t)
	dir := t.TempDir()
	_, f := gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", "    audience: one\n"+reloadPolicy)+b.yaml(t, "b", reloadPolicy))
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), GatewayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cs := connectGateway(t, g, nil)
	args := map[string]any{"x": "1"}
	tokA, tokB := tokenOf(t, call(t, cs, "a__wipe", args)), tokenOf(t, call(t, cs, "b__wipe", args))
	pidA, pidB := text(call(t, cs, "a__pid", map[string]any{})), text(call(t, cs, "b__pid", map[string]any{}))
	_, f = gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", "    audience: two\n"+reloadPolicy)+b.yaml(t, "b", reloadPolicy))
	if err := g.Reload(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	if got := text(call(t, cs, "a__pid", map[string]any{})); got == pidA {
		t.Fatal("a was not restarted")
	}
	if got := text(call(t, cs, "b__pid", map[string]any{})); got != pidB {
		t.Fatal("b was restarted")
	}
	if res := call(t, cs, "a__wipe", map[string]any{"x": "1", mcpsafe.TokenField: tokA}); reasonOf(t, res) != mcpsafe.ReasonTokenInvalid || a.calls() != "" {
		t.Fatalf("a token for the old audience: %s", text(res))
	}
	if res := call(t, cs, "b__wipe", map[string]any{"x": "1", mcpsafe.TokenField: tokB}); res.IsError || b.calls() == "" {
		t.Fatalf("control, b: %s", text(res))
	}
}
