package channel

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/loopback"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// The errors an Approve call wraps. Every one of them means not approved;
// they differ in what the caller may do next. ErrDenied also matches
// approver.ErrDenied and ErrTimeout approver.ErrNoDecision (errors.Is), so the
// gate reports channel_denied, timeout, or channel_unavailable for the rest.
var (
	// ErrDenied: an approver said no. Final; do not ask again.
	ErrDenied error = &kindError{"channel: denied by an approver", approver.ErrDenied}
	// ErrTimeout: nobody decided before the deadline (or the call timed out).
	ErrTimeout error = &kindError{"channel: no decision before the deadline", approver.ErrNoDecision}
	// ErrUnavailable: the approver could not be reached or answered with a
	// non-2xx status (connection refused, TLS failure, redirect, 4xx, 5xx).
	ErrUnavailable = errors.New("channel: approver unavailable")
	// ErrBadResponse: a 2xx answer that is not exactly the contract: not
	// JSON, trailing data, duplicate keys, approved not a JSON boolean,
	// too large, or listing the requesting principal as an approver.
	ErrBadResponse = errors.New("channel: approver response rejected")
	// ErrMisconfigured: the approval service refused the request for a
	// reason only the operator can fix: a secret that is not the
	// service's (HTTP 401), a URL that is not its webhook (404, 405), a
	// host name it does not serve (421). Every call would fail the same
	// way. It comes with ErrUnavailable (errors.Is matches both).
	ErrMisconfigured = errors.New("channel: the approval channel is misconfigured")
	// ErrRequest: the request itself cannot be sent (no id, no expiry).
	ErrRequest = errors.New("channel: approval request invalid")
	// ErrPending: Await's wait ended before anyone decided; the request
	// stays open and asking again re-attaches to it. Never an approval.
	ErrPending error = &kindError{"channel: no decision yet", approver.ErrPending}
)

// kindError is a sentinel with its own message that also matches the root
// package's sentinel of the same meaning.
type kindError struct {
	msg  string
	root error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.root }

// MaxResponseBytes bounds an approver's answer; a larger one is rejected.
const MaxResponseBytes = 64 << 10

// DefaultTimeout bounds one Approve call when WithTimeout is not given. The
// request's own ExpiresAt bounds it too, whichever comes first.
const DefaultTimeout = 10 * time.Minute

// Limits on one webhook request: the approval service refuses a larger
// one, and Webhook checks them before sending, so that a plan too large to
// show whole is refused as such (and never cut to fit).
const (
	MaxRequestBytes = 1 << 20 // room for the plan's parts (plan.MaxPartBytes each)
	MaxSummaryBytes = 4096
	MaxPlanLines    = 200
	// MaxGrantOffers bounds the standing grants one request may offer.
	MaxGrantOffers = 16
)

// Status of a request in the approval service, and the reason its answer
// gives when it does not approve.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
	StatusExpired  = "expired"
	// StatusWithdrawn: the gate took the request back because nobody will
	// pick the decision up (its caller went away, or it stopped waiting).
	StatusWithdrawn = "withdrawn"
)

// WireRequest is the JSON body a Webhook POSTs. Field names are a public
// contract (see docs/USAGE.md (channel approvals)).
type WireRequest struct {
	Version int              `json:"version"`
	ID      string           `json:"id"`
	Tool    string           `json:"tool"`
	Summary string           `json:"summary"`
	Details []string         `json:"details"`
	Targets []mcpsafe.Target `json:"targets"`
	// Parts are the plan's typed parts (a diff as lines marked +, - or
	// context, a table), whole and rendered for a human.
	Parts []plan.PartView `json:"parts,omitempty"`
	// Arguments are the call's arguments in full, sensitive values
	// redacted (journal.Redact): the approver can check every one.
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	ArgsDigest   string          `json:"args_digest"`
	Principal    string          `json:"principal"`
	Audience     string          `json:"audience"`
	Irreversible bool            `json:"irreversible"`
	ExpiresAt    time.Time       `json:"expires_at"`
	MinApprovers int             `json:"min_approvers"`
	// Grants are the standing grants the approver may choose instead of
	// this call alone; the answer names one by ID in "grant".
	Grants []approver.GrantOffer `json:"grants,omitempty"`
	// MinAssurance is "passkey" when the tool requires each approver's
	// passkey on the call; empty otherwise.
	MinAssurance string `json:"min_assurance,omitempty"`
	// Nonce is fresh for every POST, so two sends of the same request in
	// the same second still carry different signatures: a receiver can
	// then treat a repeated signature as a replay, always.
	Nonce string `json:"nonce"`
}

