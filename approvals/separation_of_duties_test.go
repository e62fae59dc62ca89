package approvals

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sodEnv is a gated MCP server in channel mode, served over streamable
// HTTP behind the SDK's bearer-token middleware, whose webhook reaches a
// real approval service. The principal of every call comes from a real
// HTTP request through the SDK: the verifier reports a user id, the gate
// names the caller "user:<id>".
type sodEnv struct {
	*env
	mcpURL   string
	files    *fileStore
	sessions *[]*mcp.ClientSession
}

// in returns s reporting to t (a subtest) instead of the parent test.
func (s *sodEnv) in(t *testing.T) *sodEnv {
	e := *s.env
	e.t = t
	c := *s
	c.env = &e
	return &c
}

// newSoDEnv starts it. users maps a bearer token to the user id the
// verifier reports for it. The verifier stands in for the OAuth/JWT
// verification another part of mcpsafe does; what matters here is that the
// id reaches the gate through the SDK's middleware, not by hand.
func newSoDEnv(t *testing.T, opts ServiceOptions, users map[string]string, files ...string) *sodEnv {
	t.Helper()
	e := newEnv(t, opts)
	fs := &fileStore{files: map[string]string{}}
	for _, f := range files {
		fs.files[f] = "contents of " + f
	}
	gate, err := mcpsafe.New(mcpsafe.Options{
		Audience: "files@sod", Journal: &memJournal{}, Mode: mcpsafe.ModeChannel, Approver: e.hook,
		ChannelTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	if err := gate.Register(server, fs.deleteTool()); err != nil {
		t.Fatal(err)
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		id, ok := users[token]
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id, Expiration: time.Now().Add(time.Hour)}, nil
	}
	h := auth.RequireBearerToken(verify, nil)(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	srv := httptest.NewServer(h)
	s := &sodEnv{env: e, mcpURL: srv.URL, files: fs, sessions: new([]*mcp.ClientSession)}
	// The service goes first: that ends a call still waiting for a
	// decision (a failed test), so the clients and the server can close.
	t.Cleanup(func() {
		e.svc.Close()
		for _, cs := range *s.sessions {
			cs.Close()
		}
		srv.Close()
	})
	return s
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// call connects as the holder of token and deletes path in the background.
func (s *sodEnv) call(token, path string) chan *mcp.CallToolResult {
	s.t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: s.mcpURL, HTTPClient: &http.Client{Transport: bearerTransport{token}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		s.t.Fatalf("connect with token %s: %v", token, err)
	}
	*s.sessions = append(*s.sessions, cs)
	ch := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": path}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "CallTool: " + err.Error()}}}
		}
		ch <- res
	}()
	return ch
}

func (s *sodEnv) result(ch chan *mcp.CallToolResult) *mcp.CallToolResult {
	s.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(15 * time.Second):
		s.t.Fatal("the tool call did not return")
		return nil
	}
}

// onlyPending waits for exactly one pending request and returns it.
func (s *sodEnv) onlyPending() map[string]any {
	s.t.Helper()
	var one map[string]any
	waitFor(s.t, "a single pending request", func() bool {
		code, out := s.api("GET", "/api/requests", "carol")
		list, _ := out["requests"].([]any)
		if code != 200 || len(list) != 1 {
			return false
		}
		one = list[0].(map[string]any)
		return true
	})
	return one
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	raw, _ := json.Marshal(r.StructuredContent)
	return b.String() + " " + string(raw)
}

