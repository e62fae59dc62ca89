package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pkEnv is an approval service with passkeys on http://localhost:PORT (a
// secure context, and a valid WebAuthn RP ID), a signing key, and a real
// chromium with a DevTools virtual authenticator (CTAP2, internal,
// resident keys, user verification).
type pkEnv struct {
	*env
	ctx    context.Context
	auth   webauthn.AuthenticatorID
	file   string
	origin string
	pub    []byte
}

func newPasskeyEnv(t *testing.T) *pkEnv {
	t.Helper()
	pub, priv := newKey(t)
	srv := httptest.NewUnstartedServer(nil)
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	origin := "http://localhost:" + port
	file := filepath.Join(t.TempDir(), "passkeys.json")
	svc, err := NewService(ServiceOptions{Secret: testSecret, Approvers: testApprovers, Origin: origin,
		SigningKey: priv, Passkeys: &PasskeyOptions{File: file}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = svc
	srv.Start()
	e := &env{t: t, svc: svc, srv: srv}
	t.Cleanup(e.stop)
	ctx := newChromium(t)
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return &pkEnv{env: e, ctx: ctx, auth: res.AuthenticatorID, file: file, origin: origin, pub: pub}
}

// hookWithRegistry is the gate's webhook: the service's public key and a
// copy of the passkeys file, as an operator would hand them out.
func (p *pkEnv) hookWithRegistry(opts ...channel.WebhookOption) *channel.Webhook {
	p.t.Helper()
	reg, err := channel.LoadPasskeyRegistry(p.file)
	if err != nil {
		p.t.Fatal(err)
	}
	return newHook(p.t, p.origin+"/webhook", append([]channel.WebhookOption{channel.WithServiceKey(p.pub), channel.WithPasskeys(reg)}, opts...)...)
}

// registerPasskey logs alice in with her password and registers a passkey
// with the page's button.
func (p *pkEnv) registerPasskey(name string) {
	p.t.Helper()
	browserLogin(p.t, p.ctx, p.origin, name)
	click(p.t, p.ctx, `#register-passkey`)
	if err := chromedp.Do(p.ctx, chromedp.WaitVisible(chromedp.CSS(`#toast.show`))); err != nil {
		p.t.Fatal(err)
	}
	msg, _ := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(`#toast`)))
	if msg != "Passkey registered" {
		p.t.Fatalf("registration: %q", msg)
	}
}

// logout signs out with the page's button and waits for the login form.
func (p *pkEnv) logout() {
	p.t.Helper()
	click(p.t, p.ctx, `form[action="/logout"] button`)
	if err := chromedp.Do(p.ctx, chromedp.WaitVisible(chromedp.CSS(`#name`))); err != nil {
		p.t.Fatalf("logout: %v", err)
	}
}

