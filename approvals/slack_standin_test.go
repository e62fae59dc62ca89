package approvals

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slackStandIn is a local stand-in of the Slack Web API (Slack cannot be
// reached from the test machines). It serves the four methods the service
// calls, answering as Slack documents them (HTTP 200 with {"ok":true,...}
// or {"ok":false,"error":...}; HTTP 429 with Retry-After when told to),
// and records every call.
type slackStandIn struct {
	t     *testing.T
	srv   *httptest.Server
	token string

	mu     sync.Mutex
	calls  []slackCall
	msgs   map[string]json.RawMessage // ts -> blocks as last posted or updated
	groups map[string][]string
	emails map[string]string // user id -> profile email (users.info)
	nextTS int
	// fault, when set, answers a method instead: HTTP status (429 or 5xx)
	// and Retry-After seconds (429 only).
	fault func(method string) (status, retryAfter int)
	// hanging, when set, makes every call hang until its client gives up;
	// hung counts such calls.
	hanging atomic.Bool
	hung    atomic.Int32
	// held, when set (holdCalls), keeps every call waiting until it is
	// closed (Slack's latency); arrived counts calls received, before
	// that wait.
	held    chan struct{}
	arrived atomic.Int32
}

type slackCall struct {
	Method  string
	Channel string
	TS      string
	User    string
	Text    string
	Blocks  json.RawMessage
	Group   string
	Refused bool // answered with a fault
}

func newSlackStandIn(t *testing.T) *slackStandIn {
	s := &slackStandIn{t: t, token: "xoxb-test-token-0123456789", msgs: map[string]json.RawMessage{}, groups: map[string][]string{}, emails: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *slackStandIn) url() string { return s.srv.URL + "/api/" }

func (s *slackStandIn) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		s.t.Errorf("slack stand-in: %s %s with %q: the Web API takes form posts", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if s.hanging.Load() { // the body is read: the server sees the client leave
		s.hung.Add(1)
		<-r.Context().Done()
		return
	}
	s.mu.Lock()
	held := s.held
	s.mu.Unlock()
	s.arrived.Add(1)
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	answer := func(v map[string]any) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(v)
	}
	tok := r.PostForm.Get("token")
	if tok == "" {
		tok = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := slackCall{Method: method, Channel: r.PostForm.Get("channel"), TS: r.PostForm.Get("ts"), User: r.PostForm.Get("user"),
		Text: r.PostForm.Get("text"), Blocks: json.RawMessage(r.PostForm.Get("blocks")), Group: r.PostForm.Get("usergroup")}
	if s.fault != nil {
		if code, after := s.fault(method); code != 0 {
			c.Refused = true
			s.calls = append(s.calls, c)
			if code == http.StatusTooManyRequests {
				w.Header().Set("Retry-After", strconv.Itoa(after))
				w.WriteHeader(code)
				answer(map[string]any{"ok": false, "error": "ratelimited"})
				return
			}
			http.Error(w, "<html>upstream error</html>", code)
			return
		}
	}
	s.calls = append(s.calls, c)
	if tok != s.token {
		answer(map[string]any{"ok": false, "error": "invalid_auth"})
		return
	}
	switch method {
	case "chat.postMessage":
		s.nextTS++
		ts := fmt.Sprintf("1765130000.%06d", s.nextTS)
		s.msgs[ts] = c.Blocks
		answer(map[string]any{"ok": true, "channel": c.Channel, "ts": ts, "message": map[string]any{"type": "message", "ts": ts, "text": c.Text}})
	case "chat.update":
		if _, ok := s.msgs[c.TS]; !ok {
			answer(map[string]any{"ok": false, "error": "message_not_found"})
			return
		}
		s.msgs[c.TS] = c.Blocks
		answer(map[string]any{"ok": true, "channel": c.Channel, "ts": c.TS, "text": c.Text})
	case "chat.postEphemeral":
		answer(map[string]any{"ok": true, "message_ts": "1765130000.999999"})
	case "usergroups.users.list":
		users, ok := s.groups[c.Group]
		if !ok {
			answer(map[string]any{"ok": false, "error": "no_such_subteam"})
			return
		}
		answer(map[string]any{"ok": true, "users": users})
	case "users.info":
		// Without users:read.email Slack leaves the email out.
		profile := map[string]any{"real_name": c.User}
		if e, ok := s.emails[c.User]; ok {
			profile["email"] = e
		}
		answer(map[string]any{"ok": true, "user": map[string]any{"id": c.User, "name": strings.ToLower(c.User), "profile": profile}})
	default:
		answer(map[string]any{"ok": false, "error": "unknown_method"})
	}
}

func (s *slackStandIn) setGroup(id string, users ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[id] = users
}

func (s *slackStandIn) setEmail(user, email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.emails[user] = email
}

func (s *slackStandIn) setFault(f func(method string) (int, int)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// recorded returns the calls of method made so far (faults included).
func (s *slackStandIn) recorded(method string) []slackCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []slackCall
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// holdCalls makes the calls from now on wait until release.
func (s *slackStandIn) holdCalls() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := make(chan struct{})
	s.held = held
	return func() {
		s.mu.Lock()
		s.held = nil
		s.mu.Unlock()
		close(held)
	}
}

// waitFor waits until cond holds (the delivery loop runs on its own); a
// failure lists the calls the stand-in received.
func (s *slackStandIn) waitFor(what string, cond func() bool) {
	s.t.Helper()
	waitFor(s.t, "slack stand-in: "+what, cond, func() string {
		var calls []string
		for _, c := range s.recorded("") {
			calls = append(calls, fmt.Sprintf("%s %s %q refused=%v", c.Method, c.User, c.Text, c.Refused))
		}
		return "calls:\n" + strings.Join(calls, "\n")
	})
}

// blocksOf returns the message as it stands (the last post or update).
func (s *slackStandIn) message(ts string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.msgs[ts])
}

// posted waits for the message of request id and returns its ts.
func (s *slackStandIn) posted(id string) string {
	s.t.Helper()
	var ts string
	s.waitFor("the post of "+id, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		for t, b := range s.msgs {
			if strings.Contains(string(b), `"value":"`+id+`"`) {
				ts = t
				return true
			}
		}
		return false
	})
	return ts
}