// TestSelfApprovalThroughBearerAuth: alice, authenticated by bearer token,
// asks for a deletion and tries to approve it herself as approver "alice".
// Whatever spelling of her id the identity provider reports, she is the
// same identity and is refused (403); the UI marks the request as hers.
// Control: bob approves and the tool runs.
func TestSelfApprovalThroughBearerAuth(t *testing.T) {
	spellings := map[string]string{"plain": "alice", "capital": "Alice", "upper": "ALICE", "fullwidth": "ａｌｉｃｅ"}
	users := map[string]string{}
	var files []string
	for name, id := range spellings {
		users["tok-"+name] = id
		files = append(files, name+".txt")
	}
	s := newSoDEnv(t, ServiceOptions{}, users, files...)
	b := s.login("alice")
	for name, id := range spellings {
		t.Run(name, func(t *testing.T) {
			s := s.in(t)
			ch := s.call("tok-"+name, name+".txt")
			req := s.onlyPending()
			reqID := req["id"].(string)
			if req["principal"] != identity.UserPrefix+id {
				t.Fatalf("principal %v, want %q", req["principal"], identity.UserPrefix+id)
			}
			// Attack: the requester approves her own request.
			out := s.decide(reqID, "approve", "alice", 403)
			if msg, _ := out["error"].(string); !strings.Contains(msg, "cannot approve it") {
				t.Fatalf("error = %v", out["error"])
			}
			_, page := b.get("/")
			if !strings.Contains(page, "You asked for this call") {
				t.Fatal("alice's page does not mark the request as hers")
			}
			if _, got := s.api("GET", "/api/requests/"+reqID, "carol"); got["status"] != channel.StatusPending || len(got["approvals"].([]any)) != 0 {
				t.Fatalf("after the refused self-approval: %v", got)
			}
			// Control: another approver approves; the tool runs.
			s.decide(reqID, "approve", "bob", 200)
			res := s.result(ch)
			if res.IsError || s.files.has(name+".txt") || !strings.Contains(text(res), "approved by bob") {
				t.Fatalf("after bob's approval: %s", text(res))
			}
		})
	}
	if s.files.runs() != len(spellings) {
		t.Fatalf("%d runs, want %d", s.files.runs(), len(spellings))
	}
}

// TestSelfApprovalDoesNotCountInNofM: with two approvals required, the
// requester's own approval is refused and does not count; bob's alone
// leaves the call waiting; bob and carol together run it.
func TestSelfApprovalDoesNotCountInNofM(t *testing.T) {
	s := newSoDEnv(t, ServiceOptions{Require: map[string]int{"delete_file": 2}}, map[string]string{"tok-alice": "Alice"}, "db.sqlite")
	ch := s.call("tok-alice", "db.sqlite")
	reqID := s.onlyPending()["id"].(string)

	s.decide(reqID, "approve", "alice", 403)
	out := s.decide(reqID, "approve", "bob", 200)
	if out["status"] != channel.StatusPending || out["required_approvals"] != float64(2) || len(out["approvals"].([]any)) != 1 {
		t.Fatalf("after alice (refused) and bob: %v", out)
	}
	s.decide(reqID, "approve", "alice", 403) // still refused with one vote in
	select {
	case r := <-ch:
		t.Fatalf("the call returned with one valid approval of two: %s", text(r))
	default:
	}
	if s.files.runs() != 0 {
		t.Fatal("the tool ran with one valid approval of two")
	}
	// Control: a second, different approver completes it.
	s.decide(reqID, "approve", "carol", 200)
	res := s.result(ch)
	if res.IsError || s.files.has("db.sqlite") || !strings.Contains(text(res), "approved by bob,carol") {
		t.Fatalf("after bob and carol: %s", text(res))
	}
}

// TestUncomparablePrincipalRefused: a caller whose id has no identity key
// (a Cyrillic look-alike, an invisible character, a second "user:"
// prefix) cannot be told apart from an approver, so the webhook refuses to
// ask and nothing runs. Control: a comparable id reaches the service.
func TestUncomparablePrincipalRefused(t *testing.T) {
	users := map[string]string{
		"tok-cyrillic":  "\u0430lice",
		"tok-invisible": "alice\u200b",
		"tok-prefix":    "user:alice",
		"tok-space":     "alice smith",
		"tok-bob":       "bob",
	}
	s := newSoDEnv(t, ServiceOptions{}, users, "x.txt")
	for _, tok := range []string{"tok-cyrillic", "tok-invisible", "tok-prefix", "tok-space"} {
		res := s.result(s.call(tok, "x.txt"))
		// The model learns only the outcome; why (no identity key) goes to
		// the server's log, like every channel error.
		if !res.IsError || !strings.Contains(text(res), mcpsafe.ReasonChannelUnavailable) {
			t.Errorf("%s: %s", tok, text(res))
		}
	}
	if _, out := s.api("GET", "/api/requests?status=all", "carol"); len(out["requests"].([]any)) != 0 || s.files.runs() != 0 {
		t.Fatalf("an uncomparable principal reached the service or ran: %v", out)
	}
	// Control.
	ch := s.call("tok-bob", "x.txt")
	s.decide(s.onlyPending()["id"].(string), "approve", "alice", 200)
	if res := s.result(ch); res.IsError || s.files.has("x.txt") {
		t.Fatalf("control: %s", text(res))
	}
}

