package approvals

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// ServiceOptions configures the approval service.
type ServiceOptions struct {
	// Secret verifies webhook signatures (at least MinSecretLen bytes).
	Secret []byte
	// Approvers may log in and decide (at least one).
	Approvers []Approver
	// Require maps a tool name to the number of distinct approvers it
	// needs (default 1). A request's own min_approvers can raise it, never
	// lower it.
	Require map[string]int
	// Store is "" or "memory" (state lost on restart), "file:PATH" (an
	// SQLite database; pending requests survive a restart), or
	// "postgres://…" (a PostgreSQL database that any number of replicas
	// share: see USAGE, "Run it for a team").
	Store string
	// Tolerance is the signature timestamp window (default 5 minutes).
	Tolerance time.Duration
	// MaxWait caps how long a request stays pending, whatever its
	// expires_at says (default 1 hour).
	MaxWait time.Duration
	// MaxPending caps pending requests (default 1000); beyond it new
	// requests are refused with 503.
	MaxPending int
	// Origin is the public origin of the web UI, e.g.
	// "https://approvals.example.com". Default: derived from each
	// request's Host and TLS state. Set it behind a TLS-terminating proxy.
	Origin string
	// SessionTTL is how long a login lasts (default 12 hours).
	SessionTTL time.Duration
	// Retention is how long decided and expired requests stay in the
	// history (default 7 days); older ones are deleted from the store.
	Retention time.Duration
	// Hosts are the host names (or IP addresses) the service answers to;
	// a request whose Host header names any other host is refused (421),
	// which defeats DNS rebinding. localhost, 127.0.0.1, ::1 and the host
	// of Origin are always included; add the public name (or the address)
	// clients use.
	Hosts []string
	// Grants, when set, is the ledger the gated servers share: the page
	// and the API list its live standing grants and revoke them.
	Grants ledger.StandingStore
	// OnDecided, if set, is called when a request leaves pending (status
	// approved, denied, expired or withdrawn) with how long it waited: for
	// metrics. With replicas, the replica that made the step calls it,
	// once per request. It must return quickly.
	OnDecided func(status string, waited time.Duration)
	// SigningKey, when set, signs every approval the service answers with
	// (an attestation, see VerifyAttestation); gates configured with the
	// public key refuse approvals without a valid one.
	SigningKey ed25519.PrivateKey
	// OIDC, when set, adds single sign-on for approvers (alongside the
	// local Approvers, or instead of them: Approvers may then be empty).
	// It needs Origin (the redirect URL is Origin/oidc/callback).
	OIDC *OIDCConfig
	// Passkeys, when set, lets approvers register passkeys and approve with
	// them; requests that require one can be approved no other way. It
	// needs Origin (the WebAuthn relying party).
	Passkeys *PasskeyOptions
	// Journals are gate journals (mcpsafe files/proxy --journal) the
	// overview charts and lists, read only, while their gates write them.
	Journals []string
	// Logger receives what the operator must see: webhook calls refused
	// (with the reason the caller was told and what to change), signed
	// calls to a path that is not the webhook, gates' start-up probes.
	// Default: nothing is logged.
	Logger *slog.Logger
	// Slack, when set, posts every request to a Slack channel with Approve
	// and Deny buttons and takes the clicks at /slack/interactions
	// (slack.go).
	Slack *SlackOptions
}

// Service is the approval service: a signed webhook endpoint that
// long-polls until a human decides, a web UI, and a JSON API for bots.
type Service struct {
	opts     ServiceOptions
	st       store
	auth     *authenticator
	mux      *http.ServeMux
	hosts    map[string]bool
	throttle *throttle
	oidc     *oidcLogin   // nil without single sign-on
	pk       *passkeys    // nil without passkeys
	slack    *slackBridge // nil without Slack

	mu       sync.Mutex
	version  uint64
	changed  chan struct{}            // closed (and replaced) on every change
	wake     map[string]chan struct{} // closed when that request changes: its long polls re-read it
	attached map[string]string        // requests this process long-polls for a gate, with the poll's token
	done     chan struct{}
	draining chan struct{} // closed by Drain
	drainOne sync.Once
	closeOne sync.Once
	wg       sync.WaitGroup
	// polls is read-held by each webhook call: Close takes it (and never
	// gives it back), so calls let go of their requests before the store
	// closes, and later calls are refused.
	polls sync.RWMutex

	bodyTimeout time.Duration // reading a webhook body; tests shorten it
	// pollEvery is how often a long poll re-reads its request whatever
	// the notifications say (the fallback after a lost LISTEN connection)
	// and checks its lease; tests shorten it.
	pollEvery atomic.Int64 // a time.Duration
	// replayFloor: signatures older than this (unix seconds) are refused,
	// because the replay cache does not reach back that far.
	replayFloor int64
}