// js runs a promise in the page and returns its JSON result.
func (p *pkEnv) js(expr string) (string, error) {
	return chromedp.Run(p.ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
}

func passkeyRequest(id string) approver.Request {
	r := e2eRequest(id)
	r.MinAssurance = mcpsafe.AssurancePasskey
	return r
}

// Register, then approve a call of a tool that requires a passkey through
// the whole path: a real SDK client calls the gated tool, the gate's
// webhook reaches the service, the approver clicks Approve, the virtual
// authenticator signs the call's challenge with user verification, the
// gate checks the assertion against the registered public key, the tool
// runs, and the journal names the assurance and the credential.
func TestPasskeyApprovalRuns(t *testing.T) {
	p := newPasskeyEnv(t)
	p.registerPasskey("alice")
	reg, err := channel.LoadPasskeyRegistry(p.file)
	if err != nil || len(reg.Passkeys) != 1 || reg.Passkeys[0].Approver != "alice" || reg.RPID != "localhost" {
		t.Fatalf("passkeys file: %+v, %v", reg, err)
	}

	files := &fileStore{files: map[string]string{"cache.txt": "old cache"}}
	jr := &memJournal{}
	gate, err := mcpsafe.New(mcpsafe.Options{Audience: "files@passkey", Journal: jr, Mode: mcpsafe.ModeChannel,
		Approver: p.hookWithRegistry(), ChannelTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	tool := files.deleteTool()
	tool.MinAssurance = mcpsafe.AssurancePasskey
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	if err := gate.Register(server, tool); err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "cache.txt"}})
		if err != nil {
			t.Errorf("CallTool: %v", err)
		}
		done <- res
	}()
	if err := chromedp.Do(p.ctx, chromedp.WaitVisible(chromedp.CSS(`article.req[data-passkey] button.approve`))); err != nil {
		t.Fatalf("no passkey card: %v", err)
	}
	click(t, p.ctx, `article.req[data-passkey] button.approve`)
	var res *mcp.CallToolResult
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		msg, _ := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(`#toast`)))
		t.Fatalf("the call did not return; page says %q", msg)
	}
	if res == nil || res.IsError || files.has("cache.txt") || files.runs() != 1 {
		t.Fatalf("after a passkey approval: %+v, ran %d", res, files.runs())
	}
	rec, ok := jr.find(journal.ChannelApproved)
	if !ok || rec.Assurance != "passkey" || !strings.Contains(string(rec.Evidence), reg.Passkeys[0].CredentialID) {
		t.Fatalf("journal: %+v", rec)
	}
	st2, err := channel.CheckJournalRecord(p.pub, rec)
	if err != nil || len(st2.Passkeys) != 1 {
		t.Fatalf("journal evidence: %+v, %v", st2, err)
	}
	if err := reg.CheckStatementPasskeys(st2, 1); err != nil {
		t.Fatalf("an auditor re-checking the journaled assertion: %v", err)
	}
	// The journal as a file: re-checked with the passkeys file (control);
	// refused without one, and refused when the file gives the credential
	// to someone else.
	line, _ := json.Marshal(rec)
	if n, err := channel.CheckJournal(bytes.NewReader(line), p.pub, reg); err != nil || n != 1 {
		t.Fatalf("journal check with passkeys: %d, %v", n, err)
	}
	if _, err := channel.CheckJournal(bytes.NewReader(line), p.pub, nil); err == nil || !strings.Contains(err.Error(), "no passkeys file") {
		t.Fatalf("journal check without passkeys: %v", err)
	}
	other := *reg
	other.Passkeys = []channel.RegisteredPasskey{reg.Passkeys[0]}
	other.Passkeys[0].Approver = "bob"
	if _, err := channel.CheckJournal(bytes.NewReader(line), p.pub, &other); !errors.Is(err, channel.ErrPasskey) {
		t.Fatalf("journal check with the credential given to bob: %v", err)
	}
}