// Webhook asks an HTTP approver (an `mcpsafe approvals serve` or anything
// that speaks the same contract) and implements approver.Approver.
type Webhook struct {
	url       string
	secret    []byte
	timeout   time.Duration
	client    *http.Client
	require   map[string]int
	now       func() time.Time
	allowHTTP bool
	// serviceKey, when set, must have signed every approval.
	serviceKey ed25519.PublicKey
	// passkeys verifies passkey proofs; nil: none can be verified.
	passkeys *PasskeyRegistry
	// refused holds the ids of requests the service refused outright, so
	// never opened: withdrawing one is a no-op (see Withdraw).
	refusedMu sync.Mutex
	refused   map[string]bool
}

var _ approver.Approver = (*Webhook)(nil)

// Awaiter returns w: a webhook keeps a request open across calls (Await).
func (w *Webhook) Awaiter() approver.Awaiter { return w }

// Withdrawer returns w: a webhook can take a request back (Withdraw).
func (w *Webhook) Withdrawer() approver.Withdrawer { return w }

// WebhookOption configures a Webhook.
type WebhookOption func(*Webhook) error

// WithTimeout bounds each Approve call (default DefaultTimeout). The
// request's ExpiresAt and the caller's context bound it as well.
func WithTimeout(d time.Duration) WebhookOption {
	return func(w *Webhook) error {
		if d <= 0 {
			return fmt.Errorf("channel: timeout must be positive, got %s", d)
		}
		w.timeout = d
		return nil
	}
}

// WithTLSConfig sets the TLS configuration (e.g. RootCAs for a private CA).
func WithTLSConfig(c *tls.Config) WebhookOption {
	return func(w *Webhook) error {
		if c == nil {
			return errors.New("channel: nil TLS config")
		}
		if c.InsecureSkipVerify {
			return errors.New("channel: refusing a TLS config that skips verification")
		}
		w.client.Transport.(*http.Transport).TLSClientConfig = c.Clone()
		return nil
	}
}

// WithMinApprovers demands at least n distinct approvers for tool. It is
// sent as min_approvers (the service takes the larger of this and its own
// setting) and checked again on the answer.
func WithMinApprovers(tool string, n int) WebhookOption {
	return func(w *Webhook) error {
		if tool == "" || n < 1 {
			return fmt.Errorf("channel: min approvers for %q must be >= 1", tool)
		}
		w.require[tool] = n
		return nil
	}
}

// WithPlainHTTP allows an http:// URL to a host other than loopback. Off by
// default: without TLS anyone on the path can forge an "approved" answer.
func WithPlainHTTP() WebhookOption {
	return func(w *Webhook) error { w.allowHTTP = true; return nil }
}

func withClock(now func() time.Time) WebhookOption {
	return func(w *Webhook) error { w.now = now; return nil }
}

// NewWebhook returns an approver that POSTs signed requests to rawURL.
// secret must be at least MinSecretLen bytes.
func NewWebhook(rawURL string, secret []byte, opts ...WebhookOption) (*Webhook, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("channel: webhook secret is %d bytes, need at least %d", len(secret), MinSecretLen)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("channel: webhook url: %w", err)
	}
	if u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.Fragment != "" {
		return nil, fmt.Errorf("channel: webhook url %q must be http(s)://host/path without credentials", rawURL)
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        4,
		IdleConnTimeout:     30 * time.Second,
	}
	w := &Webhook{
		url:     u.String(),
		secret:  bytes.Clone(secret),
		timeout: DefaultTimeout,
		require: map[string]int{},
		now:     time.Now,
		client: &http.Client{
			Transport: tr,
			// An approval must come from the URL the operator configured.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	for _, o := range opts {
		if err := o(w); err != nil {
			return nil, err
		}
	}
	if u.Scheme == "http" && !w.allowHTTP && !loopback.Host(u.Hostname()) {
		return nil, fmt.Errorf("channel: webhook url %q is plain http to a non-loopback host; use https (or WithPlainHTTP)", rawURL)
	}
	return w, nil
}