// pollLease is how long a webhook caller's hold on a request lasts
// without renewal: a replica that died while a gate waited on it lets the
// gate re-attach elsewhere after at most this long.
const pollLease = 30 * time.Second

// storeTimeout bounds one step against the store.
const storeTimeout = 5 * time.Second

func storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeTimeout)
}

// NewService builds the service and loads its store.
func NewService(opts ServiceOptions) (*Service, error) {
	if len(opts.Secret) < channel.MinSecretLen {
		return nil, fmt.Errorf("channel: service secret is %d bytes, need at least %d", len(opts.Secret), channel.MinSecretLen)
	}
	if len(opts.Approvers) > 0 || opts.OIDC == nil {
		if err := checkApprovers(opts.Approvers); err != nil {
			return nil, err
		}
	}
	people := len(opts.Approvers)
	if opts.OIDC != nil {
		people += len(opts.OIDC.Users)
	}
	for tool, n := range opts.Require {
		if tool == "" || n < 1 {
			return nil, fmt.Errorf("channel: require %q=%d: need a tool name and N >= 1", tool, n)
		}
		if n > people {
			return nil, fmt.Errorf("channel: %s requires %d approvers but only %d are configured", tool, n, people)
		}
	}
	if opts.Origin != "" && !regexp.MustCompile(`^https?://[^/]+$`).MatchString(opts.Origin) {
		return nil, fmt.Errorf("channel: origin %q must look like https://host[:port]", opts.Origin)
	}
	hosts, err := allowedHosts(opts.Hosts, opts.Origin)
	if err != nil {
		return nil, err
	}
	setDefault(&opts.Tolerance, 5*time.Minute)
	setDefault(&opts.MaxWait, time.Hour)
	setDefault(&opts.SessionTTL, 12*time.Hour)
	setDefault(&opts.Retention, 7*24*time.Hour)
	if opts.MaxPending <= 0 {
		opts.MaxPending = 1000
	}
	var pk *passkeys
	if opts.Passkeys != nil {
		if pk, err = newPasskeys(*opts.Passkeys, opts.Origin); err != nil {
			return nil, err
		}
	}
	var sso *oidcLogin
	if opts.OIDC != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		sso, err = newOIDCLogin(ctx, *opts.OIDC, opts.Origin)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	st, err := openStore(opts.Store)
	if err != nil {
		return nil, err
	}
	s := &Service{
		opts:     opts,
		st:       st,
		hosts:    hosts,
		throttle: newThrottle(failBurst, failRefill, failDelay),
		auth:     newAuthenticator(opts.Approvers, opts.SessionTTL, st.sessions()),
		oidc:     sso,
		pk:       pk,
		changed:  make(chan struct{}),
		wake:     map[string]chan struct{}{},
		attached: map[string]string{},
		done:     make(chan struct{}),
		draining: make(chan struct{}),

		bodyTimeout: 30 * time.Second,
	}
	if ls, ok := st.(*localStore); ok && ls.db == nil {
		s.replayFloor = time.Now().Unix()
	}
	s.pollEvery.Store(int64(10 * time.Second))
	if pk != nil {
		if err := pk.attach(st); err != nil {
			st.close()
			return nil, err
		}
	}
	if opts.Slack != nil {
		if s.slack, err = newSlackBridge(s, *opts.Slack); err != nil {
			st.close()
			return nil, err
		}
	}
	if ps, ok := st.(*pgStore); ok {
		ps.startListening(s.heard)
	}
	s.routes()
	s.wg.Add(1)
	go s.expireLoop()
	if s.slack != nil {
		s.wg.Add(1)
		go s.slack.run()
	}
	return s, nil
}

func setDefault(d *time.Duration, v time.Duration) {
	if *d <= 0 {
		*d = v
	}
}

// Close ends waiting webhook calls and live-update streams (their callers
// see no approval) and closes the store.
func (s *Service) Close() error {
	var err error
	s.closeOne.Do(func() {
		close(s.done)
		s.polls.Lock()
		s.wg.Wait()
		err = s.st.close()
	})
	return err
}

