package channel

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

func testRequest(id string) approver.Request {
	return approver.Request{
		ID: id, Tool: "delete_file", Summary: `delete "cache.txt" (12 KiB)`,
		Details:      []string{"path: /srv/data/cache.txt"},
		Targets:      []mcpsafe.Target{{Name: "/srv/data/cache.txt", State: "sha256:ab12, 12288 bytes"}},
		ArgsDigest:   "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Principal:    "ci-bot",
		Audience:     "files@host",
		Irreversible: true,
		ExpiresAt:    time.Now().Add(time.Minute),
	}
}

func newHook(t *testing.T, url string, opts ...WebhookOption) *Webhook {
	t.Helper()
	w, err := NewWebhook(url, testSecret, opts...)
	if err != nil {
		t.Fatalf("NewWebhook: %v", err)
	}
	return w
}

// answering returns a handler that checks the signature like a receiver
// would and then answers with status and body.
func answering(t *testing.T, status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if err := VerifySignature(r.Header.Get(SignatureHeader), raw, testSecret, time.Now(), time.Minute); err != nil {
			t.Errorf("the webhook sent a bad signature: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func TestWebhookResponses(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      string
		want      error // nil: approved
		msg       string
		approvers []string
	}{
		{"control: exact true approves", 200, `{"approved":true}`, nil, "", nil},
		{"control: with approver", 200, `{"approved":true,"approver":"alice"}`, nil, "", []string{"alice"}},
		{"control: with approvers", 200, `{"approved":true,"approvers":["alice","bob"]}`, nil, "", []string{"alice", "bob"}},
		{"control: 201 and whitespace", 201, " {\"approved\" : true}\n", nil, "", nil},
		{"string true", 200, `{"approved":"true"}`, ErrBadResponse, `"approved" is "true"`, nil},
		{"number 1", 200, `{"approved":1}`, ErrBadResponse, `"approved" is 1`, nil},
		{"string yes", 200, `{"approved":"yes"}`, ErrBadResponse, `"approved" is "yes"`, nil},
		{"object", 200, `{"approved":{"ok":true}}`, ErrBadResponse, `not the JSON boolean`, nil},
		{"null", 200, `{"approved":null}`, ErrBadResponse, `"approved" is null`, nil},
		{"missing", 200, `{"approver":"alice"}`, ErrBadResponse, `no "approved" field`, nil},
		{"empty object", 200, `{}`, ErrBadResponse, `no "approved" field`, nil},
		{"trailing garbage", 200, `{"approved":true} garbage`, ErrBadResponse, "", nil},
		{"two objects", 200, `{"approved":true}{"approved":true}`, ErrBadResponse, "", nil},
		{"non-JSON", 200, `approved`, ErrBadResponse, "", nil},
		{"HTML", 200, `<html>approved: true</html>`, ErrBadResponse, "", nil},
		{"empty body", 200, ``, ErrBadResponse, "not a JSON object", nil},
		{"array", 200, `[{"approved":true}]`, ErrBadResponse, "not a JSON object", nil},
		{"JSON null", 200, `null`, ErrBadResponse, "not a JSON object", nil},
		{"duplicate approved, true last", 200, `{"approved":false,"approved":true}`, ErrBadResponse, `duplicate key "approved"`, nil},
		{"duplicate approved, true first", 200, `{"approved":true,"approved":false}`, ErrBadResponse, `duplicate key "approved"`, nil},
		{"duplicate nested key", 200, `{"approved":true,"x":{"a":1,"a":2}}`, ErrBadResponse, `duplicate key "a"`, nil},
		{"approvers not a list", 200, `{"approved":true,"approvers":"alice"}`, ErrBadResponse, "not a list of strings", nil},
		{"approver not a string", 200, `{"approved":true,"approver":7}`, ErrBadResponse, "not a string", nil},
		{"principal approves itself", 200, `{"approved":true,"approver":"CI-BOT"}`, ErrBadResponse, "its own approver", nil},
		{"answer for another id", 200, `{"approved":true,"id":"other"}`, ErrBadResponse, `answer is for request "other"`, nil},
		{"denied", 200, `{"approved":false}`, ErrDenied, "denied", nil},
		{"denied by bob", 200, `{"approved":false,"approver":"bob"}`, ErrDenied, "bob", []string{"bob"}},
		{"expired", 200, `{"approved":false,"reason":"expired"}`, ErrTimeout, "expired", nil},
		{"204 no content", 204, ``, ErrBadResponse, "not a JSON object", nil},
		{"400 saying approved", 400, `{"approved":true}`, ErrUnavailable, "HTTP 400", nil},
		{"401 saying approved", 401, `{"approved":true}`, ErrUnavailable, "HTTP 401", nil},
		{"404 saying approved", 404, `{"approved":true}`, ErrUnavailable, "HTTP 404", nil},
		{"409 saying approved", 409, `{"approved":true}`, ErrUnavailable, "HTTP 409", nil},
		{"500 saying approved", 500, `{"approved":true}`, ErrUnavailable, "HTTP 500", nil},
		{"503 saying approved", 503, `{"approved":true}`, ErrUnavailable, "HTTP 503", nil},
		{"304 saying approved", 304, `{"approved":true}`, ErrUnavailable, "HTTP 304", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(answering(t, tc.status, tc.body))
			defer srv.Close()
			d, err := newHook(t, srv.URL).Approve(context.Background(), testRequest("r1"))
			checkOutcome(t, d, err, tc.want, tc.msg)
			if tc.approvers != nil && strings.Join(d.Approvers, ",") != strings.Join(tc.approvers, ",") {
				t.Errorf("approvers = %v, want %v", d.Approvers, tc.approvers)
			}
		})
	}
}

