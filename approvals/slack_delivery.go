package approvals

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// The delivery loop: one message per request, kept in step with it.
//
// It wakes on every change of the service's records (and on retries due),
// and for each request whose state differs from what its message shows it
// either posts the message (a pending request not yet posted: claimed in
// the store first, so one replica posts it) or updates it (claimed the same
// way, from the state it showed to the new one). A post or update Slack
// does not take is tried again with backoff, honouring a 429's
// Retry-After; the request stays pending on the web meanwhile, and its card
// says Slack was not reached. Delivery never decides anything.

// slackState is what a request's message must show: its status, the votes
// so far (who and by which path) and why it was withdrawn.
func slackState(r *record) string {
	var b strings.Builder
	b.WriteString(r.Status)
	for _, v := range r.Approvals {
		b.WriteString("|+" + v.By + "/" + v.Via)
	}
	if r.DeniedBy != nil {
		b.WriteString("|-" + r.DeniedBy.By + "/" + r.DeniedBy.Via)
	}
	if r.Withdrawn != "" {
		b.WriteString("|w" + r.Withdrawn)
	}
	return b.String()
}

// slackNewer reports whether state is later than shown: a decided message
// is final, and a pending one moves only to more votes or to an outcome.
func slackNewer(shown, state string) bool {
	pending := channel.StatusPending
	switch {
	case !strings.HasPrefix(shown, pending+"|") && shown != pending:
		return false
	case !strings.HasPrefix(state, pending+"|") && state != pending:
		return true
	}
	return len(state) > len(shown) && strings.HasPrefix(state, shown)
}