// ephemerals returns the ephemeral texts sent to user.
func (s *slackStandIn) ephemerals(user string) []string {
	var out []string
	for _, c := range s.recorded("chat.postEphemeral") {
		if c.User == user {
			out = append(out, c.Text)
		}
	}
	return out
}

// told waits until an ephemeral message to user says all of subs (the
// service sends them in the background, so their order is not fixed).
func (s *slackStandIn) told(user string, subs ...string) {
	s.t.Helper()
	s.waitFor(fmt.Sprintf("telling %s %q", user, subs), func() bool {
		return slices.ContainsFunc(s.ephemerals(user), func(text string) bool { return hasAll(text, subs...) })
	})
}

const (
	slackTestSecret  = "8f742231b10e8888abcd99yyyzzz85a5"
	slackTestChannel = "C0APPROVE"
	slackAlice       = "U0ALICE"
	slackBob         = "U0BOB"
	slackCarol       = "U0CAROL"
	slackCIBot       = "U0CIBOT" // the requester of testRequest
	slackMallory     = "U0MALLORY"
	slackTestGroup   = "S0ONCALL"
)

// slackApprovers are testApprovers with Slack ids (mallory has none).
func slackApprovers() []Approver {
	ids := map[string]string{"alice": slackAlice, "bob": slackBob, "carol": slackCarol, "ci-bot": slackCIBot}
	var out []Approver
	for _, a := range testApprovers {
		a.Slack = ids[a.Name]
		out = append(out, a)
	}
	return out
}

// slackEnv is a service with Slack turned on, pointed at a stand-in.
type slackEnv struct {
	*env
	slack *slackStandIn
}

func newSlackEnv(t *testing.T, opts ServiceOptions, so SlackOptions) *slackEnv {
	t.Helper()
	return newSlackEnvOn(t, newSlackStandIn(t), opts, so)
}