func checkOutcome(t *testing.T, d approver.Decision, err, want error, msg string) {
	t.Helper()
	if want == nil {
		if err != nil || !d.Approved {
			t.Fatalf("want approved, got %+v, %v", d, err)
		}
		return
	}
	if d.Approved {
		t.Fatalf("approved, want not approved (%v)", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("err = %v, want %v", err, want)
	}
	switch want {
	case ErrDenied:
		if !errors.Is(err, approver.ErrDenied) {
			t.Fatalf("%v does not match approver.ErrDenied: the gate would not report channel_denied", err)
		}
	case ErrTimeout:
		if !errors.Is(err, approver.ErrNoDecision) {
			t.Fatalf("%v does not match approver.ErrNoDecision: the gate would not report timeout", err)
		}
	default:
		if errors.Is(err, approver.ErrDenied) || errors.Is(err, approver.ErrNoDecision) {
			t.Fatalf("a failure (%v) looks like a denial or a timeout to the gate", err)
		}
	}
	for _, other := range []error{ErrDenied, ErrTimeout, ErrUnavailable, ErrBadResponse, ErrRequest} {
		if other != want && errors.Is(err, other) {
			t.Fatalf("err %v is also %v: the kinds must be distinct", err, other)
		}
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		t.Fatalf("err = %q, want it to mention %q", err, msg)
	}
}

// The webhook sends the plan and a signature a receiver can verify.
func TestWebhookSendsSignedPlan(t *testing.T) {
	var got WireRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if err := VerifySignature(r.Header.Get(SignatureHeader), raw, testSecret, time.Now(), time.Minute); err != nil {
			t.Errorf("signature: %v", err)
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Errorf("body: %v", err)
		}
		io.WriteString(w, `{"approved":true,"approvers":["alice","bob"]}`)
	}))
	defer srv.Close()
	req := testRequest("r-plan")
	d, err := newHook(t, srv.URL, WithMinApprovers("delete_file", 2)).Approve(context.Background(), req)
	if err != nil || !d.Approved {
		t.Fatalf("got %+v, %v", d, err)
	}
	if got.Version != 1 || got.ID != "r-plan" || got.Tool != req.Tool || got.Summary != req.Summary ||
		got.ArgsDigest != req.ArgsDigest || got.Principal != "ci-bot" || got.Audience != "files@host" ||
		!got.Irreversible || !got.ExpiresAt.Equal(req.ExpiresAt) || got.MinApprovers != 2 ||
		len(got.Targets) != 1 || got.Targets[0] != req.Targets[0] || len(got.Details) != 1 {
		t.Fatalf("wire request = %+v", got)
	}
}

