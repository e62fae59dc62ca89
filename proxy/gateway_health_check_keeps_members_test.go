package proxy

import (
	"context"
	"testing"
)

// The gateway's health check keeps a member on a stateless 2026-07-28
// HTTP upstream: it asks what that upstream answers (which refuses a ping:
// every check tore the member down). Attack: the SDK's ping is refused
// there. Control: TestGatewayHealthCheckKeepsStdioMember.
func TestGatewayHealthCheckKeepsModernHTTPMember(t *testing.T) {
	_, upURL := laneUpstream(t)
	g, _ := newGateway(t, "servers:\n  bare:\n    url: "+upURL+"\n    prefix: false\n")
	srv := g.Server("bare")
	if v := srv.Upstream.InitializeResult().ProtocolVersion; v != modernProtocol {
		t.Fatalf("upstream negotiated %s, want %s", v, modernProtocol)
	}
	if err := srv.Upstream.Ping(context.Background(), nil); err == nil {
		t.Fatal("a 2026-07-28 upstream answered a ping: the check's reason is gone")
	}
	if err := healthCheck(context.Background(), srv.Upstream); err != nil {
		t.Fatalf("the health check: %v", err)
	}
	g.check(srv)
	if _, err := srv.Upstream.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("after a health check the member's session is gone: %v", err)
	}
	if g.Server("bare") != srv {
		t.Fatal("after a health check the member was replaced")
	}
}

// Control: a member over stdio is checked and kept, whatever its
// protocol (a ping where it has one).
func TestGatewayHealthCheckKeepsStdioMember(t *testing.T) {
	g, _ := newGateway(t, "servers:\n"+newGoServer(t).yaml(t, "go", ""))
	srv := g.Server("go")
	if err := healthCheck(context.Background(), srv.Upstream); err != nil {
		t.Fatalf("the health check (protocol %s): %v", srv.Upstream.InitializeResult().ProtocolVersion, err)
	}
	g.check(srv)
	if _, err := srv.Upstream.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("after a health check the member's session is gone: %v", err)
	}
}