// newSlackEnvOn is newSlackEnv in the workspace of an existing stand-in.
func newSlackEnvOn(t *testing.T, st *slackStandIn, opts ServiceOptions, so SlackOptions) *slackEnv {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// localhost: a passkey relying party must be a name, not an address.
	opts.Origin = "http://localhost:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	if opts.Approvers == nil {
		opts.Approvers = slackApprovers()
	}
	if opts.Secret == nil {
		opts.Secret = testSecret
	}
	so.BotToken, so.SigningSecret, so.Channel, so.APIURL = st.token, slackTestSecret, slackTestChannel, st.url()
	if so.RetryBase == 0 {
		so.RetryBase = 50 * time.Millisecond
	}
	opts.Slack = &so
	svc, err := NewService(opts)
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	srv := httptest.NewUnstartedServer(svc)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	e := &env{t: t, svc: svc, srv: srv, hook: newHook(t, srv.URL+"/webhook")}
	t.Cleanup(e.stop)
	return &slackEnv{env: e, slack: st}
}

var clickSeq atomic.Int64

// clickPayload is a block_actions payload shaped as Slack sends it for a
// click on one of the message's buttons.
func clickPayload(user, action, id, ts string) string {
	p := map[string]any{
		"type":         "block_actions",
		"user":         map[string]any{"id": user, "username": strings.ToLower(user), "name": strings.ToLower(user), "team_id": "T0TEAM"},
		"api_app_id":   "A0MCPSAFE",
		"token":        "verification-token-deprecated",
		"container":    map[string]any{"type": "message", "message_ts": ts, "channel_id": slackTestChannel, "is_ephemeral": false},
		"trigger_id":   fmt.Sprintf("1111.%d.abcd", clickSeq.Add(1)),
		"team":         map[string]any{"id": "T0TEAM", "domain": "example"},
		"channel":      map[string]any{"id": slackTestChannel, "name": "approvals"},
		"message":      map[string]any{"type": "message", "ts": ts, "text": "Approval requested"},
		"state":        map[string]any{"values": map[string]any{}},
		"response_url": "https://hooks.slack.com/actions/T0TEAM/1/abc",
		"actions": []any{map[string]any{
			"action_id": action, "block_id": "mcpsafe_actions", "value": id, "type": "button",
			"text": map[string]any{"type": "plain_text", "text": "Approve", "emoji": true}, "action_ts": ts,
		}},
	}
	b, _ := json.Marshal(p)
	return "payload=" + url.QueryEscape(string(b))
}

// slackSign signs body as Slack does: v0=HMAC-SHA256(secret, "v0:ts:body").
func slackSign(secret, ts, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(m, "v0:%s:%s", ts, body)
	return "v0=" + hex.EncodeToString(m.Sum(nil))
}

// deliver POSTs body to /slack/interactions with the given headers.
func (e *slackEnv) deliver(body, ts, sig string) int {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/slack/interactions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if ts != "" {
		req.Header.Set("X-Slack-Request-Timestamp", ts)
	}
	if sig != "" {
		req.Header.Set("X-Slack-Signature", sig)
	}
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// click sends a correctly signed, fresh click and returns the status.
func (e *slackEnv) click(user, action, id string) int {
	e.t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	body := clickPayload(user, action, id, "1765130000.000001")
	return e.deliver(body, ts, slackSign(slackTestSecret, ts, body))
}

// status is the request's status and approvers as the API shows them.
func (e *slackEnv) status(id string) (string, []string) {
	e.t.Helper()
	code, out := e.api("GET", "/api/requests/"+id, "alice")
	if code != 200 {
		e.t.Fatalf("GET %s: %d %v", id, code, out)
	}
	var names []string
	for _, a := range out["approvals"].([]any) {
		names = append(names, a.(string))
	}
	return out["status"].(string), names
}

func hasAll(s string, subs ...string) bool {
	return !slices.ContainsFunc(subs, func(x string) bool { return !strings.Contains(s, x) })
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
