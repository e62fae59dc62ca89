package approvals

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

// The gate's side in these tests: a webhook (package channel) with the
// service's secret, the request it sends, and a stand-in receiver.

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

func newHook(t *testing.T, url string, opts ...channel.WebhookOption) *channel.Webhook {
	t.Helper()
	w, err := channel.NewWebhook(url, testSecret, opts...)
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
		if err := channel.VerifySignature(r.Header.Get(channel.SignatureHeader), raw, testSecret, time.Now(), time.Minute); err != nil {
			t.Errorf("the webhook sent a bad signature: %v", err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
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
	case channel.ErrDenied:
		if !errors.Is(err, approver.ErrDenied) {
			t.Fatalf("%v does not match approver.ErrDenied: the gate would not report channel_denied", err)
		}
	case channel.ErrTimeout:
		if !errors.Is(err, approver.ErrNoDecision) {
			t.Fatalf("%v does not match approver.ErrNoDecision: the gate would not report timeout", err)
		}
	default:
		if errors.Is(err, approver.ErrDenied) || errors.Is(err, approver.ErrNoDecision) {
			t.Fatalf("a failure (%v) looks like a denial or a timeout to the gate", err)
		}
	}
	for _, other := range []error{channel.ErrDenied, channel.ErrTimeout, channel.ErrUnavailable, channel.ErrBadResponse, channel.ErrRequest} {
		if other != want && errors.Is(err, other) {
			t.Fatalf("err %v is also %v: the kinds must be distinct", err, other)
		}
	}
	if msg != "" && !strings.Contains(err.Error(), msg) {
		t.Fatalf("err = %q, want it to mention %q", err, msg)
	}
}
