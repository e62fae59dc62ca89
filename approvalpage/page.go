// Package approvalpage serves the local approval page: a web page on the
// user's own machine where a person approves or denies one pending call.
//
// It is for servers that run where their user is (`mcpsafe files`,
// `mcpsafe proxy`, the gateway) and whose client cannot ask anyone
// (Claude Desktop, claude.ai, Gemini CLI) or can only relay a form answer
// that a client hook could give without a person. Each pending call gets
// its own link, unguessable (256 random bits in the path), valid until the
// call's approval expires, good for one decision. The link reaches the
// person by a URL-mode elicitation when the client declares it, or else in
// the user's browser, opened by the server (Options.Open); it is never
// put where only the model would see it.
//
// The page shows the plan whole and two buttons, Approve and Deny. A
// decision is a POST from the page itself: the Host must be the page's
// own address (no DNS rebinding), the Origin the page's origin (no
// cross-site form), and the form carries a token that only the page held.
// A click proves that someone who could use a browser on this machine
// decided, not who: anyone (or any agent with a browser tool) that can
// open the link can click. The gate records it as its own assurance level,
// AssuranceLocalPage, above a relayed form answer and below an approval
// service's authenticated approver.
//
// With Options.Passkeys (credentials the person registered with
// `mcpsafe approval-page enroll`), Approve also takes a user-verified
// passkey assertion over a challenge derived from the call, checked like
// the approval service's (package channel); a click alone is then refused,
// and the gate records AssurancePasskey.
//
// The page listens on loopback only.
package approvalpage

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/loopback"
)

// Options configure a Page.
type Options struct {
	// Addr is the address to listen on: a loopback host and a port, or
	// port 0 for any free one ("127.0.0.1:0").
	Addr string
	// Open shows a link to the person when the call's client cannot be
	// sent it. Nil opens the user's browser through a launcher file
	// (OpenBrowser: the link is never on a command line or in an
	// environment), removed when the call is decided or ends.
	Open func(link string) error
	// Logger gets the address in use and failures to open a link; nil
	// discards them.
	Logger *slog.Logger
	// Clock is the time source (tests); nil is time.Now.
	Clock func() time.Time
	// Passkeys, when set, are the passkeys a person registered for this
	// page (LoadPasskeys; `mcpsafe approval-page enroll` writes them):
	// every approval then takes a user-verified assertion by one of them
	// over that call, and the page is addressed as http://localhost:PORT
	// (WebAuthn takes no IP address as its relying party).
	Passkeys *channel.PasskeyRegistry
}

// A Page is the local approval page. It is the gate's approver for the
// calls it shows: see Await, Link and Withdraw.
type Page struct {
	opts Options
	open func(link string) (launcher *Launcher, err error)
	ln   net.Listener
	srv  *http.Server
	base string // http://HOST:PORT

	mu      sync.Mutex
	byID    map[string]*pending // request ID (the grant's nonce) -> its page
	byLink  map[string]*pending // link secret -> its page
	closing bool
}

// pending is one call's page.
type pending struct {
	req    approver.Request
	secret string // the link's path part
	form   string // the form token the page holds
	shown  bool   // the link went to the person (elicited or opened)
	done   chan struct{}
	// Under Page.mu:
	waiting  int       // Awaits waiting for the decision now
	launcher *Launcher // the file that opened the link, removed when settled
	unopened string    // why the browser did not open, until the page loads
	runsNow  bool      // an Await was waiting when the call was approved
	// Set once, under Page.mu, before done is closed.
	approved  bool
	withdrawn string                // why, when the gate withdrew it
	proof     *channel.PasskeyProof // the approval's passkey assertion, with Options.Passkeys
	decidedAt time.Time
}

