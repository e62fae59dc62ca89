package proxy

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The upstream session a proxy keeps is shared by its clients, so no
// token a client chose may reach it: a client that names another call's
// route (the stateful lane's mcpsafe-sdk-lane-N, the SDK path's
// mcpsafe-N) as the progress token of its resources/read would otherwise
// have the upstream's progress for its read delivered to that call's
// client. The relayed request carries a token of the proxy's; its progress
// reaches the client who asked, with its own token (control).
func TestRelayedRequestsCarryTheProxysProgressToken(t *testing.T) {
	u, upURL, _ := statefulUpstream(t)
	release, started := make(chan struct{}), make(chan struct{}, 1)
	releaseOnce := sync.OnceFunc(func() { close(release) })
	u.add("slow", &mcp.ToolAnnotations{ReadOnlyHint: true}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
	})
	seen := make(chan any, 4)
	u.srv.AddResource(&mcp.Resource{URI: "test://progress", Name: "progress"}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		tok := req.Params.GetProgressToken()
		seen <- tok
		if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "read"}); err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://progress", Text: "x"}}}, nil
	})
	s, url := laneProxy(t, upURL, nil)
	progressTo := func(who string, into chan<- string) *mcp.ClientOptions {
		return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			into <- fmt.Sprint(who, " ", r.Params.ProgressToken, " ", r.Params.Message)
		}}
	}
	got := make(chan string, 8)
	victim := statefulClient(t, url, progressTo("victim", got), nil)
	attacker := statefulClient(t, url, progressTo("attacker", got), nil)
	call(t, victim, "echo", map[string]any{}) // connects the leg (SDK path)

	// The victim's lane call, in flight while the attacker reads.
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{}}
		p.SetProgressToken("victim-token")
		_, err := victim.CallTool(context.Background(), p)
		done <- err
	}()
	// Runs first of the cleanups, also when the test fails half-way.
	t.Cleanup(func() { releaseOnce(); <-done })
	within(t, started, "the victim's call") // at the upstream, its route in place
	if statefulLaneCalls(s) != 1 {
		t.Fatal("the victim's call did not take the lane")
	}
	for _, tok := range []string{laneIDPrefix + "1", "mcpsafe-1"} {
		rp := &mcp.ReadResourceParams{URI: "test://progress"}
		rp.SetProgressToken(tok)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := attacker.ReadResource(ctx, rp)
		cancel()
		if err != nil {
			t.Fatalf("reading with the progress token %q: %v", tok, err)
		}
		if up := within(t, seen, "the upstream's read"); up == tok {
			t.Fatalf("the upstream got the attacker's token %q", tok)
		}
		// The progress of the read reaches the attacker alone, with its token.
		if g := within(t, got, "the read's progress"); g != "attacker "+tok+" read" {
			t.Fatalf("the read's progress went as %q", g)
		}
	}
	releaseOnce()
	if err := within(t, done, "the victim's answer"); err != nil {
		t.Fatal(err)
	}
	done <- nil // for the cleanup
	select {
	case g := <-got:
		t.Fatalf("unexpected progress %q", g)
	default:
	}
}

// within is the next value from ch, or the test fails naming what did not
// come (a bound against a hang, not a timing assertion).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s never came", what)
		panic("unreachable")
	}
}