func (b *slackBridge) run() {
	defer b.s.wg.Done()
	// A post under way when the service closes is cut short.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-b.s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		b.s.mu.Lock()
		changed := b.s.changed
		b.s.mu.Unlock()
		wait := b.reconcile(ctx)
		t := time.NewTimer(wait)
		select {
		case <-b.s.done:
			t.Stop()
			return
		case <-changed:
		case <-b.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// reconcile brings every message in step once and returns how long until a
// retry is due (at most a few seconds, so that a claim another replica
// dropped is picked up).
func (b *slackBridge) reconcile(ctx context.Context) time.Duration {
	b.s.mu.Lock()
	recs := make([]record, 0, len(b.s.entries))
	for _, e := range b.s.entries {
		recs = append(recs, *e.rec)
	}
	b.s.mu.Unlock()
	wait := 5 * time.Second
	live := make(map[string]bool, len(recs))
	for i := range recs {
		r := &recs[i]
		live[r.Req.ID] = true
		if ctx.Err() != nil {
			return wait
		}
		if d, ok := b.step(ctx, r); ok && d < wait {
			wait = max(d, 10*time.Millisecond)
		}
	}
	b.mu.Lock()
	var gone []string
	for id := range b.seen {
		if !live[id] {
			gone = append(gone, id)
		}
	}
	b.mu.Unlock()
	for _, id := range gone { // pruned from the service's store
		if b.ss.slackForget(id) == nil {
			b.mu.Lock()
			delete(b.seen, id)
			b.mu.Unlock()
		}
	}
	return wait
}

// step brings one request's message in step; it returns when to look again
// if something is left to do.
func (b *slackBridge) step(ctx context.Context, r *record) (time.Duration, bool) {
	id, state := r.Req.ID, slackState(r)
	b.mu.Lock()
	done := b.seen[id] == state
	b.mu.Unlock()
	if done {
		return 0, false
	}
	m, _, err := b.ss.slackGet(id)
	if err != nil {
		return time.Second, true
	}
	now := time.Now()
	if m.TS == "" {
		if r.Status != channel.StatusPending {
			// Decided before any message went out: nobody needs buttons.
			b.markSeen(id, state)
			return 0, false
		}
		if now.Before(m.NextTry) {
			return m.NextTry.Sub(now), true
		}
		claimed, err := b.ss.slackClaimPost(id, now, slackPostLease)
		if err != nil || !claimed {
			return time.Second, true // another replica is posting, or a retry waits
		}
		return b.post(ctx, r, state, m.Tries)
	}
	if m.Shown == state || !slackNewer(m.Shown, state) {
		// Current, or this replica is behind the one that wrote it: a
		// message never goes back to buttons or to fewer votes.
		b.markSeen(id, state)
		return 0, false
	}
	if now.Before(m.NextTry) {
		return m.NextTry.Sub(now), true
	}
	claimed, err := b.ss.slackClaimShown(id, m.Shown, state)
	if err != nil || !claimed {
		return time.Second, true
	}
	return b.update(ctx, r, m, state)
}

func (b *slackBridge) markSeen(id, state string) {
	b.mu.Lock()
	b.seen[id] = state
	b.mu.Unlock()
}

func (b *slackBridge) post(ctx context.Context, r *record, state string, tries int) (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	ch, ts, err := b.api.PostMessageContext(ctx, b.opts.Channel, b.message(r)...)
	if err == nil && ts == "" {
		err = errors.New("chat.postMessage answered without a message ts")
	}
	if err != nil {
		return b.failed(r.Req.ID, "posting", tries, err, "")
	}
	if err := b.ss.slackPosted(r.Req.ID, ch, ts, state); err != nil {
		// Posted, but not recorded: the claim lapses and the message may
		// be posted twice; never the other way round (one that was not).
		b.s.log().Warn("slack: a message was posted but the store did not record it", "request", r.Req.ID, "error", err)
		return time.Second, true
	}
	b.markSeen(r.Req.ID, state)
	return 0, false
}

func (b *slackBridge) update(ctx context.Context, r *record, m slackMsg, state string) (time.Duration, bool) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, _, _, err := b.api.UpdateMessageContext(ctx, m.Channel, m.TS, b.message(r)...)
	if err != nil {
		return b.failed(r.Req.ID, "updating", m.Tries, err, m.Shown)
	}
	if err := b.ss.slackPosted(r.Req.ID, m.Channel, m.TS, state); err != nil {
		return time.Second, true
	}
	b.markSeen(r.Req.ID, state)
	return 0, false
}

// failed records a post or update Slack did not take and when to try
// again: RetryBase doubled per failure in a row, at most 5 minutes, and
// never sooner than a 429's Retry-After.
func (b *slackBridge) failed(id, doing string, tries int, err error, shown string) (time.Duration, bool) {
	tries++
	wait := b.opts.RetryBase
	for i := 1; i < tries && wait < slackMaxRetry; i++ {
		wait *= 2
	}
	wait = min(wait, slackMaxRetry)
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) && rl.RetryAfter > wait {
		wait = rl.RetryAfter
	}
	msg := slackErrorWords(err)
	if serr := b.ss.slackFailed(id, tries, time.Now().Add(wait), msg, shown); serr != nil {
		return time.Second, true
	}
	b.s.log().Warn("slack: "+doing+" a message failed; trying again", "request", id, "tries", tries, "retry_in", wait, "error", msg)
	b.s.mu.Lock()
	b.s.notifyLocked() // the card says so
	b.s.mu.Unlock()
	return wait, true
}

// slackErrorWords says why Slack was not reached, short and printable. The
// token travels in request bodies, never in URLs, so no error names it.
func slackErrorWords(err error) string {
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	var se slack.SlackErrorResponse
	switch {
	case errors.As(err, &rl):
		return fmt.Sprintf("rate limited by Slack (429, retry after %s)", rl.RetryAfter)
	case errors.As(err, &sc):
		return fmt.Sprintf("Slack answered HTTP %d", sc.Code)
	case errors.As(err, &se):
		return "Slack refused: " + se.Err
	}
	var ctxErr interface{ Timeout() bool }
	if errors.As(err, &ctxErr) && ctxErr.Timeout() {
		return "Slack did not answer in time"
	}
	return prompt.Visible(wire.Clip(err.Error()))
}

// slackNote is what the request's card on the web says about Slack: ""
// when the message is posted and current.
func (b *slackBridge) slackNote(id string) string {
	m, ok, err := b.ss.slackGet(id)
	switch {
	case err != nil:
		return "Slack: the delivery state could not be read"
	case !ok || m.Tries == 0:
		return ""
	case m.TS == "":
		return fmt.Sprintf("Slack was not reached (%d tries, trying again): %s. Decide here.", m.Tries, m.LastError)
	default:
		return fmt.Sprintf("The Slack message could not be updated (%d tries, trying again): %s.", m.Tries, m.LastError)
	}
}