// ServeHTTP implements http.Handler.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// Not no-referrer: under it Chromium sends "Origin: null" on same-site
	// form posts, which the CSRF check then (rightly) refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if !s.hosts[hostOnly(r.Host)] && !probePaths[r.URL.Path] {
		s.refuse(w, r, "call", fail(http.StatusMisdirectedRequest, "host %q is not served here (add it with --host, or use a name this service serves)", prompt.Visible(wire.Clip(r.Host))))
		return
	}
	if r.Method == http.MethodPost && r.Header.Get(channel.SignatureHeader) != "" && r.URL.Path != webhookPath {
		// A gate whose --approver-url lacks /webhook: say so to both
		// sides, instead of a bare 404 or 405.
		s.refuse(w, r, "signed call", fail(http.StatusNotFound, "no webhook at %q: approval requests go to %s (the gate's --approver-url must end in %s)", prompt.Visible(wire.Clip(r.URL.Path)), webhookPath, webhookPath))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// webhookPath is where gates POST requests, withdrawals and probes.
const webhookPath = "/webhook"

func (s *Service) log() *slog.Logger {
	if s.opts.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.opts.Logger
}

// refuse answers a webhook-side call with herr and logs why, so that the
// operator of the service sees what the gate was told.
func (s *Service) refuse(w http.ResponseWriter, r *http.Request, what string, herr *httpError) {
	args := []any{"status", herr.code, "reason", herr.msg, "path", prompt.Visible(wire.Clip(r.URL.Path)), "remote", r.RemoteAddr}
	if herr.code == http.StatusUnauthorized {
		args = append(args, "fix", "the sender's secret (mcpsafe --approver-secret-file) is not this service's --secret-file, or a clock is off")
	}
	s.log().Warn("refused a "+what, args...)
	writeJSON(w, herr.code, map[string]any{"approved": false, "error": herr.msg})
}

func (s *Service) expireLoop() {
	defer s.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for tick := 0; ; tick++ {
		select {
		case <-s.done:
			return
		case <-t.C:
			s.expireNow()
			if tick%4 == 0 { // every second
				ctx, cancel := storeCtx()
				if err := s.st.prune(ctx, s.opts.Retention); err != nil {
					s.log().Warn("pruning the history failed; the next tick tries again", "error", err)
				}
				cancel()
			}
		}
	}
}

// expireNow moves overdue pending requests to expired, by the store's
// clock. A request that stays pending because the store failed is still
// past its deadline by then, so nothing can approve it, and the next tick
// tries again.
func (s *Service) expireNow() {
	ctx, cancel := storeCtx()
	defer cancel()
	gone, err := s.st.expire(ctx)
	if err != nil {
		return
	}
	for i := range gone {
		s.decided(&gone[i])
		s.touch(gone[i].Req.ID)
	}
}

// touch tells this process's waiters that request id changed here ("" for
// any request), and its Slack side that the message may have to follow
// at once: the replica that made a change reports it.
func (s *Service) touch(id string) {
	s.wakeWaiters(id)
	if s.slack != nil {
		s.slack.notice(id, 0)
	}
}

// heard is touch for a change another replica notified (LISTEN/NOTIFY; ""
// after a lost notification connection: every long poll re-reads its
// request). The Slack side looks a little later, taking over only a
// message the replica that made the change did not bring in step.
func (s *Service) heard(id string) {
	s.wakeWaiters(id)
	if s.slack != nil {
		s.slack.notice(id, slackTakeOver)
	}
}

// wakeWaiters wakes this process's long polls on request id ("" for all)
// and its live pages.
func (s *Service) wakeWaiters(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		for k, ch := range s.wake {
			close(ch)
			delete(s.wake, k)
		}
	} else if ch, ok := s.wake[id]; ok {
		close(ch)
		delete(s.wake, id)
	}
	s.version++
	close(s.changed)
	s.changed = make(chan struct{})
}

// wakeOn returns a channel closed at the next change of request id.
// Taken before the request is read, so no change between is missed.
func (s *Service) wakeOn(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.wake[id]
	if !ok {
		ch = make(chan struct{})
		s.wake[id] = ch
	}
	return ch
}

// changes returns the change counter and a channel closed at the next
// change of any request (the page's live updates).
func (s *Service) changes() (uint64, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version, s.changed
}

// Webhook endpoint.

