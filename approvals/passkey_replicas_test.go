package approvals

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
)

// roundRobin is a load balancer that sends each request to the next
// replica: every step of a login, a passkey registration and an approval
// lands on another replica than the step before.
func roundRobin(t *testing.T, srv *httptest.Server, targets ...string) {
	var next atomic.Uint64
	var us []*url.URL
	for _, s := range targets {
		u, _ := url.Parse(s)
		us = append(us, u)
	}
	srv.Config.Handler = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(us[next.Add(1)%uint64(len(us))])
			r.Out.Host = r.In.Host
		},
		FlushInterval: -1,
	}
	srv.Start()
	t.Cleanup(srv.Close)
}

// A passkey registered and a call approved with it through two replicas
// on one PostgreSQL database, each request of the browser and of the gate
// going to the next replica: the login, the registration ceremony, the
// approval ceremony and the passkey itself live in the database, and the
// gate's call runs once with the passkey's assurance.
func TestPasskeyApprovalAcrossReplicas(t *testing.T) {
	pub, priv := newKey(t)
	lb := httptest.NewUnstartedServer(nil)
	_, port, _ := strings.Cut(lb.Listener.Addr().String(), ":")
	origin := "http://localhost:" + port
	store := pgTestDB(t)
	var reps []*env
	var urls []string
	for i := range 2 {
		svc, err := NewService(ServiceOptions{Secret: testSecret, Approvers: testApprovers, Origin: origin, Store: store,
			SigningKey: priv, Passkeys: &PasskeyOptions{File: filepath.Join(t.TempDir(), "passkeys.json")}})
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		srv := httptest.NewServer(svc)
		e := &env{t: t, svc: svc, srv: srv}
		t.Cleanup(e.stop)
		reps = append(reps, e)
		urls = append(urls, srv.URL)
	}
	roundRobin(t, lb, urls...)
	ctx := newChromium(t)
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
	}}); err != nil {
		t.Fatal(err)
	}
	p := &pkEnv{env: reps[0], ctx: ctx, file: reps[1].svc.pk.file, origin: origin, pub: pub}
	p.registerPasskey("alice")
	// Each replica's --passkeys-file is a copy of the database's list,
	// written when it reads the list again (here: replica B).
	pk := reps[1].svc.pk
	pk.mu.Lock()
	rctx, cancel := storeCtx()
	err := pk.refreshLocked(rctx)
	cancel()
	pk.mu.Unlock()
	reg, rerr := channel.LoadPasskeyRegistry(p.file)
	if err != nil || rerr != nil || len(reg.Passkeys) != 1 || reg.Passkeys[0].Approver != "alice" {
		t.Fatalf("replica B's copy of the passkeys: %+v %v %v", reg, err, rerr)
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
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`article.req[data-passkey] button.approve`))); err != nil {
		t.Fatalf("no passkey card: %v", err)
	}
	click(t, ctx, `article.req[data-passkey] button.approve`)
	var res *mcp.CallToolResult
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		msg, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#toast`)))
		t.Fatalf("the call did not return; page says %q", msg)
	}
	if res == nil || res.IsError || files.has("cache.txt") || files.runs() != 1 {
		t.Fatalf("after a passkey approval across replicas: %+v, ran %d", res, files.runs())
	}
	if rec, ok := jr.find(journal.ChannelApproved); !ok || rec.Assurance != "passkey" || !strings.Contains(string(rec.Evidence), reg.Passkeys[0].CredentialID) {
		t.Fatalf("journal: %+v", rec)
	}
}
