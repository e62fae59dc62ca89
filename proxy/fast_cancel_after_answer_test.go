package proxy

import (
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/frame"
)

type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }

// TestCancelAfterAnswerKeepsSharedTokenRouted: two fast-lane calls share a
// progress token; the first is answered, and the client's cancellation of
// it arrives just after (it crossed the answer). The token must still be
// routed for the second call, which is in flight: a cancel that released
// the token a second time stopped the second call's progress at the client.
// The control: once the second call is answered too, its progress is no
// longer routed raw.
func TestCancelAfterAnswerKeepsSharedTokenRouted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var down []string
		sdkIn, sdkFeed := io.Pipe() // what is not the client's goes to the SDK client
		go io.Copy(io.Discard, sdkIn)
		defer sdkFeed.Close()
		u := &UpstreamPipe{
			stdin: discardCloser{}, sdkFeed: sdkFeed, sdkIDs: map[string]json.RawMessage{},
			fast: map[string]string{}, tokens: map[string]int{},
			down: func(b []byte) error {
				mu.Lock()
				defer mu.Unlock()
				down = append(down, string(b))
				return nil
			},
		}
		u.register(fastCall{id: "1", token: `"p"`})
		u.register(fastCall{id: "2", token: `"p"`})
		progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`
		routed := func() bool {
			t.Helper()
			mu.Lock()
			n := len(down)
			mu.Unlock()
			if err := u.route([]byte(progress + "\n")); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			return len(down) == n+1 && strings.TrimSpace(down[n]) == progress
		}

		if err := u.route([]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}` + "\n")); err != nil {
			t.Fatal(err)
		}
		cancel := []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		if u.fastCancel(frame.Read(cancel), cancel) {
			t.Error("a cancellation of a call already answered was taken as in flight")
		}
		// The race: fastCancel saw call 1 in flight and wrote the
		// cancellation upstream; the answer came in between; now it ends
		// the call.
		u.endFast(fastCall{id: "1", token: `"p"`})
		time.Sleep(2 * progressGrace)
		synctest.Wait()
		if !routed() {
			t.Fatalf("progress for call 2, still in flight, no longer reaches the client: %q", down)
		}

		// Control: call 2 answered, its grace over: the token is no longer routed.
		if err := u.route([]byte(`{"jsonrpc":"2.0","id":2,"result":{"content":[]}}` + "\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * progressGrace)
		synctest.Wait()
		u.mu.Lock()
		left := u.tokens[`"p"`]
		u.mu.Unlock()
		if left != 0 {
			t.Fatalf("token still counted %d after both calls ended", left)
		}
	})
}