var idRE = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func fail(code int, format string, a ...any) *httpError {
	return &httpError{code: code, msg: fmt.Sprintf(format, a...)}
}

func (s *Service) handleWebhook(w http.ResponseWriter, r *http.Request) {
	// A slow body must not hold a connection open forever; the deadline is
	// per handler, since a server-wide ReadTimeout would also cut off the
	// long poll that follows.
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(s.bodyTimeout))
	body, err := io.ReadAll(io.LimitReader(r.Body, channel.MaxRequestBytes+1))
	if err != nil {
		// The deadline stays: the server must not wait for the rest of
		// this body before answering.
		w.Header().Set("Connection", "close")
		writeJSON(w, http.StatusBadRequest, map[string]any{"approved": false, "error": "reading body: " + err.Error()})
		return
	}
	_ = rc.SetReadDeadline(time.Time{})
	if isProbe(body) {
		s.handleProbe(w, r, body)
		return
	}
	if isWithdrawal(body) {
		s.handleWithdraw(w, r.Header.Get(channel.SignatureHeader), body)
		return
	}
	if !s.polls.TryRLock() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"approved": false, "error": "service shutting down"})
		return
	}
	defer s.polls.RUnlock()
	rec, token, herr := s.admit(r.Header.Get(channel.SignatureHeader), body)
	if herr != nil {
		s.refuse(w, r, "webhook request", herr)
		return
	}
	s.longPoll(w, r, rec, token)
}

