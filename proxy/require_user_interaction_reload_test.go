package proxy

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
)

// require_user_interaction is read when a server starts: a reload that
// changes it is refused for that server, whose tools keep the key as they
// were (the gate cannot relist them with another lock in place); a reload
// that keeps it passes (control).
func TestGatewayReloadKeepsRequireUserInteraction(t *testing.T) {
	a := newGoServer(t)
	dir := t.TempDir()
	on := strings.Replace(reloadPolicy, "      mode: token\n", "      mode: token\n      require_user_interaction: true\n", 1)
	_, f := gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", on))
	g, err := NewGateway(context.Background(), f, stores(t, serverconfFor(filepath.Join(dir, "j.jsonl"))), GatewayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	marked := func() bool {
		res, err := connectGateway(t, g, nil).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if tl.Name == "a__wipe" {
				return tl.Meta[mcpsafe.RequiresUserInteractionMeta] == true
			}
		}
		t.Fatal("no a__wipe listed")
		return false
	}
	if !marked() {
		t.Fatal("a__wipe is not marked under require_user_interaction: true")
	}
	_, f = gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", reloadPolicy))
	if err := g.Reload(context.Background(), f); err == nil || !strings.Contains(err.Error(), "require_user_interaction") {
		t.Fatalf("reload turning it off: %v, want it refused", err)
	}
	if !marked() {
		t.Fatal("after the refused reload a__wipe lost the key")
	}
	_, f = gatewayFile(t, dir, "servers:\n"+a.yaml(t, "a", strings.Replace(on, `"never"`, `"nope"`, 1)))
	if err := g.Reload(context.Background(), f); err != nil {
		t.Fatalf("reload keeping it: %v", err)
	}
}