// Approve sends r and waits for the answer. It returns Approved true only
// for a 2xx JSON answer whose approved is exactly true; every other outcome
// is an error wrapping one of ErrDenied, ErrTimeout, ErrUnavailable,
// ErrBadResponse, ErrRequest.
func (w *Webhook) Approve(ctx context.Context, r approver.Request) (approver.Decision, error) {
	return w.Await(ctx, r, 0)
}

// Await is Approve that waits at most wait (when wait > 0): it sends
// "Prefer: wait=N" (RFC 7240), and a 202 answer, or no answer by then,
// is ErrPending; the request stays open at the service, and sending the
// same request again re-attaches to it.
func (w *Webhook) Await(ctx context.Context, r approver.Request, wait time.Duration) (approver.Decision, error) {
	no := approver.Decision{}
	if r.ID == "" || r.Tool == "" {
		return no, fmt.Errorf("%w: request id and tool are required", ErrRequest)
	}
	now := w.now()
	if r.ExpiresAt.IsZero() {
		return no, fmt.Errorf("%w: request has no expiry", ErrRequest)
	}
	// Without a comparable principal no answer could be checked for
	// self-approval; refuse before a human spends time on it.
	if _, err := identity.Key(r.Principal); err != nil {
		return no, fmt.Errorf("%w: principal: %v", ErrRequest, err)
	}
	if !now.Before(r.ExpiresAt) {
		return no, fmt.Errorf("%w: request expired at %s", ErrTimeout, r.ExpiresAt.UTC().Format(time.RFC3339))
	}
	wire := WireRequest{
		Version: 1, ID: r.ID, Tool: r.Tool, Summary: r.Summary,
		Details: wire.NonNil(r.Details), Targets: wire.NonNil(r.Targets), Parts: r.Parts,
		ArgsDigest: r.ArgsDigest, Principal: r.Principal, Audience: r.Audience,
		Irreversible: r.Irreversible, ExpiresAt: r.ExpiresAt.UTC(),
		MinApprovers: w.require[r.Tool], Nonce: newNonce(), Grants: r.Grants,
	}
	if r.MinAssurance >= mcpsafe.AssurancePasskey {
		wire.MinAssurance = AssurancePasskeyName
	}
	if len(r.Arguments) > 0 {
		// The gate redacted them with the tool's own names already; this
		// is where a plan leaves the process, so the common names again.
		wire.Arguments = journal.Redact(r.Arguments, nil)
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return no, fmt.Errorf("%w: %v", ErrRequest, err)
	}
	if err := fitsService(wire, len(body)); err != nil {
		return no, fmt.Errorf("%w: %w: %v", ErrRequest, approver.ErrPlanTooLarge, err)
	}
	start := now
	for attempt := 1; ; attempt++ {
		left := wait
		if wait > 0 {
			// A re-attach waits what is left of the caller's wait.
			if left = wait - now.Sub(start); left <= 0 {
				return no, fmt.Errorf("%w: no answer within %s", ErrPending, wait)
			}
		}
		d, err, again := w.send(ctx, r, body, now, left)
		if !again {
			return d, err
		}
		if attempt == reattachTries {
			return d, fmt.Errorf("%w: %w", approver.ErrUnreachable, err)
		}
		// The connection dropped, or the replica behind the balancer
		// went away (502/504): the request stays open at the
		// service, so the same request again re-attaches to it, on a
		// replica that is up. Each send is signed anew, with a fresh
		// nonce (the service identifies the request without it).
		select {
		case <-ctx.Done():
			return d, fmt.Errorf("%w: %w", approver.ErrUnreachable, err)
		case <-time.After(time.Duration(attempt*attempt) * reattachPause):
		}
		now = w.now()
		if !now.Before(r.ExpiresAt) {
			return d, err
		}
		wire.Nonce = newNonce()
		if body, err = json.Marshal(wire); err != nil {
			return no, fmt.Errorf("%w: %v", ErrRequest, err)
		}
	}
}

// reattachTries bounds the sends of one Await whose connection to the
// service dropped; reattachPause, squared by the attempt, spaces them.
const (
	reattachTries = 4
	reattachPause = 150 * time.Millisecond
)