// The assertion made for call A cannot approve call B, neither at the
// service nor (sent by a service that lies) at the gate.
func TestPasskeyAssertionBoundToCall(t *testing.T) {
	p := newPasskeyEnv(t)
	p.registerPasskey("alice")
	hook := p.hookWithRegistry()
	a, b := passkeyRequest("pk-call-a"), passkeyRequest("pk-call-b")
	// Same tool, arguments, audience and expiry: only the id and the
	// target differ, and they alone must make the assertion useless.
	b.ExpiresAt = a.ExpiresAt
	b.Targets = []mcpsafe.Target{{Name: "/srv/data/thesis.txt", State: "regular file"}}
	p.hook = hook
	cha, chb := p.ask(a), p.ask(b)
	p.waitPending("pk-call-a")
	p.waitPending("pk-call-b")

	// In the page: a ceremony for A, then its assertion sent as B's.
	out, err := p.js(`(async () => {
	  const csrf = document.body.dataset.csrf;
	  const post = (u, body) => fetch(u, {method: 'POST', headers: {'X-CSRF-Token': csrf, 'Content-Type': 'application/json'}, body: body && JSON.stringify(body)});
	  const oa = await (await post('/passkeys/approve/pk-call-a/begin')).json();
	  const credA = await navigator.credentials.get({publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(oa.publicKey)});
	  await post('/passkeys/approve/pk-call-b/begin');
	  const r = await post('/passkeys/approve/pk-call-b/finish', credA.toJSON());
	  return JSON.stringify({status: r.status, body: await r.json(), assertion: credA.toJSON()});
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Status    int
		Body      map[string]any
		Assertion json.RawMessage
	}
	json.Unmarshal([]byte(out), &got)
	if got.Status != 403 || !strings.Contains(fmt.Sprint(got.Body["error"]), "passkey refused") {
		t.Fatalf("A's assertion sent for B: %s", out)
	}

	// A service that lies: it answers B with A's valid assertion.
	reg, _ := channel.LoadPasskeyRegistry(p.file)
	proof := channel.PasskeyProof{Approver: "alice", CredentialID: reg.Passkeys[0].CredentialID, Assertion: got.Assertion}
	for _, tc := range []struct {
		name string
		req  approver.Request
		want error
	}{
		{"A's assertion for B", b, channel.ErrPasskey}, // the challenge differs
		{"control: A's assertion for A", a, nil},
	} {
		body, _ := json.Marshal(map[string]any{"approved": true, "approvers": []string{"alice"}, "passkeys": []channel.PasskeyProof{proof}})
		liar := httptest.NewServer(answering(t, 200, string(body)))
		reg2, _ := channel.LoadPasskeyRegistry(p.file)
		d, err := newHook(t, liar.URL, channel.WithPasskeys(reg2)).Approve(context.Background(), tc.req)
		liar.Close()
		if tc.want == nil {
			if err != nil || !d.Approved || d.Assurance != mcpsafe.AssurancePasskey {
				t.Fatalf("%s: %+v, %v", tc.name, d, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) || d.Approved || !strings.Contains(strings.ToLower(err.Error()), "challenge") {
			t.Fatalf("%s: %+v, %v", tc.name, d, err)
		}
	}

	// Control: A approved with its own assertion through the service.
	finish, err := p.js(`(async () => {
	  const csrf = document.body.dataset.csrf;
	  const post = (u, body) => fetch(u, {method: 'POST', headers: {'X-CSRF-Token': csrf, 'Content-Type': 'application/json'}, body: body && JSON.stringify(body)});
	  const r = await post('/passkeys/approve/pk-call-a/finish', ` + string(got.Assertion) + `);
	  return String(r.status);
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	if finish != "200" {
		t.Fatalf("control: A's assertion for A: HTTP %s", finish)
	}
	if r := wait(t, cha); r.err != nil || !r.d.Approved || r.d.Assurance != mcpsafe.AssurancePasskey {
		t.Fatalf("control: A: %+v, %v", r.d, r.err)
	}
	p.decide("pk-call-b", "deny", "bob", 200)
	if r := wait(t, chb); r.d.Approved {
		t.Fatalf("B approved: %+v", r.d)
	}
}

// Without user verification (a client that asks the authenticator not to
// verify, with an authenticator that would not) the service refuses, and so
// does the gate when a service passes such an assertion on. A password
// login alone cannot approve a passkey tool, in the page or by the API.
func TestPasskeyNeedsUserVerificationAndNotAPassword(t *testing.T) {
	p := newPasskeyEnv(t)
	p.registerPasskey("alice")
	p.hook = p.hookWithRegistry()
	req := passkeyRequest("pk-no-uv")
	ch := p.ask(req)
	p.waitPending("pk-no-uv")

	// Password only: the plain form post and the bearer API are refused.
	jar, _ := cookiejar.New(nil)
	pw := &browser{Client: &http.Client{Jar: jar}, base: p.origin}
	if code, _ := pw.post("/login", url.Values{"name": {"alice"}, "password": {tokenOf("alice")}}, p.origin); code != 200 {
		t.Fatalf("password login: HTTP %d", code)
	}
	if code, body := pw.post("/ui/requests/pk-no-uv/approve", url.Values{"csrf": {pw.csrfOf(t)}}, p.origin, "Accept", "application/json"); code != 403 || !strings.Contains(body, "requires a passkey") {
		t.Fatalf("password session approving a passkey tool: HTTP %d %s", code, body)
	}
	if code, out := p.api("POST", "/api/requests/pk-no-uv/approve", "bob"); code != 403 {
		t.Fatalf("bearer token approving a passkey tool: HTTP %d %v", code, out)
	}

	if _, err := chromedp.Call(p.ctx, webauthn.SetUserVerified, webauthn.SetUserVerifiedParams{AuthenticatorID: p.auth, IsUserVerified: false}); err != nil {
		t.Fatal(err)
	}
	out, err := p.js(`(async () => {
	  const csrf = document.body.dataset.csrf;
	  const post = (u, body) => fetch(u, {method: 'POST', headers: {'X-CSRF-Token': csrf, 'Content-Type': 'application/json'}, body: body && JSON.stringify(body)});
	  const o = await (await post('/passkeys/approve/pk-no-uv/begin')).json();
	  const opts = PublicKeyCredential.parseRequestOptionsFromJSON(o.publicKey);
	  opts.userVerification = 'discouraged';
	  const cred = await navigator.credentials.get({publicKey: opts});
	  const r = await post('/passkeys/approve/pk-no-uv/finish', cred.toJSON());
	  return JSON.stringify({status: r.status, body: await r.json(), assertion: cred.toJSON()});
	})()`)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Status    int
		Body      map[string]any
		Assertion json.RawMessage
	}
	json.Unmarshal([]byte(out), &got)
	if got.Status != 403 || !strings.Contains(strings.ToLower(fmt.Sprint(got.Body["error"])), "verif") {
		t.Fatalf("an assertion without user verification: %s", out)
	}
	reg, _ := channel.LoadPasskeyRegistry(p.file)
	body, _ := json.Marshal(map[string]any{"approved": true, "approvers": []string{"alice"},
		"passkeys": []channel.PasskeyProof{{Approver: "alice", CredentialID: reg.Passkeys[0].CredentialID, Assertion: got.Assertion}}})
	liar := httptest.NewServer(answering(t, 200, string(body)))
	defer liar.Close()
	if d, err := newHook(t, liar.URL, channel.WithPasskeys(reg)).Approve(context.Background(), req); !errors.Is(err, channel.ErrPasskey) || d.Approved || !strings.Contains(strings.ToLower(err.Error()), "verif") {
		t.Fatalf("the gate took an assertion without user verification: %+v, %v", d, err)
	}

	// Control: with user verification the same approver approves.
	if _, err := chromedp.Call(p.ctx, webauthn.SetUserVerified, webauthn.SetUserVerifiedParams{AuthenticatorID: p.auth, IsUserVerified: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.js(`window.mcpsafePasskey.approve('pk-no-uv').then(j => j.status)`); err != nil {
		t.Fatalf("control: %v", err)
	}
	if r := wait(t, ch); r.err != nil || !r.d.Approved || r.d.Assurance != mcpsafe.AssurancePasskey {
		t.Fatalf("control: %+v, %v", r.d, r.err)
	}
}

// N-of-M with passkeys: two distinct approvers must each sign the call.
// A second approver's password does not count, and an answer that names
// two approvers but carries one proof is refused by the gate.
func TestPasskeyTwoOfM(t *testing.T) {
	p := newPasskeyEnv(t)
	p.registerPasskey("alice")
	p.logout()
	p.registerPasskey("bob")
	req := passkeyRequest("pk-two")
	p.hook = p.hookWithRegistry(channel.WithMinApprovers(req.Tool, 2))
	ch := p.ask(req)
	p.waitPending("pk-two")

	if _, err := p.js(`window.mcpsafePasskey.approve('pk-two').then(j => j.status)`); err != nil {
		t.Fatalf("bob's passkey approval: %v", err)
	}
	// alice by password (bearer API): refused, nothing counted.
	if code, _ := p.api("POST", "/api/requests/pk-two/approve", "alice"); code != 403 {
		t.Fatalf("a password approval counted toward a passkey 2-of-M: HTTP %d", code)
	}
	// A service that adds alice without her proof: the gate refuses.
	reg, _ := channel.LoadPasskeyRegistry(p.file)
	code, item := p.api("GET", "/api/requests/pk-two", "carol")
	if code != 200 || item["status"] != channel.StatusPending {
		t.Fatalf("after one passkey: %d %v", code, item)
	}
	twoRec, err := p.svc.st.get(context.Background(), "pk-two")
	if err != nil {
		t.Fatal(err)
	}
	bobProof := *twoRec.Approvals[0].Passkey
	body, _ := json.Marshal(map[string]any{"approved": true, "approvers": []string{"alice", "bob"}, "passkeys": []channel.PasskeyProof{bobProof}})
	liar := httptest.NewServer(answering(t, 200, string(body)))
	defer liar.Close()
	if d, err := newHook(t, liar.URL, channel.WithPasskeys(reg), channel.WithMinApprovers(req.Tool, 2)).Approve(context.Background(), req); !errors.Is(err, channel.ErrPasskey) || d.Approved || !strings.Contains(err.Error(), "2 needed") {
		t.Fatalf("two approvers, one proof: %+v, %v", d, err)
	}

	// Control: alice signs too; the gate sees two verified passkeys.
	p.logout()
	browserLogin(t, p.ctx, p.origin, "alice")
	if _, err := p.js(`window.mcpsafePasskey.approve('pk-two').then(j => j.status)`); err != nil {
		t.Fatalf("alice's passkey approval: %v", err)
	}
	if r := wait(t, ch); r.err != nil || !r.d.Approved || r.d.Assurance != mcpsafe.AssurancePasskey || len(r.d.Approvers) != 2 {
		t.Fatalf("control: %+v, %v", r.d, r.err)
	}
}

// A tool that requires passkeys is never approved by a gate that cannot
// check them, nor by an answer that carries none.
func TestPasskeyRequiredFailsClosed(t *testing.T) {
	body := `{"approved":true,"approvers":["alice"]}`
	srv := httptest.NewServer(answering(t, 200, body))
	defer srv.Close()
	reg := &channel.PasskeyRegistry{RPID: "localhost", Origin: "http://localhost:1", Passkeys: []channel.RegisteredPasskey{}}
	for _, tc := range []struct {
		name string
		req  approver.Request
		opts []channel.WebhookOption
		want string
	}{
		{"no registry", passkeyRequest("pk-fc-1"), nil, "no passkey registry"},
		{"no proofs", passkeyRequest("pk-fc-2"), []channel.WebhookOption{channel.WithPasskeys(reg)}, "0 approver(s) proved"},
		{"control: a tool without the requirement", e2eRequest("pk-fc-3"), []channel.WebhookOption{channel.WithPasskeys(reg)}, ""},
	} {
		d, err := newHook(t, srv.URL, tc.opts...).Approve(context.Background(), tc.req)
		if tc.want == "" {
			if err != nil || !d.Approved || d.Assurance == mcpsafe.AssurancePasskey {
				t.Fatalf("%s: %+v, %v", tc.name, d, err)
			}
			continue
		}
		if !errors.Is(err, channel.ErrPasskey) || d.Approved || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %+v, %v", tc.name, d, err)
		}
	}
}

// A service that cannot take passkeys refuses a passkey request at once
// (nobody there could approve it), and an assurance word it does not know
// is refused, not ignored. Control: the same request without the demand.
func TestServiceRefusesPasskeyRequestsItCannotMeet(t *testing.T) {
	e := newEnv(t, ServiceOptions{})
	if d, err := e.hook.Approve(context.Background(), passkeyRequest("pk-none")); !errors.Is(err, channel.ErrUnavailable) || d.Approved || !strings.Contains(err.Error(), "400") {
		t.Fatalf("passkey request to a service without passkeys: %+v, %v", d, err)
	}
	for _, tc := range []struct {
		assurance string
		code      int
	}{{"hardware-key", 400}, {"PASSKEY", 400}, {"", 0}} {
		var m map[string]any
		json.Unmarshal(wireBody(t, "pk-word-"+strings.ToLower(tc.assurance), time.Now().Add(time.Minute)), &m)
		if tc.assurance != "" {
			m["min_assurance"] = tc.assurance
		}
		body, _ := json.Marshal(m)
		// Prefer: wait=1, so that a request taken as pending answers 202
		// after a second instead of holding the test until it expires.
		req, _ := http.NewRequest("POST", e.srv.URL+"/webhook", bytes.NewReader(body))
		req.Header.Set(channel.SignatureHeader, channel.Sign(testSecret, body, time.Now()))
		req.Header.Set("Prefer", "wait=1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if tc.code == 0 { // control: accepted and pending
			if resp.StatusCode != 202 {
				t.Fatalf("control: HTTP %d %s", resp.StatusCode, out)
			}
			continue
		}
		if resp.StatusCode != tc.code || !strings.Contains(string(out), "min_assurance") {
			t.Errorf("min_assurance %q: HTTP %d %s", tc.assurance, resp.StatusCode, out)
		}
	}
}
