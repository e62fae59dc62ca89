package channel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/frame"
)

// WireWithdrawal is the JSON body a Webhook POSTs, to the same URL and
// signed the same way as a request, when the gate takes a request back:
// its caller cancelled or disconnected, or the gate stopped waiting. The
// "type" member keeps the two bodies apart: a request never has one, and a
// withdrawal must say "withdraw". Audience and args_digest must match the
// request, so a withdrawal names exactly one request.
type WireWithdrawal struct {
	Version    int    `json:"version"`
	Type       string `json:"type"` // always "withdraw"
	ID         string `json:"id"`
	Audience   string `json:"audience"`
	ArgsDigest string `json:"args_digest"`
	Reason     string `json:"reason"` // caller_gone, timed_out or shutting_down
	Nonce      string `json:"nonce"`  // fresh for every POST, like a request's
}

// pendingGrace is how much longer than its Prefer wait a webhook call
// waits for the 202 before it counts the request as pending itself.
const pendingGrace = 10 * time.Second

// maxPreferWait bounds the wait a caller may ask for; longer asks wait for
// the request's own deadline instead.
const maxPreferWait = 24 * time.Hour

// preferWait returns the Prefer header asking the service to answer
// within wait, and whether the wait ends before deadline (otherwise there
// is nothing to ask for: the request ends first).
func preferWait(now time.Time, wait time.Duration, deadline time.Time) (string, bool) {
	if wait <= 0 || !now.Add(wait).Before(deadline) {
		return "", false
	}
	secs := int64((wait + time.Second - 1) / time.Second) // round up: never answer before the wait
	return "wait=" + strconv.FormatInt(secs, 10), true
}

// preferredWait reads "Prefer: wait=N" (RFC 7240) and returns a channel
// that fires after N seconds, or nil (never fires) when there is no such
// preference or the request's deadline comes first.
func preferredWait(r *http.Request, deadline time.Time) <-chan time.Time {
	for _, v := range r.Header.Values("Prefer") {
		for _, pref := range strings.FieldsFunc(v, func(c rune) bool { return c == ',' || c == ';' }) {
			k, n, ok := strings.Cut(strings.TrimSpace(pref), "=")
			if !ok || !strings.EqualFold(k, "wait") {
				continue
			}
			secs, err := strconv.Atoi(strings.Trim(n, `"`))
			if err != nil || secs < 1 || time.Duration(secs)*time.Second > maxPreferWait {
				return nil
			}
			d := time.Duration(secs) * time.Second
			if !time.Now().Add(d).Before(deadline) {
				return nil
			}
			return time.After(d)
		}
	}
	return nil
}

// answerPending tells a waiting webhook caller that nobody has decided
// yet (202), leaving the request open for a re-attach. It reports false
// when the request was decided in the meantime: then the decision goes out.
func (s *Service) answerPending(w http.ResponseWriter, e *entry) bool {
	s.mu.Lock()
	if e.rec.Status != StatusPending {
		s.mu.Unlock()
		return false
	}
	// Before the answer goes out: the caller may re-attach at once.
	e.polling = false
	id := e.rec.Req.ID
	s.mu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "approved": false, "reason": StatusPending})
	return true
}

// isWithdrawal reports whether body claims to be a withdrawal. The claim
// is checked in full by handleWithdraw; a request body never has "type".
func isWithdrawal(body []byte) bool {
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) != nil {
		return false
	}
	_, ok := probe["type"]
	return ok
}

var withdrawReasons = map[string]string{
	mcpsafe.WithdrawCallerGone: "caller gone",
	mcpsafe.WithdrawTimedOut:   "the gate stopped waiting",
	// The gated server was told to stop while the request was pending:
	// nothing will run on it, whatever is decided.
	mcpsafe.WithdrawShuttingDown: "the gated server shut down",
	WithdrawnServiceStopped:      "the approval service stopped while the gate waited",
}

func decodeWithdrawal(body []byte) (WireWithdrawal, error) {
	var m WireWithdrawal
	if err := frame.Decode(body, &m); err != nil {
		return m, fmt.Errorf("withdrawal body: %v", err)
	}
	switch {
	case m.Version != 1:
		return m, fmt.Errorf("withdrawal version %d not supported (want 1)", m.Version)
	case m.Type != "withdraw":
		return m, fmt.Errorf("type %q is not \"withdraw\"", clip(m.Type))
	case !idRE.MatchString(m.ID):
		return m, errors.New("request id must be 1-128 characters of A-Z a-z 0-9 . _ : -")
	case withdrawReasons[m.Reason] == "":
		return m, fmt.Errorf("withdrawal reason %q is not caller_gone, timed_out or shutting_down", clip(m.Reason))
	}
	return m, nil
}

