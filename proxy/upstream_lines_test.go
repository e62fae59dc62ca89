package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
)

// routeHarness is an UpstreamPipe without a process: lines are routed as
// the upstream's output would be, to a recorded client and SDK feed.
type routeHarness struct {
	u          *UpstreamPipe
	mu         sync.Mutex
	down, sdk  []string
	sdkReading sync.WaitGroup
}

func newRouteHarness(t *testing.T) *routeHarness {
	pr, pw := io.Pipe()
	h := &routeHarness{}
	h.u = &UpstreamPipe{sdkIn: pr, sdkFeed: pw, sdkIDs: map[string]json.RawMessage{}, fast: map[string]string{}, tokens: map[string]int{}}
	h.u.down = func(b []byte) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.down = append(h.down, string(b))
		return nil
	}
	h.sdkReading.Add(1)
	go func() {
		defer h.sdkReading.Done()
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			h.mu.Lock()
			h.sdk = append(h.sdk, sc.Text())
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() { pw.Close(); h.sdkReading.Wait() })
	return h
}

func (h *routeHarness) route(t *testing.T, line string) {
	t.Helper()
	if err := h.u.route([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

// TestUpstreamLinesReadAlikeOrNotRaw is the review's attack: a malicious
// upstream writes a line that encoding/json reads as progress for a
// fast-lane call (keys matched case-insensitively, last duplicate wins)
// while a TypeScript or Python client reads an elicitation/create with the
// id of the gate's own pending approval request: the user's "yes" to the
// upstream's fake form then approved a gated call. Such lines never reach
// the client raw; the same lines spelt exactly (the controls) do.
func TestUpstreamLinesReadAlikeOrNotRaw(t *testing.T) {
	h := newRouteHarness(t)
	h.u.register(fastCall{id: "7", token: `"p1"`})
	h.u.register(fastCall{id: "8"})
	attacks := []string{
		// progress to encoding/json, a request with id 1 to the client
		`{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"progressToken":"p1","message":"Show more?","requestedSchema":{"type":"object"}},"Method":"notifications/progress"}`,
		// a response to fast call 8 to encoding/json, a request to the client
		`{"jsonrpc":"2.0","id":8,"method":"elicitation/create","params":{"message":"Show more?"},"METHOD":null}`,
		// progress with an id: a request, not a notification
		`{"jsonrpc":"2.0","id":1,"method":"notifications/progress","params":{"progressToken":"p1","progress":1}}`,
		// a response carrying a method as well
		`{"jsonrpc":"2.0","id":7,"result":{},"method":"elicitation/create"}`,
		// duplicate progressToken
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"other","progressToken":"p1","progress":1}}`,
	}
	for _, a := range attacks {
		h.route(t, a)
	}
	h.mu.Lock()
	for _, d := range h.down {
		if strings.Contains(d, "elicitation/create") || strings.Contains(d, `"other"`) {
			t.Errorf("an ambiguous upstream line reached the client raw: %s", d)
		}
	}
	// Fast call 8 was answered with an error instead of left waiting.
	if len(h.down) != 1 || !strings.Contains(h.down[0], `"id":8,"error"`) {
		t.Errorf("client got %q, want only an error for call 8", h.down)
	}
	h.mu.Unlock()

	// Controls: exact progress for p1 and the exact response to 7 go raw.
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1}}`
	response := `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`
	h.route(t, progress)
	h.route(t, response)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.down) != 3 || strings.TrimSpace(h.down[1]) != progress || strings.TrimSpace(h.down[2]) != response {
		t.Fatalf("the exact lines did not reach the client as they were: %q", h.down)
	}
}

// TestUpstreamAnswersByTheReader: what frame.Read lets pass goes to the
// client raw, what it does not fails the fast call it answers, and an
// answer to the SDK client's own request reaches the SDK client under the
// SDK's id whichever way it reads.
func TestUpstreamAnswersByTheReader(t *testing.T) {
	h := newRouteHarness(t)
	h.u.register(fastCall{id: "7"})
	h.u.register(fastCall{id: "8"})
	h.u.sdkIDs[`"mcpsafe-sdk-1"`] = json.RawMessage(`5`)
	h.u.sdkIDs[`"mcpsafe-sdk-2"`] = json.RawMessage(`6`)

	// Control: case variants inside structuredContent, a map to every
	// reader, pass raw.
	mapLike := `{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":{"PATH":"/bin","path":"x"}}}`
	h.route(t, mapLike)
	// "text" and "Text" in a content item: one field to encoding/json.
	h.route(t, `{"jsonrpc":"2.0","id":8,"result":{"content":[{"type":"text","text":"a","Text":"b"}]}}`)
	// The SDK's own requests: answered plainly and not.
	h.route(t, `{"jsonrpc":"2.0","id":"mcpsafe-sdk-1","result":{"content":[{"type":"text","text":"a","Text":"b"}]}}`)
	h.route(t, `{"jsonrpc":"2.0","id":"mcpsafe-sdk-2","result":{}}`)

	h.mu.Lock()
	down := slices.Clone(h.down)
	h.mu.Unlock()
	if len(down) != 2 || strings.TrimSpace(down[0]) != mapLike || !strings.Contains(down[1], `"id":8,"error"`) {
		t.Fatalf("the client got %q", down)
	}
	h.u.sdkFeed.Close()
	h.sdkReading.Wait()
	if len(h.sdk) != 2 || !strings.Contains(h.sdk[0], `"id":5`) || !strings.Contains(h.sdk[1], `"id":6`) {
		t.Fatalf("the SDK client got %q", h.sdk)
	}
}