// send is one attempt of Await: again reports a failure that a re-attach
// may cure (the connection dropped or a balancer found no replica), never
// an answer the service gave about the request itself.
func (w *Webhook) send(ctx context.Context, r approver.Request, body []byte, now time.Time, wait time.Duration) (_ approver.Decision, _ error, again bool) {
	no := approver.Decision{}
	deadline := now.Add(w.timeout)
	if r.ExpiresAt.Before(deadline) {
		deadline = r.ExpiresAt
	}
	prefer, short := preferWait(now, wait, deadline)
	if short {
		// The service answers 202 after the wait; the grace covers a
		// service that ignores Prefer, and is never longer than the wait
		// for a decision itself.
		short = false
		if d := now.Add(wait + pendingGrace); d.Before(deadline) {
			deadline, short = d, true
		}
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return no, fmt.Errorf("%w: %v", ErrRequest, err), false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(SignatureHeader, Sign(w.secret, body, now))
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}

	resp, err := w.client.Do(req)
	if err != nil {
		if short && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// A service that ignores Prefer keeps the request open for a
			// re-attach when the long poll drops.
			return no, fmt.Errorf("%w: no answer within %s", ErrPending, wait), false
		}
		terr := w.transportError(ctx, err)
		return no, terr, ctx.Err() == nil && !errors.Is(terr, ErrTimeout)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted {
		// Never an approval, whatever the body says.
		return no, fmt.Errorf("%w: the approver has not decided yet", ErrPending), false
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if neverOpened(resp.StatusCode) {
			w.markRefused(r.ID)
		}
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusGatewayTimeout:
			// A balancer in front of the service: the replica it chose
			// went away.
			return no, statusError(resp, "request"), true
		case http.StatusServiceUnavailable:
			// The service answered: its store is down, it is stopping,
			// or it holds too many requests. Not sent again, but the
			// request may be open there.
			return no, fmt.Errorf("%w: %w", approver.ErrUnreachable, statusError(resp, "request")), false
		}
		return no, statusError(resp, "request"), false
	}
	d, err := w.answer(ctx, r, resp)
	return d, err, false
}

// answer reads the service's 2xx answer to r.
func (w *Webhook) answer(ctx context.Context, r approver.Request, resp *http.Response) (approver.Decision, error) {
	no := approver.Decision{}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return no, w.transportError(ctx, fmt.Errorf("reading the response: %w", err))
	}
	if len(raw) > MaxResponseBytes {
		return no, fmt.Errorf("%w: response larger than %d bytes", ErrBadResponse, MaxResponseBytes)
	}
	ans, err := parseAnswer(raw)
	if err != nil {
		return no, err
	}
	if ans.ID != "" && ans.ID != r.ID {
		return no, fmt.Errorf("%w: answer is for request %q, not %q", ErrBadResponse, ans.ID, r.ID)
	}
	if !ans.Approved {
		switch ans.Reason {
		case "expired", "timeout":
			return no, fmt.Errorf("%w: the approver reports the request expired", ErrTimeout)
		case StatusWithdrawn:
			return no, fmt.Errorf("%w: the request was withdrawn", ErrUnavailable)
		}
		d := approver.Decision{Approvers: ans.Approvers}
		if len(ans.Approvers) > 0 {
			return d, fmt.Errorf("%w: %s", ErrDenied, strings.Join(ans.Approvers, ", "))
		}
		return d, ErrDenied
	}
	for _, a := range ans.Approvers {
		if _, err := identity.Key(a); err != nil {
			return no, fmt.Errorf("%w: approver %q cannot be compared with the requesting principal: %v", ErrBadResponse, a, err)
		}
		if identity.Same(a, r.Principal) {
			return no, fmt.Errorf("%w: the requesting principal %q is listed as its own approver (%q)", ErrBadResponse, r.Principal, a)
		}
	}
	if n := w.require[r.Tool]; n > 1 && len(ans.Approvers) < n {
		return no, fmt.Errorf("%w: %s needs %d distinct approvers, the answer names %d", ErrBadResponse, r.Tool, n, len(ans.Approvers))
	}
	evidence, err := w.checkAttestation(r, ans)
	if err != nil {
		return no, err
	}
	dec := approver.Decision{Approved: true, Approvers: ans.Approvers, Grant: ans.Grant, Evidence: evidence}
	if r.MinAssurance >= mcpsafe.AssurancePasskey || (w.passkeys != nil && len(ans.Passkeys) > 0) {
		if w.passkeys == nil {
			return no, fmt.Errorf("%w: %w: %s requires passkeys, and this webhook has no passkey registry to check them with (WithPasskeys)", ErrBadResponse, ErrPasskey, r.Tool)
		}
		if err := w.passkeys.checkPasskeys(r, ans.Approvers, ans.Passkeys, max(1, w.require[r.Tool])); err != nil {
			return no, fmt.Errorf("%w: %w", ErrBadResponse, err)
		}
		dec.Assurance = mcpsafe.AssurancePasskey
	}
	return dec, nil
}

