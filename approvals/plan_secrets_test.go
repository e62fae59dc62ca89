package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
)

// A sender that does not redact (any holder of the secret can post): the
// service still keeps, serves and shows no secret, in the plan text or the
// arguments, and the file store holds none either.
func TestServiceRedactsSecrets(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "approvals.db")
	e := newEnv(t, ServiceOptions{Store: "file:" + db})
	req := testRequest("req-secret")
	req.Summary = `Log in to db1 as root with pw-in-plan-42`
	req.Details = []string{`key: "k-api-777"`}
	req.Targets = []mcpsafe.Target{{Name: "db1", State: "session sess-cookie-9"}}
	req.Arguments = json.RawMessage(`{"host":"db1","password":"pw-in-plan-42","nested":{"api_key":"k-api-777"},"session":"sess-cookie-9"}`)
	// Sent raw, as a careless sender would, not through Webhook (which
	// redacts on its way out).
	body, err := json.Marshal(channel.WireRequest{Version: 1, ID: req.ID, Tool: req.Tool, Summary: req.Summary, Details: req.Details,
		Targets: req.Targets, Arguments: req.Arguments, ArgsDigest: req.ArgsDigest, Principal: req.Principal,
		Audience: req.Audience, Irreversible: true, ExpiresAt: time.Now().Add(time.Minute), Nonce: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { e.postSigned(body, channel.Sign(testSecret, body, time.Now())); close(done) }()
	e.waitPending("req-secret")

	_, api := e.api("GET", "/api/requests/req-secret", "alice")
	apiJSON, _ := json.Marshal(api)
	_, page := e.login("alice").get("/")
	e.decide("req-secret", "deny", "alice", 200)
	<-done
	e.stop()
	store, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	wal, _ := os.ReadFile(db + "-wal")
	for where, s := range map[string]string{"API": string(apiJSON), "page": page, "store": string(store) + string(wal)} {
		for _, secret := range []string{"pw-in-plan-42", "k-api-777", "sess-cookie-9"} {
			if strings.Contains(s, secret) {
				t.Errorf("the %s carries %q", where, secret)
			}
		}
		// Control: what is not secret is there.
		if !strings.Contains(s, "Log in to db1 as root with [redacted]") {
			t.Errorf("the %s lost the plan", where)
		}
	}
	if args, _ := api["arguments"].(map[string]any); args["host"] != "db1" || args["password"] != "[redacted]" {
		t.Errorf("API arguments = %v", api["arguments"])
	}
}

// The service's file store and its SQLite companions are private (0600),
// and a store left readable by an older version is tightened.
func TestStoreFilePrivate(t *testing.T) {
	dir := t.TempDir()
	fresh := filepath.Join(dir, "fresh.db")
	old := filepath.Join(dir, "old.db")
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fresh, old} {
		e := newEnv(t, ServiceOptions{Store: "file:" + p})
		ch := e.ask(testRequest("req-mode"))
		e.waitPending("req-mode") // written: the -wal file exists now
		for _, f := range []string{p, p + "-wal", p + "-shm"} {
			st, err := os.Stat(f)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
			}
		}
		e.decide("req-mode", "approve", "alice", 200)
		// Control: the private store works.
		if r := wait(t, ch); !r.d.Approved {
			t.Fatalf("%s: %+v, %v", p, r.d, r.err)
		}
		e.stop()
	}
	if _, err := openStore("file:" + filepath.Join(dir, "x.db?_pragma=foo")); err == nil {
		t.Fatal("a store path with a query was accepted")
	}
}

// A webhook error never names the approver's URL: it may carry a key in
// its query, and the error reaches logs. The kind of failure is kept.
func TestWebhookErrorWithoutURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	hook := newHook(t, "http://"+addr+"/webhook?key=url-secret-77")
	_, err = hook.Approve(context.Background(), testRequest("req-url"))
	if !errors.Is(err, channel.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if strings.Contains(err.Error(), "url-secret-77") || strings.Contains(err.Error(), addr+"/webhook") {
		t.Fatalf("the error names the URL: %v", err)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("the error lost what went wrong: %v", err)
	}
}

// A plan the service cannot take whole is refused as too large before it
// is sent, never cut to fit; the largest plan that fits goes through.
func TestWebhookPlanTooLarge(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	big := testRequest("req-big")
	for i := 0; i <= channel.MaxPlanLines; i++ {
		big.Details = append(big.Details, "line")
	}
	_, err := e.hook.Approve(context.Background(), big)
	if !errors.Is(err, approver.ErrPlanTooLarge) || !errors.Is(err, channel.ErrRequest) {
		t.Fatalf("err = %v, want ErrPlanTooLarge", err)
	}
	huge := testRequest("req-huge")
	huge.Arguments = json.RawMessage(`{"a":"` + strings.Repeat("x", channel.MaxRequestBytes) + `"}`)
	if _, err := e.hook.Approve(context.Background(), huge); !errors.Is(err, approver.ErrPlanTooLarge) {
		t.Fatalf("err = %v, want ErrPlanTooLarge", err)
	}
	if code, _ := e.api("GET", "/api/requests/req-big", "alice"); code != 404 {
		t.Fatal("a too-large plan reached the service")
	}
	// Control: exactly at the limit.
	fits := testRequest("req-fits")
	fits.Details = big.Details[:channel.MaxPlanLines]
	ch := e.ask(fits)
	e.waitPending("req-fits")
	_, out := e.api("GET", "/api/requests/req-fits", "alice")
	if d, _ := out["details"].([]any); len(d) != channel.MaxPlanLines {
		t.Fatalf("the service shows %d of %d plan lines", len(d), channel.MaxPlanLines)
	}
	e.decide("req-fits", "approve", "alice", 200)
	if r := wait(t, ch); !r.d.Approved {
		t.Fatalf("%+v, %v", r.d, r.err)
	}
}