// Listen starts the page on opts.Addr.
func Listen(opts Options) (*Page, error) {
	if err := CheckAddr(opts.Addr); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	open := func(link string) (*Launcher, error) { return nil, opts.Open(link) }
	if opts.Open == nil {
		open = OpenBrowser
	}
	if opts.Passkeys != nil {
		if err := checkRegistry(opts.Passkeys); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("approval page: %w", err)
	}
	base := "http://" + ln.Addr().String()
	if opts.Passkeys != nil {
		base = "http://" + net.JoinHostPort(LocalRPID, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	p := &Page{opts: opts, open: open, ln: ln, base: base,
		byID: map[string]*pending{}, byLink: map[string]*pending{}}
	p.srv = &http.Server{Handler: p.handler(), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, MaxHeaderBytes: 16 << 10}
	go p.srv.Serve(ln)
	opts.Logger.Info("approval page: serving on loopback", "url", p.base)
	return p, nil
}

// CheckAddr refuses a listen address that is not on loopback.
func CheckAddr(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("approval page: %q is not HOST:PORT (e.g. 127.0.0.1:0): %w", addr, err)
	}
	if !loopback.Addr(addr) {
		return fmt.Errorf("approval page: %q is not a loopback address; the page has no login, so it listens on 127.0.0.1 or ::1 only (for approvers elsewhere, use `mcpsafe approvals serve`)", addr)
	}
	return nil
}

// URL is the page's base address.
func (p *Page) URL() string { return p.base }

// Close stops serving; the calls waiting on the page are not approved.
func (p *Page) Close() error {
	p.mu.Lock()
	p.closing = true
	for _, e := range p.byID {
		p.settleLocked(e, false, "the approval page stopped")
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

// errors the gate maps to its refusals.
var errClosed = errors.New("approval page: stopped")

// Link registers r (once) and returns its page's link, for the gate to
// send in a URL-mode elicitation. Nothing is opened.
func (p *Page) Link(r approver.Request) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, err := p.registerLocked(r)
	if err != nil {
		return "", err
	}
	e.shown = true
	return p.base + "/a/" + e.secret, nil
}

// Approve asks and waits for the decision until ctx ends.
func (p *Page) Approve(ctx context.Context, r approver.Request) (approver.Decision, error) {
	return p.Await(ctx, r, 0)
}

// Await registers r (once), opens its link for the person unless Link
// handed it out already, and waits at most wait (no limit but ctx when
// wait <= 0). Still undecided then: an error wrapping approver.ErrPending,
// and the page stays open. A decision is delivered to one Await only.
func (p *Page) Await(ctx context.Context, r approver.Request, wait time.Duration) (approver.Decision, error) {
	p.mu.Lock()
	e, err := p.registerLocked(r)
	if err != nil {
		p.mu.Unlock()
		return approver.Decision{}, err
	}
	open := !e.shown
	e.shown = true
	e.waiting++
	p.mu.Unlock()
	if open {
		// The opener may take a while to fail (openerGrace); the call
		// waits meanwhile.
		go p.openLink(e, p.base+"/a/"+e.secret)
	}
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		p.mu.Lock()
		e.waiting--
		p.mu.Unlock()
		return approver.Decision{}, ctx.Err()
	case <-timeout:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	e.waiting--
	select {
	case <-e.done:
		// Decided, maybe as the wait ended: the page told the person
		// the call runs now (runsNow), so it is delivered now.
	default:
		if e.unopened != "" {
			return approver.Decision{}, fmt.Errorf("approval page: %w (%w: %s)", approver.ErrPending, approver.ErrNotShown, e.unopened)
		}
		return approver.Decision{}, fmt.Errorf("approval page: %w", approver.ErrPending)
	}
	if p.byID[r.ID] != e {
		return approver.Decision{}, errors.New("approval page: the decision was delivered already")
	}
	delete(p.byID, r.ID) // delivered once
	switch {
	case e.withdrawn != "":
		return approver.Decision{}, fmt.Errorf("approval page: %s: %w", e.withdrawn, approver.ErrNoDecision)
	case !e.approved:
		return approver.Decision{}, fmt.Errorf("approval page: %w", approver.ErrDenied)
	case e.proof != nil:
		ev, err := json.Marshal(channel.PageProof{Approver: e.proof.Approver, CredentialID: e.proof.CredentialID,
			Assertion: e.proof.Assertion, TargetsDigest: channel.TargetsDigest(e.req.Targets),
			ExpiresAt: e.req.ExpiresAt.UTC(), Audience: e.req.Audience, Origin: p.base})
		if err != nil {
			return approver.Decision{}, fmt.Errorf("approval page: %w", err)
		}
		return approver.Decision{Approved: true, Assurance: mcpsafe.AssurancePasskey,
			Approvers: []string{e.proof.Approver}, Evidence: ev}, nil
	case p.opts.Passkeys != nil:
		return approver.Decision{}, errors.New("approval page: approved without a passkey on a page that requires one")
	}
	return approver.Decision{Approved: true, Assurance: mcpsafe.AssuranceLocalPage}, nil
}

// openLink opens e's link for the person. When the browser does not open,
// the log (stderr of the servers in cmd/mcpsafe: the user's own) says how
// to reach the page, and the call's pending answer says that it could not
// be shown (approver.ErrNotShown) until the page is loaded.
func (p *Page) openLink(e *pending, link string) {
	l, err := p.open(link)
	p.mu.Lock()
	settled := isDone(e)
	if l != nil && !settled {
		e.launcher = l
	}
	if err != nil && !settled {
		e.unopened = "the server could not open the approval page in the person's browser"
	}
	p.mu.Unlock()
	if l != nil && settled {
		l.Remove()
	}
	switch {
	case err == nil:
	case l != nil:
		p.opts.Logger.Warn("approval page: could not open the browser; to approve or deny, open the launcher file in your browser (only your user can read it)",
			"tool", e.req.Tool, "open", l.URL(), "err", err)
	default:
		// No launcher file either: the link itself, in the operator's
		// own log (never the model's).
		p.opts.Logger.Warn("approval page: could not open the browser; to approve or deny, open this link in your browser", "tool", e.req.Tool, "link", link, "err", err)
	}
}

func isDone(e *pending) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// Assurance is what the page's approvals prove: AssurancePasskey with
// Options.Passkeys, else AssuranceLocalPage.
func (p *Page) Assurance() mcpsafe.Assurance {
	if p.opts.Passkeys != nil {
		return mcpsafe.AssurancePasskey
	}
	return mcpsafe.AssuranceLocalPage
}

// Withdraw ends r's page: nobody will pick its decision up.
func (p *Page) Withdraw(_ context.Context, r approver.Request, reason string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.byID[r.ID]; e != nil {
		p.settleLocked(e, false, "withdrew the request ("+reason+")")
	}
	return nil
}

// registerLocked finds r's page or makes it. A request ID seen again must
// be the same request: its tool, arguments digest, principal and expiry.
func (p *Page) registerLocked(r approver.Request) (*pending, error) {
	if p.closing {
		return nil, errClosed
	}
	if r.ID == "" {
		return nil, errors.New("approval page: a request without an ID")
	}
	if e := p.byID[r.ID]; e != nil {
		if e.req.Tool != r.Tool || e.req.ArgsDigest != r.ArgsDigest || e.req.Principal != r.Principal || !e.req.ExpiresAt.Equal(r.ExpiresAt) {
			return nil, errors.New("approval page: a request ID reused for another call")
		}
		return e, nil
	}
	p.sweepLocked()
	e := &pending{req: r, secret: random(), form: random(), done: make(chan struct{})}
	p.byID[r.ID] = e
	p.byLink[e.secret] = e
	return e, nil
}

// settleLocked records the one decision of e.
func (p *Page) settleLocked(e *pending, approved bool, withdrawn string) bool {
	return p.settleProvedLocked(e, approved, withdrawn, nil)
}

func (p *Page) settleProvedLocked(e *pending, approved bool, withdrawn string, proof *channel.PasskeyProof) bool {
	select {
	case <-e.done:
		return false
	default:
	}
	e.approved, e.withdrawn, e.proof = approved, withdrawn, proof
	e.decidedAt = p.opts.Clock()
	e.runsNow = approved && e.waiting > 0
	close(e.done)
	if e.launcher != nil {
		e.launcher.Remove()
		e.launcher = nil
	}
	return true
}

// sweepLocked forgets links an hour past their expiry (the page says
// "expired" until then).
func (p *Page) sweepLocked() {
	now := p.opts.Clock()
	for k, e := range p.byLink {
		if now.After(e.req.ExpiresAt.Add(time.Hour)) {
			if e.launcher != nil {
				e.launcher.Remove()
				e.launcher = nil
			}
			delete(p.byLink, k)
			if p.byID[e.req.ID] == e {
				delete(p.byID, e.req.ID)
			}
		}
	}
}

func random() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func sameSecret(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// Awaiter returns p: a page keeps a request open across calls.
func (p *Page) Awaiter() approver.Awaiter { return p }

// Withdrawer returns p: a page can take a request back.
func (p *Page) Withdrawer() approver.Withdrawer { return p }

var _ approver.Page = (*Page)(nil)