// fitsService checks a request against the limits the approval service
// enforces, so that a plan too large to show whole is refused as such (and
// never cut to fit).
func fitsService(r WireRequest, size int) error {
	switch {
	case size > MaxRequestBytes:
		return fmt.Errorf("the request is %d bytes, the approval service takes at most %d", size, MaxRequestBytes)
	case len(r.Summary) > MaxSummaryBytes:
		return fmt.Errorf("the summary is %d bytes, the approval service takes at most %d", len(r.Summary), MaxSummaryBytes)
	case len(r.Details) > MaxPlanLines || len(r.Targets) > MaxPlanLines:
		return fmt.Errorf("the plan has %d details and %d targets, the approval service takes at most %d of each", len(r.Details), len(r.Targets), MaxPlanLines)
	}
	return nil
}

// neverOpened reports whether an answer with this status means the
// service refused the request before keeping it (an mcpsafe approval
// service answers these only then): there is nothing to withdraw.
func neverOpened(code int) bool {
	switch code {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound, http.StatusMethodNotAllowed,
		http.StatusRequestEntityTooLarge, http.StatusMisdirectedRequest:
		return true
	}
	return false
}

// maxRefused bounds the ids remembered as refused; past it the oldest are
// forgotten (a withdrawal of one is then sent, and refused in turn).
const maxRefused = 1024

func (w *Webhook) markRefused(id string) {
	w.refusedMu.Lock()
	defer w.refusedMu.Unlock()
	if w.refused == nil || len(w.refused) >= maxRefused {
		w.refused = map[string]bool{}
	}
	w.refused[id] = true
}

// takeRefused reports whether id was refused outright, and forgets it.
func (w *Webhook) takeRefused(id string) bool {
	w.refusedMu.Lock()
	defer w.refusedMu.Unlock()
	if !w.refused[id] {
		return false
	}
	delete(w.refused, id)
	return true
}

// statusError says what a non-2xx answer means and what to change, with
// the service's own reason (its JSON "error", sanitized and clipped).
// what is "request", "withdrawal" or "probe".
func statusError(resp *http.Response, what string) error {
	code := resp.StatusCode
	reason := ""
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && body.Error != "" {
		reason = body.Error
		if len(reason) > 300 {
			reason = reason[:300] + "..."
		}
		reason = ": " + prompt.Visible(reason)
	}
	status := fmt.Sprintf("HTTP %d%s", code, reason)
	switch {
	case code == http.StatusUnauthorized:
		return misconfigured("the approval service refused the signature of the %s (%s): --approver-secret-file must hold the same secret as the service's --secret-file (and both clocks must be right)", what, status)
	case code == http.StatusNotFound && body.Error == "no such request":
		return fmt.Errorf("%w: the approval service holds no such request (%s)", ErrUnavailable, status)
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		return misconfigured("nothing at --approver-url takes approval requests (%s): it must be the approval service's webhook, whose path is /webhook (for example http://127.0.0.1:8080/webhook)", status)
	case code == http.StatusMisdirectedRequest:
		return misconfigured("the approval service does not answer to the host name in --approver-url (%s): use a name it serves, or add this one to its --host", status)
	case code >= 300 && code < 400:
		return fmt.Errorf("%w: %s (redirects are never followed: --approver-url must be the webhook itself)", ErrUnavailable, status)
	}
	return fmt.Errorf("%w: the approval service answered the %s with %s", ErrUnavailable, what, status)
}

// misconfigError is ErrMisconfigured (and ErrUnavailable) with a message
// that says what to change, without the sentinels' own words.
type misconfigError struct{ msg string }

func (e *misconfigError) Error() string { return e.msg }
func (e *misconfigError) Is(target error) bool {
	return target == ErrMisconfigured || target == ErrUnavailable
}

