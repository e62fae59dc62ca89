package proxy

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Keeping an upstream's notifications ahead of the answer that follows them.
//
// The SDK client hands a response to the waiting call as soon as it reads
// it, while the notifications read before it (the upstream's log messages
// and progress during the call) wait in a queue for their handler. So a
// relayed call could answer its client before the last of its log
// messages was relayed, and the client, done with the call, would never
// see it; a direct connection to the upstream never reorders them.
//
// The fix rides on that queue's order: where the proxy reads the upstream's
// bytes (the stdio pipe, the HTTP event stream) it puts a barrier, a
// progress notification with an unguessable token, in front of every
// response; the SDK client queues it after the notifications before it;
// a receiving middleware takes it off (no handler sees it) and marks it
// handled. A relayed call, once its answer is back, waits until the
// barriers read so far on its connection are handled, so until every
// notification before its answer was relayed. The wait is bounded: an
// upstream or a client that stalls delays an answer by at most
// orderWaitMax, and only its order is lost, never a message's content.
//
// An upstream that forges a barrier token (it cannot know it) would only
// release a wait early: ordering, not approval, depends on it.

// orderWaitMax bounds how long a relayed answer waits for the
// notifications before it.
const orderWaitMax = 2 * time.Second

const barrierPrefix = "mcpsafe-order-"

// notifyOrder is the barrier bookkeeping of one upstream connection.
type notifyOrder struct {
	key string // random, names the connection in barrier tokens

	mu       sync.Mutex
	injected uint64 // barriers put in the stream
	handled  uint64 // the newest barrier the SDK client's queue reached
	changed  chan struct{}
}

// barrier returns the next barrier notification (JSON, no line end).
func (o *notifyOrder) barrier() []byte {
	o.mu.Lock()
	o.injected++
	n := o.injected
	o.mu.Unlock()
	return []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"` +
		barrierPrefix + o.key + "-" + strconv.FormatUint(n, 10) + `","progress":0}}`)
}

// reached records that the SDK client's queue reached barrier n.
func (o *notifyOrder) reached(n uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n > o.handled && n <= o.injected {
		o.handled = n
		close(o.changed)
		o.changed = make(chan struct{})
	}
}

// wait returns once every barrier put in the stream so far was handled,
// ctx is done, or orderWaitMax passed.
func (o *notifyOrder) wait(ctx context.Context) {
	timeout := time.NewTimer(orderWaitMax)
	defer timeout.Stop()
	o.mu.Lock()
	target := o.injected
	for o.handled < target {
		changed := o.changed
		o.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-timeout.C:
			return
		}
		o.mu.Lock()
	}
	o.mu.Unlock()
}

// orders maps barrier keys to their connections, for the middleware.
type orders struct {
	byKey sync.Map // key -> *notifyOrder
	byLeg sync.Map // *mcp.ClientSession -> *notifyOrder
}

// withOrder returns t with barriers put in front of its responses, where
// the proxy reads t's bytes; other transports (in memory, in tests) are
// returned as they are and never wait.
func (s *Server) withOrder(t mcp.Transport) (mcp.Transport, *notifyOrder) {
	o := &notifyOrder{key: rand.Text(), changed: make(chan struct{})}
	switch u := t.(type) {
	case *UpstreamPipe:
		u.mu.Lock()
		u.order = o
		u.mu.Unlock()
	case *CommandLeg:
		u.mu.Lock()
		u.order = o
		u.mu.Unlock()
	case *mcp.StreamableClientTransport:
		c := *u
		hc := cmp.Or(u.HTTPClient, http.DefaultClient)
		nc := *hc
		nc.Transport = orderedTransport{base: cmp.Or(hc.Transport, http.DefaultTransport), o: o}
		c.HTTPClient = &nc
		t = &c
	default:
		return t, nil
	}
	s.orders.byKey.Store(o.key, o)
	return t, o
}

// inOrder waits, after an answer from leg, for the notifications the
// upstream sent before it to be relayed.
func (s *Server) inOrder(ctx context.Context, leg *mcp.ClientSession) {
	if v, ok := s.orders.byLeg.Load(leg); ok {
		v.(*notifyOrder).wait(ctx)
	}
}

// takeBarriers is the upstream client's receiving middleware that takes
// the barriers off the stream before any handler sees them.
func (s *Server) takeBarriers(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/progress" {
			if p, ok := req.GetParams().(*mcp.ProgressNotificationParams); ok {
				if tok, ok := p.ProgressToken.(string); ok && strings.HasPrefix(tok, barrierPrefix) {
					key, num, _ := strings.Cut(strings.TrimPrefix(tok, barrierPrefix), "-")
					n, err := strconv.ParseUint(num, 10, 64)
					if v, ok := s.orders.byKey.Load(key); ok && err == nil {
						v.(*notifyOrder).reached(n)
					}
					return nil, nil
				}
			}
		}
		return next(ctx, method, req)
	}
}

// orderedTransport puts a barrier event in front of every response event
// of an upstream's event streams.
type orderedTransport struct {
	base http.RoundTripper
	o    *notifyOrder
}

func (t orderedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(r)
	if err != nil || res.Body == nil {
		return res, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "text/event-stream" {
		res.Body = &barrierEvents{in: bufio.NewReader(res.Body), body: res.Body, o: t.o}
	}
	return res, err
}

// barrierEvents passes an event stream through event by event, with a
// barrier event before each event whose data is a JSON-RPC response. It
// changes no byte of the upstream's events; an event it cannot read (a
// lone CR as line end, say) passes without a barrier.
type barrierEvents struct {
	in   *bufio.Reader
	body io.Closer
	o    *notifyOrder
	out  []byte
	err  error
}

func (b *barrierEvents) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.next()
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

func (b *barrierEvents) Close() error { return b.body.Close() }

// next reads one event (through its blank line) into out.
func (b *barrierEvents) next() {
	var raw, data []byte
	for {
		line, err := b.in.ReadBytes('\n')
		raw = append(raw, line...)
		content := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if err != nil {
			b.err = err
			break
		}
		if len(content) == 0 {
			break
		}
		if d, ok := bytes.CutPrefix(content, []byte("data:")); ok {
			// Empty data lines before the first content only add leading
			// whitespace, which no JSON reader sees.
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(d, []byte(" "))...)
		}
	}
	if isResponse(data) {
		b.out = append(append(append(b.out, "data: "...), b.o.barrier()...), "\n\n"...)
	}
	b.out = append(b.out, raw...)
}

func isResponse(data []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	return json.Unmarshal(data, &m) == nil && m.Method == nil && m.ID != nil
}
