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
func (s *Service) answerPending(w http.ResponseWriter, id, token string) bool {
	ctx, cancel := storeCtx()
	defer cancel()
	decided := false
	// Before the answer goes out: the caller may re-attach at once.
	_, err := s.st.update(ctx, id, func(cur record, _ time.Time) (*record, error) {
		if cur.Status != channel.StatusPending {
			decided = true
			return nil, nil
		}
		if cur.PollBy != token {
			return nil, nil
		}
		next := cur
		next.PollBy, next.PollUntil = "", time.Time{}
		return &next, nil
	})
	if decided {
		return false
	}
	if err != nil {
		// The hold runs out by its lease; the answer is the same.
		s.log().Warn("releasing a long poll failed; its lease runs out by itself", "id", id, "error", err)
	}
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
	ctx, cancel := storeCtx()
	defer cancel()
	fresh, err := s.st.sawSignature(ctx, sig, now.Add(2*s.opts.Tolerance))
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	if !fresh {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "replayed signature"})
		return
	}
	var wasPending bool
	rec, err := s.st.update(ctx, m.ID, func(cur record, now time.Time) (*record, error) {
		if cur.Req.Audience != m.Audience || cur.Req.ArgsDigest != m.ArgsDigest {
			return nil, fail(http.StatusConflict, "the withdrawal does not match request %s", m.ID)
		}
		next := cur
		switch {
		case cur.Status == channel.StatusPending && !now.Before(cur.Deadline):
			next.Status, next.DecidedAt = channel.StatusExpired, now
			wasPending = true
		case cur.Status == channel.StatusWithdrawn:
			return nil, nil
		case cur.Status == channel.StatusPending:
			next.Status, next.DecidedAt, next.Withdrawn = channel.StatusWithdrawn, now, m.Reason
			wasPending = true
		case cur.Delivered && cur.Status == channel.StatusApproved && cur.Withdrawn == "":
			// The gate had the approval and did not run the call (it
			// was shutting down, or its caller left): the history must
			// not claim it ran. The status stays approved.
			next.Withdrawn = m.Reason
		case cur.Delivered:
			return nil, fail(http.StatusConflict, "decision already delivered")
		default: // decided, not delivered: it never will be
			next.Delivered, next.Withdrawn = true, m.Reason
		}
		return &next, nil
	})
	if err != nil {
		herr := httpErrOf(err)
		if herr.code == http.StatusNotFound {
			herr.msg = "no such request"
		}
		body := map[string]any{"error": herr.msg}
		if herr.msg == "decision already delivered" {
			body["status"] = rec.Status
		}
		writeJSON(w, herr.code, body)
		return
	}
	s.touch(m.ID)
	if wasPending {
		s.decided(&rec)
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": m.ID, "status": rec.Status})
}

// WithdrawnNote says in words why the gate took a request back, or "".
func (it item) WithdrawnNote() string { return withdrawReasons[it.Withdrawn] }

// WithdrawnServiceStopped is the withdraw reason the service itself gives
// a request whose gate was waiting on it when the service was told to
// stop: the waiting call is answered "withdrawn" (not approved) and its
// gate refuses it, so no later approval could run it.
const WithdrawnServiceStopped = "service_stopped"

// WithdrawWaiting withdraws every pending request a gate is waiting on
// at this process right now (a webhook call attached to it), with reason,
// and answers those calls; it returns how many. Requests nobody waits on
// here stay pending (with a file or PostgreSQL store, a gate holding an
// approval_pending handle may re-attach after a restart). approvals serve
// calls it when it stops with a store no other replica shares; with a
// shared one it calls Drain instead.
func (s *Service) WithdrawWaiting(reason string) int {
	s.mu.Lock()
	held := make(map[string]string, len(s.attached))
	for id, token := range s.attached {
		held[id] = token
	}
	s.mu.Unlock()
	n := 0
	for id, token := range held {
		ctx, cancel := storeCtx()
		rec, err := s.st.update(ctx, id, func(cur record, now time.Time) (*record, error) {
			if cur.Status != channel.StatusPending || cur.PollBy != token {
				return nil, errNotFound
			}
			next := cur
			next.Status, next.DecidedAt, next.Withdrawn = channel.StatusWithdrawn, now, reason
			return &next, nil
		})
		cancel()
		if err != nil {
			continue // the waiting call is answered 503 when the service closes
		}
		s.touch(id)
		s.decided(&rec)
		n++
	}
	return n
}
