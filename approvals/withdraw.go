package approvals

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/internal/wire"
)

// maxPreferWait bounds the wait a caller may ask for; longer asks wait for
// the request's own deadline instead.
const maxPreferWait = 24 * time.Hour

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
	if e.rec.Status != channel.StatusPending {
		s.mu.Unlock()
		return false
	}
	// Before the answer goes out: the caller may re-attach at once.
	e.polling = false
	id := e.rec.Req.ID
	s.mu.Unlock()
	writeJSON(w, http.StatusAccepted, map[string]any{"id": id, "approved": false, "reason": channel.StatusPending})
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
	approver.WithdrawCallerGone: "caller gone",
	approver.WithdrawTimedOut:   "the gate stopped waiting",
	// The gated server was told to stop while the request was pending:
	// nothing will run on it, whatever is decided.
	approver.WithdrawShuttingDown: "the gated server shut down",
	WithdrawnServiceStopped:       "the approval service stopped while the gate waited",
}

func decodeWithdrawal(body []byte) (channel.WireWithdrawal, error) {
	var m channel.WireWithdrawal
	if err := frame.Decode(body, &m); err != nil {
		return m, fmt.Errorf("withdrawal body: %v", err)
	}
	switch {
	case m.Version != 1:
		return m, fmt.Errorf("withdrawal version %d not supported (want 1)", m.Version)
	case m.Type != "withdraw":
		return m, fmt.Errorf("type %q is not \"withdraw\"", wire.Clip(m.Type))
	case !idRE.MatchString(m.ID):
		return m, errors.New("request id must be 1-128 characters of A-Z a-z 0-9 . _ : -")
	case withdrawReasons[m.Reason] == "":
		return m, fmt.Errorf("withdrawal reason %q is not caller_gone, timed_out or shutting_down", wire.Clip(m.Reason))
	}
	return m, nil
}

// handleWithdraw takes a request back. A pending request becomes
// withdrawn, so no approver can approve it any more; a decided one that
// was not delivered yet never will be. Either way the UI and the API show
// why.
func (s *Service) handleWithdraw(w http.ResponseWriter, sig string, body []byte) {
	if len(body) > channel.MaxRequestBytes {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": "withdrawal too large"})
		return
	}
	now := time.Now()
	if err := channel.VerifySignature(sig, body, s.opts.Secret, now, s.opts.Tolerance); err != nil {
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
	case next.Status == channel.StatusWithdrawn:
		writeJSON(w, http.StatusOK, map[string]any{"id": m.ID, "status": next.Status})
		return
	case next.Status == channel.StatusPending:
		next.Status, next.DecidedAt, next.Withdrawn = channel.StatusWithdrawn, now, m.Reason
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
	wasPending := e.rec.Status == channel.StatusPending
	*e.rec = next
	if wasPending {
		close(e.decided)
		s.decided(&next)
	}
	s.notifyLocked()
	writeJSON(w, http.StatusOK, map[string]any{"id": m.ID, "status": next.Status})
}

// WithdrawnNote says in words why the gate took a request back, or "".
func (it item) WithdrawnNote() string { return withdrawReasons[it.Withdrawn] }

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
		if e.rec.Status != channel.StatusPending || !e.polling {
			continue
		}
		next := *e.rec
		next.Status, next.DecidedAt, next.Withdrawn = channel.StatusWithdrawn, now, reason
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