// With WithMinApprovers the answer must name enough distinct approvers.
func TestWebhookMinApprovers(t *testing.T) {
	for _, tc := range []struct {
		body string
		want error
	}{
		{`{"approved":true,"approvers":["alice"]}`, ErrBadResponse},
		{`{"approved":true,"approvers":["alice","ALICE"]}`, ErrBadResponse},
		{`{"approved":true}`, ErrBadResponse},
		{`{"approved":true,"approvers":["alice","bob"]}`, nil},
	} {
		srv := httptest.NewServer(answering(t, 200, tc.body))
		d, err := newHook(t, srv.URL, WithMinApprovers("delete_file", 2)).Approve(context.Background(), testRequest("r"))
		srv.Close()
		checkOutcome(t, d, err, tc.want, "")
	}
}

func TestWebhookRedirectNotFollowed(t *testing.T) {
	var approverHit atomic.Bool
	approving := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		approverHit.Store(true)
		io.WriteString(w, `{"approved":true}`)
	}))
	defer approving.Close()
	for _, code := range []int{301, 302, 303, 307, 308} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, approving.URL, code)
		}))
		d, err := newHook(t, srv.URL).Approve(context.Background(), testRequest("r"))
		srv.Close()
		checkOutcome(t, d, err, ErrUnavailable, "redirects are never followed")
	}
	if approverHit.Load() {
		t.Fatal("a redirect was followed")
	}
}

func TestWebhookTLS(t *testing.T) {
	srv := httptest.NewTLSServer(answering(t, 200, `{"approved":true}`))
	defer srv.Close()
	d, err := newHook(t, srv.URL).Approve(context.Background(), testRequest("r"))
	checkOutcome(t, d, err, ErrUnavailable, "certificate")

	// Control: the same server approves once its CA is trusted.
	pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	d, err = newHook(t, srv.URL, WithTLSConfig(&tls.Config{RootCAs: pool})).Approve(context.Background(), testRequest("r"))
	checkOutcome(t, d, err, nil, "")
}

func TestWebhookConnectionFailures(t *testing.T) {
	// A port nobody listens on: connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	d, err := newHook(t, "http://"+addr+"/webhook").Approve(context.Background(), testRequest("r"))
	checkOutcome(t, d, err, ErrUnavailable, "refused")

	// The server drops the connection without answering.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	defer srv.Close()
	d, err = newHook(t, srv.URL).Approve(context.Background(), testRequest("r"))
	checkOutcome(t, d, err, ErrUnavailable, "EOF")

	// The server sends a truncated body: Content-Length promises more.
	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		io.WriteString(w, `{"approved":true}`)
		w.(http.Flusher).Flush()
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}))
	defer srv2.Close()
	d, err = newHook(t, srv2.URL).Approve(context.Background(), testRequest("r"))
	checkOutcome(t, d, err, ErrUnavailable, "unexpected EOF")
}

// stallServer answers after release is closed (or never).
func stallServer(t *testing.T, headersFirst bool) (*httptest.Server, chan struct{}) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headersFirst {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
			io.WriteString(w, `{"approved":`)
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv, release
}

func TestWebhookTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name         string
		headersFirst bool
	}{{"no answer", false}, {"headers then a stalled body", true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := stallServer(t, tc.headersFirst)
			start := time.Now()
			d, err := newHook(t, srv.URL, WithTimeout(300*time.Millisecond)).Approve(context.Background(), testRequest("r"))
			checkOutcome(t, d, err, ErrTimeout, "deadline exceeded")
			if el := time.Since(start); el > 3*time.Second {
				t.Fatalf("the call took %s past a 300ms timeout", el)
			}
		})
	}
	t.Run("request expiry bounds the call", func(t *testing.T) {
		srv, _ := stallServer(t, false)
		req := testRequest("r")
		req.ExpiresAt = time.Now().Add(300 * time.Millisecond)
		start := time.Now()
		d, err := newHook(t, srv.URL).Approve(context.Background(), req)
		checkOutcome(t, d, err, ErrTimeout, "")
		if el := time.Since(start); el > 3*time.Second {
			t.Fatalf("the call took %s past the request's expiry", el)
		}
	})
	t.Run("caller cancels", func(t *testing.T) {
		srv, _ := stallServer(t, false)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		d, err := newHook(t, srv.URL).Approve(ctx, testRequest("r"))
		checkOutcome(t, d, err, ErrUnavailable, "cancelled")
	})
	t.Run("already expired: nothing sent", func(t *testing.T) {
		var hit atomic.Bool
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Store(true) }))
		defer srv.Close()
		req := testRequest("r")
		req.ExpiresAt = time.Now().Add(-time.Second)
		d, err := newHook(t, srv.URL).Approve(context.Background(), req)
		checkOutcome(t, d, err, ErrTimeout, "expired")
		if hit.Load() {
			t.Fatal("an expired request was sent")
		}
	})
}

func TestWebhookHugeBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		// 64 MiB: a valid answer padded with whitespace, so only the size
		// limit can refuse it.
		io.WriteString(w, `{"approved":true}`)
		pad := bytes.Repeat([]byte(" "), 1<<20)
		for i := 0; i < 64; i++ {
			if _, err := w.Write(pad); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	d, err := newHook(t, srv.URL).Approve(context.Background(), testRequest("r"))
	checkOutcome(t, d, err, ErrBadResponse, "larger than 65536 bytes")
}

func TestWebhookRequestInvalid(t *testing.T) {
	srv := httptest.NewServer(answering(t, 200, `{"approved":true}`))
	defer srv.Close()
	for name, mut := range map[string]func(*approver.Request){
		"no id":     func(r *approver.Request) { r.ID = "" },
		"no tool":   func(r *approver.Request) { r.Tool = "" },
		"no expiry": func(r *approver.Request) { r.ExpiresAt = time.Time{} },
	} {
		req := testRequest("r")
		mut(&req)
		d, err := newHook(t, srv.URL).Approve(context.Background(), req)
		t.Run(name, func(t *testing.T) { checkOutcome(t, d, err, ErrRequest, "") })
	}
}

func TestNewWebhookRefuses(t *testing.T) {
	cases := []struct {
		name, url string
		secret    []byte
		opts      []WebhookOption
		msg       string
	}{
		{"short secret", "https://a.example/x", testSecret[:31], nil, "need at least 32"},
		{"no secret", "https://a.example/x", nil, nil, "need at least 32"},
		{"ftp", "ftp://a.example/x", testSecret, nil, "must be http(s)"},
		{"no host", "https:///x", testSecret, nil, "must be http(s)"},
		{"credentials in url", "https://u:p@a.example/x", testSecret, nil, "without credentials"},
		{"plain http to a remote host", "http://a.example/x", testSecret, nil, "plain http"},
		{"zero timeout", "https://a.example/x", testSecret, []WebhookOption{WithTimeout(0)}, "timeout must be positive"},
		{"skip verify", "https://a.example/x", testSecret, []WebhookOption{WithTLSConfig(&tls.Config{InsecureSkipVerify: true})}, "skips verification"},
		{"bad min approvers", "https://a.example/x", testSecret, []WebhookOption{WithMinApprovers("t", 0)}, ">= 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewWebhook(tc.url, tc.secret, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %q", err, tc.msg)
			}
		})
	}
	// Controls.
	for _, u := range []string{"https://a.example/x", "http://127.0.0.1:8080/webhook", "http://localhost/webhook", "http://[::1]:9/w"} {
		if _, err := NewWebhook(u, testSecret); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, err := NewWebhook("http://a.example/x", testSecret, WithPlainHTTP()); err != nil {
		t.Errorf("WithPlainHTTP: %v", err)
	}
}