// TestPrincipalWithoutIdentityRefusedByService: the service checks the
// principal itself, whoever signed the request (another sender may not run
// the check the Webhook client does).
func TestPrincipalWithoutIdentityRefusedByService(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	for _, p := range []string{"", "user:", "<b>ci-bot</b>", "\u0430lice", "user:user:alice", "al ice"} {
		// Short-lived, so that without the check the test fails fast.
		body, _ := json.Marshal(channel.WireRequest{Version: 1, ID: "req-noid", Tool: "t", Principal: p, ExpiresAt: time.Now().Add(300 * time.Millisecond)})
		code, out := e.postSigned(body, channel.Sign(testSecret, body, time.Now()))
		if code != 400 || !strings.Contains(out, "principal") {
			t.Errorf("principal %q: HTTP %d %s", p, code, out)
		}
	}
	// Control: a comparable principal is accepted (and expires: nobody decides).
	body, _ := json.Marshal(channel.WireRequest{Version: 1, ID: "req-id-ok", Tool: "t", Principal: "user:alice", ExpiresAt: time.Now().Add(300 * time.Millisecond)})
	if code, out := e.postSigned(body, channel.Sign(testSecret, body, time.Now())); code != 200 || !strings.Contains(out, `"reason":"expired"`) {
		t.Fatalf("control: HTTP %d %s", code, out)
	}
}

// TestWebhookRefusesRequesterAsApprover: an approver other than the
// approval service (any server speaking the webhook contract) answers yes
// naming the requester in some spelling, or a name that cannot be
// compared: not an approval. N-of-M counts identities, not spellings.
func TestWebhookRefusesRequesterAsApprover(t *testing.T) {
	cases := []struct {
		name, body string
		min        int
		want       error
	}{
		{"requester bare", `{"approved":true,"approver":"alice"}`, 0, channel.ErrBadResponse},
		{"requester prefixed", `{"approved":true,"approver":"user:alice"}`, 0, channel.ErrBadResponse},
		{"requester upper", `{"approved":true,"approvers":["bob","ALICE"]}`, 0, channel.ErrBadResponse},
		{"requester fullwidth", `{"approved":true,"approver":"ａｌｉｃｅ"}`, 0, channel.ErrBadResponse},
		{"uncomparable name", `{"approved":true,"approver":"\u0430lice"}`, 0, channel.ErrBadResponse},
		{"one identity twice", `{"approved":true,"approvers":["bob","user:BOB"]}`, 2, channel.ErrBadResponse},
		{"control: another approver", `{"approved":true,"approver":"bob"}`, 0, nil},
		{"control: two identities", `{"approved":true,"approvers":["bob","user:carol"]}`, 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(answering(t, 200, tc.body))
			defer srv.Close()
			var opts []channel.WebhookOption
			if tc.min > 0 {
				opts = append(opts, channel.WithMinApprovers("delete_file", tc.min))
			}
			r := testRequest("req-sod")
			r.Principal = "user:alice"
			d, err := newHook(t, srv.URL, opts...).Approve(context.Background(), r)
			checkOutcome(t, d, err, tc.want, "")
		})
	}
	// The client does not even ask for a principal it cannot compare.
	r := testRequest("req-sod-noid")
	r.Principal = "user:"
	if d, err := newHook(t, "http://127.0.0.1:1/webhook").Approve(context.Background(), r); d.Approved || !strings.Contains(errString(err), "principal") {
		t.Fatalf("got %+v, %v", d, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