func misconfigured(format string, a ...any) error {
	return &misconfigError{"channel: " + fmt.Sprintf(format, a...)}
}

func (w *Webhook) transportError(ctx context.Context, err error) error {
	// A *url.Error names the URL, which may carry a key in its query and
	// ends up in logs: keep only what went wrong.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = fmt.Errorf("%s to the approver: %w", ue.Op, ue.Err)
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		if errors.Is(ctx.Err(), context.Canceled) {
			return fmt.Errorf("%w: call cancelled: %v", ErrUnavailable, err)
		}
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	}
	return fmt.Errorf("%w: %v", ErrUnavailable, err)
}

func newNonce() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("channel: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// answer is a parsed approver response.
type answer struct {
	ID        string
	Approved  bool
	Approvers []string
	Reason    string
	Grant     string // the standing grant chosen, checked again by the gate
	// Attestation is the service's signed statement, unverified.
	Attestation json.RawMessage
	// Passkeys are the approvers' assertions, unverified.
	Passkeys []PasskeyProof
}

// parseAnswer reads the response strictly: one JSON object, no duplicate
// keys at any depth, nothing after it, approved a JSON boolean. Parsers
// disagree on duplicate keys, so an answer with {"approved":false,
// "approved":true} means nothing and is rejected.
func parseAnswer(raw []byte) (answer, error) {
	var a answer
	if err := frame.Check(raw, frame.Rules{MaxDepth: 32}); err != nil {
		return a, fmt.Errorf("%w: not a JSON object read alike by every parser: %v", ErrBadResponse, err)
	}
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&fields); err != nil {
		return a, fmt.Errorf("%w: not a JSON object: %v", ErrBadResponse, err)
	}
	if fields == nil {
		return a, fmt.Errorf("%w: not a JSON object", ErrBadResponse)
	}
	if _, err := dec.Token(); err != io.EOF {
		return a, fmt.Errorf("%w: data after the JSON object", ErrBadResponse)
	}
	v, ok := fields["approved"]
	if !ok {
		return a, fmt.Errorf("%w: no \"approved\" field", ErrBadResponse)
	}
	// Approved is set last, once nothing else can fail: an error must never
	// travel with an answer that says yes.
	approved := false
	switch string(v) {
	case "true":
		approved = true
	case "false":
	default:
		return a, fmt.Errorf("%w: \"approved\" is %s, not the JSON boolean true or false", ErrBadResponse, wire.Clip(string(v)))
	}
	if v, ok := fields["id"]; ok {
		if err := json.Unmarshal(v, &a.ID); err != nil {
			return a, fmt.Errorf("%w: \"id\" is not a string", ErrBadResponse)
		}
	}
	if v, ok := fields["grant"]; ok {
		if err := json.Unmarshal(v, &a.Grant); err != nil {
			return a, fmt.Errorf("%w: \"grant\" is not a string", ErrBadResponse)
		}
	}
	if v, ok := fields["attestation"]; ok {
		a.Attestation = v
	}
	if v, ok := fields["passkeys"]; ok {
		if err := json.Unmarshal(v, &a.Passkeys); err != nil {
			return a, fmt.Errorf("%w: \"passkeys\" is not a list of proofs", ErrBadResponse)
		}
	}
	if v, ok := fields["reason"]; ok {
		_ = json.Unmarshal(v, &a.Reason) // informational only
	}
	var names []string
	if v, ok := fields["approver"]; ok {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return a, fmt.Errorf("%w: \"approver\" is not a string", ErrBadResponse)
		}
		names = append(names, s)
	}
	if v, ok := fields["approvers"]; ok {
		var s []string
		if err := json.Unmarshal(v, &s); err != nil {
			return a, fmt.Errorf("%w: \"approvers\" is not a list of strings", ErrBadResponse)
		}
		names = append(names, s...)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if n == "" || len(n) > 256 {
			return a, fmt.Errorf("%w: approver name empty or too long", ErrBadResponse)
		}
		// Distinct under the identity key, so "alice", "ALICE" and
		// "user:alice" count once toward N-of-M. A name without a key is
		// kept as sent: an approval naming it is refused in Approve.
		k, err := identity.Key(n)
		if err != nil {
			k = "\x00" + n
		}
		if !seen[k] {
			seen[k] = true
			a.Approvers = append(a.Approvers, n)
		}
	}
	a.Approved = approved
	return a, nil
}
