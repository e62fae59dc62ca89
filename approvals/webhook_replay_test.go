package approvals

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

// headerVariants are what an attacker holding one signed request can send
// without the secret: the same t and MAC with extra, reordered, duplicated
// or decoy elements. VerifySignature accepts each (unknown elements are
// ignored, any matching v1 passes), so each is the same signed request.
func headerVariants(sig string) map[string]string {
	t, v1, _ := strings.Cut(sig, ",")
	decoy := "v1=" + strings.Repeat("0", 64)
	return map[string]string{
		"identical":     sig,
		"extra element": sig + ",x=1",
		"reordered":     v1 + "," + t,
		"v1 twice":      sig + "," + v1,
		"decoy v1":      t + "," + decoy + "," + v1,
		"unknown key":   sig + ",v0=abc",
	}
}

// TestReplayKeyIsWhatTheSignatureCovers: every variant of one signed
// header has one replay key; another timestamp or another body has
// another (control).
func TestReplayKeyIsWhatTheSignatureCovers(t *testing.T) {
	body := []byte(`{"id":"r1"}`)
	now := time.Unix(1767225600, 0)
	sig := channel.Sign(testSecret, body, now)
	want, err := channel.VerifySignatureKey(sig, body, testSecret, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range headerVariants(sig) {
		if got, err := channel.VerifySignatureKey(h, body, testSecret, now, time.Minute); err != nil || got != want {
			t.Errorf("%s (%s): key %q, %v; want %q", name, h, got, err, want)
		}
	}
	other := channel.Sign(testSecret, body, now.Add(time.Second))
	if got, _ := channel.VerifySignatureKey(other, body, testSecret, now, time.Minute); got == want || got == "" {
		t.Errorf("another timestamp has key %q", got)
	}
	body2 := []byte(`{"id":"r2"}`)
	if got, _ := channel.VerifySignatureKey(channel.Sign(testSecret, body2, now), body2, testSecret, now, time.Minute); got == want || got == "" {
		t.Errorf("another body has key %q", got)
	}
}

// capture is a recording reverse proxy between a gate's webhook and the
// service: it sees the signed requests as an attacker on the path (or
// with access to a log) would.
type capture struct {
	mu   sync.Mutex
	body []byte
	sig  string
	// signedAt, when set, signs each request again as if the gate's
	// clock read signedAt(): a request recorded before a restart.
	signedAt func() time.Time
}

func (e *env) capturingProxy(c *capture) *httptest.Server {
	target, _ := url.Parse(e.srv.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if c.signedAt != nil {
			r.Header.Set(channel.SignatureHeader, channel.Sign(testSecret, raw, c.signedAt()))
		}
		c.mu.Lock()
		if c.body == nil {
			c.body, c.sig = raw, r.Header.Get(channel.SignatureHeader)
		}
		c.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(raw))
		rp.ServeHTTP(w, r)
	}))
	e.t.Cleanup(srv.Close)
	return srv
}

// polling reports whether a webhook caller is attached to id.
func (e *env) polling(id string) bool {
	rec, err := e.svc.st.get(context.Background(), id)
	return err == nil && rec.polled(time.Now())
}