// longPoll waits for a decision on rec, holding the request for this
// caller (token) until it answers. The store is the source of truth: the
// request is read again at each notification of a change (from any
// replica), and every pollEvery whatever the notifications say.
func (s *Service) longPoll(w http.ResponseWriter, r *http.Request, rec record, token string) {
	id := rec.Req.ID
	s.mu.Lock()
	s.attached[id] = token
	s.mu.Unlock()
	released := false // answerPending let go of the request already
	defer func() {
		s.mu.Lock()
		if s.attached[id] == token {
			delete(s.attached, id)
		}
		s.mu.Unlock()
		if !released {
			s.release(id, token)
		}
	}()
	timer := time.NewTimer(time.Until(rec.Deadline))
	defer timer.Stop()
	tick := time.NewTicker(time.Duration(s.pollEvery.Load()))
	defer tick.Stop()
	stillPending := preferredWait(r, rec.Deadline)
	renewed := time.Now()
	for {
		wake := s.wakeOn(id)
		ctx, cancel := storeCtx()
		cur, err := s.st.get(ctx, id)
		cancel()
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"approved": false, "error": "store unavailable"})
			return
		}
		if cur.Status != channel.StatusPending {
			break
		}
		if cur.PollBy != token {
			// The lease ran out (this replica could not renew it) and
			// another caller holds the request now: it gets the answer.
			released = true
			writeJSON(w, http.StatusConflict, map[string]any{"approved": false, "error": "another caller is waiting for this request now"})
			return
		}
		select {
		case <-wake:
		case <-timer.C:
			s.expireNow() // the store's clock decides
		case <-tick.C:
			if !time.Now().Before(rec.Deadline) {
				s.expireNow()
			}
			if time.Since(renewed) >= pollLease/3 {
				s.renew(id, token)
				renewed = time.Now()
			}
		case <-stillPending:
			if released = s.answerPending(w, id, token); released {
				return
			}
		case <-s.draining:
			// Stopping: hand the gate over, the request stays pending
			// for a re-attach on another replica.
			if released = s.answerPending(w, id, token); released {
				return
			}
		case <-r.Context().Done():
			return // the caller left; the request stays pending for a re-attach
		case <-s.done:
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"approved": false, "error": "service shutting down"})
			return
		}
	}
	ans, herr := s.deliver(id)
	if herr != nil {
		writeJSON(w, herr.code, map[string]any{"approved": false, "error": herr.msg})
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// deliver hands a decision to its webhook caller, and to every re-attach
// of the same request until it expires or the gate withdraws it: single
// use is the gate's (it redeems the grant in its ledger, once across
// replicas), so a gate that died after a delivery does not lose the
// person's decision. An approval is signed here, once, when the service
// has a signing key, and the attestation is kept with the decision and
// delivered each time.
func (s *Service) deliver(id string) (map[string]any, *httpError) {
	var signErr error
	ctx, cancel := storeCtx()
	defer cancel()
	rec, err := s.st.update(ctx, id, func(cur record, _ time.Time) (*record, error) {
		switch {
		case cur.Status == channel.StatusPending:
			return nil, fail(http.StatusServiceUnavailable, "store unavailable") // a failing store kept it pending
		case cur.Withdrawn != "":
			return nil, fail(http.StatusConflict, "decision withdrawn by the gated server (%s)", cur.Withdrawn)
		}
		next := cur
		next.Delivered = true
		next.PollBy, next.PollUntil = "", time.Time{}
		if next.Status == channel.StatusApproved && s.opts.SigningKey != nil && next.Attestation == nil {
			a, err := s.attestation(&next)
			if err != nil {
				signErr = err
				return nil, fail(http.StatusInternalServerError, "signing the decision failed")
			}
			next.Attestation = &a
		}
		return &next, nil
	})
	if err != nil {
		if signErr != nil {
			s.log().Error("signing a decision failed", "id", id, "error", signErr)
		}
		return nil, httpErrOf(err)
	}
	s.touch(id)
	ans := answerFor(&rec)
	if rec.Attestation != nil {
		ans["attestation"] = *rec.Attestation
	}
	return ans, nil
}

// httpErrOf is the answer for an error from the store or a step's check.
func httpErrOf(err error) *httpError {
	var he *httpError
	switch {
	case errors.As(err, &he):
		return he
	case errors.Is(err, errNotFound):
		return fail(http.StatusNotFound, "%v", err)
	default:
		return fail(http.StatusServiceUnavailable, "store unavailable; nothing recorded")
	}
}

// renew extends this caller's hold on request id.
func (s *Service) renew(id, token string) {
	ctx, cancel := storeCtx()
	defer cancel()
	_, _ = s.st.update(ctx, id, func(cur record, now time.Time) (*record, error) {
		if cur.PollBy != token || cur.Status != channel.StatusPending {
			return nil, nil
		}
		next := cur
		next.PollUntil = now.Add(pollLease)
		return &next, nil
	})
}

// release lets go of request id when this caller still holds it.
func (s *Service) release(id, token string) {
	ctx, cancel := storeCtx()
	defer cancel()
	_, _ = s.st.update(ctx, id, func(cur record, _ time.Time) (*record, error) {
		if cur.PollBy != token {
			return nil, nil
		}
		next := cur
		next.PollBy, next.PollUntil = "", time.Time{}
		return &next, nil
	})
}

func answerFor(r *record) map[string]any {
	ans := map[string]any{"id": r.Req.ID, "approved": r.Status == channel.StatusApproved, "reason": r.Status}
	if r.Status == channel.StatusApproved && r.Grant != "" {
		ans["grant"] = r.Grant
	}
	var names []string
	switch r.Status {
	case channel.StatusApproved:
		var proofs []channel.PasskeyProof
		for _, v := range r.Approvals {
			names = append(names, v.By)
			if v.Passkey != nil {
				proofs = append(proofs, *v.Passkey)
			}
		}
		if proofs != nil {
			ans["passkeys"] = proofs
		}
	case channel.StatusDenied:
		if r.DeniedBy != nil {
			names = []string{r.DeniedBy.By}
		}
	}
	if names != nil {
		ans["approvers"] = names
	}
	return ans
}

// admit verifies and registers a webhook request, or re-attaches a caller
// to the same request after a dropped connection, a service restart or on
// another replica. It returns the request and the caller's poll token.
func (s *Service) admit(sig string, body []byte) (record, string, *httpError) {
	if len(body) > channel.MaxRequestBytes {
		return record{}, "", fail(http.StatusRequestEntityTooLarge, "request larger than %d bytes", channel.MaxRequestBytes)
	}
	now := time.Now()
	replayKey, err := channel.VerifySignatureKey(sig, body, s.opts.Secret, now, s.opts.Tolerance)
	if err != nil {
		return record{}, "", fail(http.StatusUnauthorized, "%v", err)
	}
	ts, _, _ := strings.Cut(replayKey, ".")
	if sec, _ := strconv.ParseInt(ts, 10, 64); sec < s.replayFloor {
		// Signed before this process started, and the memory store's
		// replay cache started empty: a replay cannot be told from a
		// late original, so both are refused. The sender signs again.
		return record{}, "", fail(http.StatusConflict, "signature t=%s is older than this service (memory store: replays from before the start cannot be recognised); sign again", ts)
	}
	req, err := decodeWireRequest(body)
	if err != nil {
		return record{}, "", fail(http.StatusBadRequest, "%v", err)
	}
	if req.MinAssurance == channel.AssurancePasskeyName && s.pk == nil {
		// Nobody here could ever approve it: say so now, not at the expiry.
		return record{}, "", fail(http.StatusBadRequest, "%s requires passkey approvals, and this service has no passkeys configured (--passkeys-file)", prompt.Visible(wire.Clip(req.Tool)))
	}
	// Identify the request by its decoded content without the nonce, so a
	// re-sent copy with a fresh signature matches.
	same := req
	same.Nonce = ""
	canon, _ := json.Marshal(same)
	digest := sha256.Sum256(canon)
	bodyDigest := hex.EncodeToString(digest[:])

	ctx, cancel := storeCtx()
	defer cancel()
	// One insert that only one caller, on any replica, can make: a replay
	// racing its original loses.
	fresh, err := s.st.sawSignature(ctx, replayKey, now.Add(2*s.opts.Tolerance))
	if err != nil {
		return record{}, "", fail(http.StatusServiceUnavailable, "store unavailable")
	}
	if !fresh {
		return record{}, "", fail(http.StatusConflict, "replayed signature (t=%s)", ts)
	}
	token := randomToken()
	again := func(cur record, now time.Time) (*record, error) {
		switch {
		case subtle.ConstantTimeCompare([]byte(cur.BodyDigest), []byte(bodyDigest)) != 1:
			return nil, fail(http.StatusConflict, "request id %s was already used for a different request", req.ID)
		case cur.Withdrawn != "" || cur.Status == channel.StatusWithdrawn:
			return nil, fail(http.StatusConflict, "request %s was withdrawn by the gated server (%s)", req.ID, cur.Withdrawn)
		case cur.Status != channel.StatusPending:
			// Decided: this caller gets the decision, again if need be.
			// A gate that died after its first delivery (kill -9, a lost
			// reply) must not take the person's decision with it; the
			// call still runs at most once, because the gate redeems the
			// grant in its ledger, once across replicas.
			return nil, nil
		}
		// The newest caller holds the request: an earlier one that still
		// waits is told another caller waits now (its gate died, or its
		// client called again elsewhere).
		next := cur
		next.PollBy, next.PollUntil = token, now.Add(pollLease)
		return &next, nil
	}
	create := func(now time.Time, pending int) (*record, error) {
		if pending >= s.opts.MaxPending {
			return nil, fail(http.StatusServiceUnavailable, "too many pending requests (%d)", pending)
		}
		deadline := req.ExpiresAt
		if limit := now.Add(s.opts.MaxWait); limit.Before(deadline) {
			deadline = limit
		}
		if !now.Before(deadline) {
			return nil, fail(http.StatusBadRequest, "request already expired")
		}
		required := max(1, s.opts.Require[req.Tool], req.MinApprovers)
		if required > len(s.opts.Approvers) {
			return nil, fail(http.StatusBadRequest, "request needs %d approvers, only %d are configured", required, len(s.opts.Approvers))
		}
		return &record{Req: req, BodyDigest: bodyDigest, Received: now, Deadline: deadline, Required: required,
			Status: channel.StatusPending, PollBy: token, PollUntil: now.Add(pollLease)}, nil
	}
	rec, err := s.st.admit(ctx, req.ID, create, again)
	if err != nil {
		return record{}, "", httpErrOf(err)
	}
	s.touch(req.ID)
	return rec, token, nil
}

func decodeWireRequest(body []byte) (channel.WireRequest, error) {
	var req channel.WireRequest
	if err := frame.Decode(body, &req); err != nil {
		return req, fmt.Errorf("request body: %v", err)
	}
	switch {
	case req.Version != 1:
		return req, fmt.Errorf("request version %d not supported (want 1)", req.Version)
	case !idRE.MatchString(req.ID):
		return req, errors.New("request id must be 1-128 characters of A-Z a-z 0-9 . _ : -")
	case req.Tool == "" || len(req.Tool) > 128:
		return req, errors.New("tool must be 1-128 bytes")
	case len(req.Summary) > channel.MaxSummaryBytes || len(req.Details) > channel.MaxPlanLines || len(req.Targets) > channel.MaxPlanLines:
		return req, errors.New("plan too large")
	case !partsFit(req.Parts):
		return req, errors.New("plan parts too large")
	case len(req.Arguments) > 0 && !isObject(req.Arguments):
		return req, errors.New("arguments must be a JSON object")
	case req.ExpiresAt.IsZero():
		return req, errors.New("expires_at is required")
	case req.MinApprovers < 0:
		return req, errors.New("min_approvers must not be negative")
	case len(req.Grants) > channel.MaxGrantOffers:
		return req, fmt.Errorf("at most %d grant offers", channel.MaxGrantOffers)
	case req.MinAssurance != "" && req.MinAssurance != channel.AssurancePasskeyName:
		// An assurance this service does not know could not be met.
		return req, fmt.Errorf("min_assurance %q not supported (want %q or none)", wire.Clip(req.MinAssurance), channel.AssurancePasskeyName)
	}
	for _, o := range req.Grants {
		switch {
		case !idRE.MatchString(o.ID) || o.ID == approver.Once:
			return req, errors.New("a grant offer id must be 1-128 characters of A-Z a-z 0-9 . _ : - and not \"once\"")
		case len(o.Label) > channel.MaxSummaryBytes || len(o.CEL) > channel.MaxSummaryBytes || len(o.Words) > channel.MaxSummaryBytes:
			return req, errors.New("a grant offer is too long")
		case o.Uses < 2 || o.TTL <= 0:
			return req, errors.New("a grant offer needs at least 2 uses and a positive ttl")
		}
	}
	// Separation of duties needs to know who asked: a principal with no
	// identity key could be anyone, approvers included.
	if _, err := identity.Key(req.Principal); err != nil {
		return req, fmt.Errorf("principal: %v", err)
	}
	all := []string{req.Tool, req.Summary, req.ArgsDigest, req.Principal, req.Audience}
	for _, o := range req.Grants {
		all = append(all, o.Label, o.Words, o.CEL)
	}
	all = append(all, req.Details...)
	for _, t := range req.Targets {
		all = append(all, t.Name, t.State)
	}
	all = append(all, partTexts(req.Parts)...)
	for _, v := range all {
		if !utf8.ValidString(v) {
			return req, errors.New("plan text is not valid UTF-8")
		}
	}
	return redactRequest(req), nil
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// redactRequest hides secrets before a request is kept, shown or served:
// any gated server holding the secret can send one, and not every sender
// redacts. Values of sensitive arguments (journal's common names) are cut
// out of the plan text too, then the arguments are redacted by name.
func redactRequest(req channel.WireRequest) channel.WireRequest {
	if len(req.Arguments) == 0 {
		return req
	}
	s := journal.FindSecrets(req.Arguments, nil)
	req.Arguments = journal.Redact(req.Arguments, nil)
	if s.Empty() {
		return req
	}
	req.Summary = s.Text(req.Summary)
	details := make([]string, len(req.Details))
	for i, d := range req.Details {
		details[i] = s.Text(d)
	}
	req.Details = details
	targets := make([]mcpsafe.Target, len(req.Targets))
	for i, t := range req.Targets {
		targets[i] = mcpsafe.Target{Name: s.Text(t.Name), State: s.Text(t.State)}
	}
	req.Targets = targets
	req.Parts = redactParts(req.Parts, s)
	return req
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Decisions.

var errNotFound = errors.New("no such request")

// decide records one approver's vote. It returns the record as it is now.
// offered reports whether grant is a choice the request offers: this call
// alone ("" or "once") or exactly one of its grant IDs.
func offered(req channel.WireRequest, grant string) bool {
	if grant == "" || grant == approver.Once {
		return true
	}
	for _, o := range req.Grants {
		if o.ID == grant {
			return true
		}
	}
	return false
}

func (s *Service) decide(id, by string, approve bool, grant string) (record, *httpError) {
	return s.decideVote(id, vote{By: by}, approve, grant)
}

// decideVote records v (its time is set here, by the store's clock). An
// approval of a request that needs a passkey must carry one (already
// verified by the caller), and approves that call alone: the passkey
// signed this call, not a grant. It is the one decision path (page, API,
// passkeys): one step against the store with the request locked, so
// approvers deciding at once on different replicas make one decision.
func (s *Service) decideVote(id string, v vote, approve bool, grant string) (record, *httpError) {
	by := v.By
	if grant == approver.Once {
		grant = ""
	}
	ctx, cancel := storeCtx()
	defer cancel()
	var before record
	rec, err := s.st.update(ctx, id, func(cur record, now time.Time) (*record, error) {
		before = cur
		if cur.Status == channel.StatusPending && !now.Before(cur.Deadline) {
			// Past its deadline by the store's clock: expire it now,
			// whatever the vote.
			next := cur
			next.Status, next.DecidedAt = channel.StatusExpired, now
			return &next, nil
		}
		if cur.Status != channel.StatusPending {
			return nil, alreadyDecided(&cur)
		}
		next := cur
		next.Approvals = append([]vote(nil), cur.Approvals...)
		if approve && !offered(cur.Req, grant) {
			return nil, fail(http.StatusBadRequest, "grant %q is not one of the request's offers", grant)
		}
		if approve && len(cur.Approvals) > 0 && grant != cur.Grant {
			return nil, fail(http.StatusConflict, "the approvals so far chose %q; every approver must approve the same grant", cur.Grant)
		}
		if approve {
			next.Grant = grant
			// One namespace, one comparison (identity.Same): approver
			// "alice" is principal "user:alice", and a principal that cannot
			// be compared counts as everyone's.
			if identity.Same(by, cur.Req.Principal) {
				return nil, fail(http.StatusForbidden, "%s asked for this call (as %q) and cannot approve it; another approver must", by, cur.Req.Principal)
			}
			if s.needsPasskey(&cur) && v.Passkey == nil {
				return nil, fail(http.StatusForbidden, "%s requires a passkey approval of this exact call; a login alone cannot approve it", cur.Req.Tool)
			}
			if s.needsPasskey(&cur) && grant != "" {
				return nil, fail(http.StatusBadRequest, "%s requires a passkey on each call; a standing grant cannot be chosen for it", cur.Req.Tool)
			}
			for _, v := range cur.Approvals {
				if identity.Same(v.By, by) {
					return nil, fail(http.StatusConflict, "%s already approved; %d more distinct approver(s) needed", by, cur.Required-len(cur.Approvals))
				}
			}
			vv := v
			vv.At = now
			next.Approvals = append(next.Approvals, vv)
			if len(next.Approvals) >= next.Required {
				next.Status, next.DecidedAt = channel.StatusApproved, now
			}
		} else {
			next.Status, next.DecidedAt = channel.StatusDenied, now
			next.DeniedBy = &vote{By: by, At: now, Via: v.Via}
		}
		return &next, nil
	})
	if err != nil {
		herr := httpErrOf(err)
		if herr.code == http.StatusServiceUnavailable {
			herr = fail(http.StatusServiceUnavailable, "store unavailable; nothing recorded")
		}
		return before, herr
	}
	s.touch(id)
	if rec.Status != channel.StatusPending {
		s.decided(&rec)
	}
	if rec.Status == channel.StatusExpired && before.Status == channel.StatusPending {
		return rec, fail(http.StatusConflict, "already %s", rec.Status)
	}
	return rec, nil
}

// alreadyDecided refuses a vote on a request that left pending.
func alreadyDecided(cur *record) *httpError {
	who := ""
	switch {
	case cur.Status == channel.StatusDenied && cur.DeniedBy != nil:
		who = " by " + cur.DeniedBy.By
	case cur.Status == channel.StatusApproved:
		who = " by " + strings.Join(voters(cur), ", ")
	}
	return fail(http.StatusConflict, "already %s%s", cur.Status, who)
}

func (s *Service) decided(r *record) {
	if s.opts.OnDecided != nil {
		s.opts.OnDecided(r.Status, r.DecidedAt.Sub(r.Received))
	}
}

// Pending is the number of requests waiting for a decision (0 when the
// store cannot be read).
func (s *Service) Pending() int {
	ctx, cancel := storeCtx()
	defer cancel()
	n, err := s.st.countPending(ctx)
	if err != nil {
		return 0
	}
	return n
}

func voters(r *record) []string {
	var out []string
	for _, v := range r.Approvals {
		out = append(out, v.By)
	}
	return out
}

// historyRows is how many decided requests the page and the API list.
const historyRows = 200

// snapshot returns pending requests in arrival order, then history,
// newest first.
func (s *Service) snapshot() (pending, history []record, err error) {
	s.expireNow()
	ctx, cancel := storeCtx()
	defer cancel()
	if pending, _, err = s.st.pending(ctx, 0, -1); err != nil {
		return nil, nil, err
	}
	if history, err = s.st.history(ctx, historyRows); err != nil {
		return nil, nil, err
	}
	return pending, history, nil
}