// handleWithdraw takes a request back. A pending request becomes
// withdrawn, so no approver can approve it any more; a decided one that
// was not delivered yet never will be. Either way the UI and the API show
// why.
func (s *Service) handleWithdraw(w http.ResponseWriter, sig string, body []byte) {
	if len(body) > maxRequestBytes {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": "withdrawal too large"})
		return
	}
	now := time.Now()
	if err := VerifySignature(sig, body, s.opts.Secret, now, s.opts.Tolerance); err != nil {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": err.Error()})
		return
	}
	m, err := decodeWithdrawal(body)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": err.Error()})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh, err := s.st.sawSignature(sig, now.Add(2*s.opts.Tolerance))
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	if !fresh {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "replayed signature"})
		return
	}
	s.expireLocked(now)
	e, ok := s.entries[m.ID]
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no such request"})
		return
	}
	if e.rec.Req.Audience != m.Audience || e.rec.Req.ArgsDigest != m.ArgsDigest {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "the withdrawal does not match request " + m.ID})
		return
	}
	next := *e.rec
	switch {
	case next.Status == StatusWithdrawn:
		writeJSON(w, http.StatusOK, map[string]any{"id": m.ID, "status": next.Status})
		return
	case next.Status == StatusPending:
		next.Status, next.DecidedAt, next.Withdrawn = StatusWithdrawn, now, m.Reason
	case next.Delivered:
		writeJSON(w, http.StatusConflict, map[string]any{"error": "decision already delivered", "status": next.Status})
		return
	default: // decided, not delivered: it never will be
		next.Delivered, next.Withdrawn = true, m.Reason
	}
	if err := s.st.save(&next); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	wasPending := e.rec.Status == StatusPending
	*e.rec = next
	if wasPending {
		close(e.decided)
		s.decided(&next)
	}
	s.notifyLocked()
	writeJSON(w, http.StatusOK, map[string]any{"id": m.ID, "status": next.Status})
}

// WithdrawnNote says in words why the gate took a request back, or "".
func (it Item) WithdrawnNote() string { return withdrawReasons[it.Withdrawn] }

// Withdraw tells the service that nobody will pick r's decision up, so
// that it stops offering r to approvers. reason is mcpsafe.WithdrawCallerGone,
// mcpsafe.WithdrawTimedOut or mcpsafe.WithdrawShuttingDown.
func (w *Webhook) Withdraw(ctx context.Context, r mcpsafe.ApprovalRequest, reason string) error {
	if r.ID == "" {
		return fmt.Errorf("%w: request id is required", ErrRequest)
	}
	if w.takeRefused(r.ID) {
		// The service refused the request itself (wrong secret, wrong
		// URL, ...): it never opened, so there is nothing to take back,
		// and that error has been reported already.
		return nil
	}
	resp, err := w.postSigned(ctx, WireWithdrawal{
		Version: 1, Type: "withdraw", ID: r.ID, Audience: r.Audience, ArgsDigest: r.ArgsDigest,
		Reason: reason, Nonce: newNonce(),
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(resp, "withdrawal")
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
	return nil
}

// WithdrawnServiceStopped is the withdraw reason the service itself gives
// a request whose gate was waiting on it when the service was told to
// stop: the waiting call is answered "withdrawn" (not approved) and its
// gate refuses it, so no later approval could run it.
const WithdrawnServiceStopped = "service_stopped"

// WithdrawWaiting withdraws every pending request a gate is waiting on
// right now (a webhook call attached to it), with reason, and answers
// those calls; it returns how many. Requests nobody waits on stay pending
// (with a file store, a gate holding an approval_pending handle may
// re-attach after a restart). approvals serve calls it when it stops.
func (s *Service) WithdrawWaiting(reason string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	n := 0
	for _, e := range s.entries {
		if e.rec.Status != StatusPending || !e.polling {
			continue
		}
		next := *e.rec
		next.Status, next.DecidedAt, next.Withdrawn = StatusWithdrawn, now, reason
		if err := s.st.save(&next); err != nil {
			continue // the waiting call is answered 503 when the service closes
		}
		*e.rec = next
		close(e.decided)
		s.decided(&next)
		n++
	}
	if n > 0 {
		s.notifyLocked()
	}
	return n
}