// TestReplayCannotTakeTheDecision: the gate's call is cut while its
// request is pending. An attacker who captured the signed request replays
// it in every header variant, hoping to attach in the gate's place and
// take the single decision delivery. All are refused as replays. Control:
// the gate asks again (fresh signature), re-attaches, and receives the
// approval.
func TestReplayCannotTakeTheDecision(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	var c capture
	proxy := e.capturingProxy(&c)
	hook := newHook(t, proxy.URL+"/webhook")
	req := testRequest("req-replay")

	ctx, cancel := context.WithCancel(context.Background())
	cut := make(chan error, 1)
	go func() { _, err := hook.Approve(ctx, req); cut <- err }()
	e.waitPending("req-replay")
	cancel()
	if err := <-cut; err == nil {
		t.Fatal("the cut call returned no error")
	}
	waitFor(t, "the service sees the cut call gone", func() bool { return !e.polling("req-replay") })

	type reply struct {
		name string
		code int
		body string
	}
	variants := headerVariants(c.sig)
	replies := make(chan reply, len(variants))
	for name, h := range variants {
		go func() {
			code, body := e.postSigned(c.body, h)
			replies <- reply{name, code, body}
		}()
	}
	// Wait until every replay was answered, or one of them attached (the
	// attack worked and now waits for the decision).
	got := map[string]reply{}
	for len(got) < len(variants) && !e.polling("req-replay") {
		select {
		case r := <-replies:
			got[r.name] = r
		case <-time.After(10 * time.Second):
			t.Fatal("replays neither answered nor attached")
		}
	}

	// Control: the gate asks again and gets the decision.
	back := e.ask(req)
	waitFor(t, "the gate's re-sent request attached", func() bool { return e.polling("req-replay") })
	e.decide("req-replay", "approve", "alice", 200)
	r := wait(t, back)
	if !r.d.Approved {
		t.Errorf("the gate's own re-sent request did not receive the approval: %+v, %v", r.d, r.err)
	}
	for len(got) < len(variants) {
		r := <-replies
		got[r.name] = r
	}
	for name, r := range got {
		if r.code != http.StatusConflict || !strings.Contains(r.body, "replayed signature") || strings.Contains(r.body, `"approved":true`) {
			t.Errorf("replay %q: HTTP %d %s, want 409 replayed signature", name, r.code, r.body)
		}
	}
}

// TestReplayAfterRestart: a request signed before a restart and replayed
// after it is refused, with a memory store (whose replay cache started
// empty) and with a file store (whose cache survived). Control: a freshly
// signed copy is accepted after either restart.
func TestReplayAfterRestart(t *testing.T) {
	for _, store := range []string{"memory", "file:" + filepath.Join(t.TempDir(), "a.db")} {
		t.Run(strings.SplitN(store, ":", 2)[0], func(t *testing.T) {
			opts := ServiceOptions{Store: store}
			e := newEnv(t, opts)
			e.svc.replayFloor = 0 // it has been running for a while
			// Signed two seconds ago: a request the attacker recorded
			// before the service went down.
			c := capture{signedAt: func() time.Time { return time.Now().Add(-2 * time.Second) }}
			proxy := e.capturingProxy(&c)
			hook := newHook(t, proxy.URL+"/webhook")
			req := testRequest("req-restart-replay")
			first := make(chan error, 1)
			go func() { _, err := hook.Approve(context.Background(), req); first <- err }()
			e.waitPending(req.ID)
			e.stop()
			<-first

			e2 := newEnv(t, opts)
			// A refused replay is answered at once; one that attached
			// would wait for a decision, so the client gives up early.
			impatient := &http.Client{Timeout: 2 * time.Second}
			for name, h := range headerVariants(c.sig) {
				req, _ := http.NewRequest("POST", e2.srv.URL+"/webhook", bytes.NewReader(c.body))
				req.Header.Set(channel.SignatureHeader, h)
				resp, err := impatient.Do(req)
				if err != nil {
					t.Errorf("replay %q after restart: %v (it was admitted and waits)", name, err)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusConflict || strings.Contains(string(body), `"approved":true`) {
					t.Errorf("replay %q after restart: HTTP %d %s", name, resp.StatusCode, body)
				}
			}
			if e2.polling(req.ID) {
				t.Fatal("a replay attached after the restart")
			}
			// Control: the gate signs again and is heard.
			ch := e2.ask(req)
			e2.waitPending(req.ID)
			e2.decide(req.ID, "approve", "alice", 200)
			if r := wait(t, ch); !r.d.Approved {
				t.Fatalf("fresh request after restart: %+v, %v", r.d, r.err)
			}
		})
	}
}
