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
// What a request's message is (channel, ts), what it shows and how its
// delivery fares live in the request's record (slackRef), written only by
// the store's update, with the request locked: replicas sharing the store
// share them, and nothing of them is kept in a process.
//
// The replica that changes a request (takes it, decides it, expires it,
// sees it withdrawn) looks at its message at once: a pending request not
// yet posted is posted, a message showing an earlier state is updated.
// Each post or update is claimed first (slackRef.Claim, with a lease), so
// of replicas looking at once one does it; the claim is taken only when
// the record's state is later than what the message shows, so a message
// never goes back, and its words are rendered from the record as it was
// when claimed. The other replicas hear of the change (NOTIFY) and look a
// little later (slackTakeOver), taking over only what was left undone (a
// replica that died mid-way, or whose claim lapsed); a sweep every
// slackSweepEvery catches anything missed. A post or update Slack does not
// take is tried again with backoff, honouring a 429's Retry-After; the
// request stays pending on the web meanwhile, and its card says Slack was
// not reached. Delivery never decides anything.

// slackRef is a request's Slack message as its record keeps it.
type slackRef struct {
	Channel string `json:"channel,omitempty"` // where the message is; "" until posted
	TS      string `json:"ts,omitempty"`      // its timestamp (Slack's message id); "" until posted
	// Shown is the state the message shows (slackState of the record it
	// was last written from).
	Shown string `json:"shown,omitempty"`
	// Claim is the token of the replica posting or updating the message
	// now, until ClaimUntil (the store's clock); "" when nobody is.
	Claim      string    `json:"claim,omitempty"`
	ClaimUntil time.Time `json:"claim_until,omitzero"`
	// Tries counts failed posts or updates in a row; NextTry is when the
	// next may start (the store's clock); LastError says why the last one
	// failed.
	Tries     int       `json:"tries,omitempty"`
	NextTry   time.Time `json:"next_try,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

const (
	// slackClaimLease bounds a claim: a replica that died while posting
	// or updating leaves a claim that runs out. Longer than a call to
	// Slack may take (slackCallTimeout), so a live claim's call has ended
	// before another replica can claim the message.
	slackClaimLease  = 30 * time.Second
	slackCallTimeout = 15 * time.Second
	// slackTakeOver is how long a replica that heard of another's change
	// leaves the message to that replica.
	slackTakeOver = 2 * time.Second
	// slackSweepEvery is how often every request's message is checked.
	slackSweepEvery = 15 * time.Second
)

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

// slackWork says what r's message needs at now: "post", "update" or ""
// (nothing, or another replica's claim or a retry's wait holds it; wait
// is then how long).
func slackWork(r *record, now time.Time) (work string, wait time.Duration) {
	var ref slackRef
	if r.Slack != nil {
		ref = *r.Slack
	}
	state := slackState(r)
	switch {
	case ref.TS == "" && r.Status != channel.StatusPending:
		return "", 0 // decided before any message went out: nobody needs buttons
	case ref.TS != "" && (ref.Shown == state || !slackNewer(ref.Shown, state)):
		return "", 0 // current, or the message is ahead of a stale read
	case ref.Claim != "" && now.Before(ref.ClaimUntil):
		return "", ref.ClaimUntil.Sub(now)
	case now.Before(ref.NextTry):
		return "", ref.NextTry.Sub(now)
	case ref.TS == "":
		return "post", 0
	}
	return "update", 0
}

// notice schedules a look at request id's message after delay ("": at
// every request's).
func (b *slackBridge) notice(id string, delay time.Duration) {
	at := time.Now().Add(delay)
	b.mu.Lock()
	if id == "" {
		if at.Before(b.sweepAt) {
			b.sweepAt = at
		}
	} else if cur, ok := b.due[id]; !ok || at.Before(cur) {
		b.due[id] = at
	}
	b.mu.Unlock()
	b.poke()
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
		t := time.NewTimer(b.work(ctx))
		select {
		case <-b.s.done:
			t.Stop()
			return
		case <-b.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// work looks at the messages that are due and returns how long until the
// next is.
func (b *slackBridge) work(ctx context.Context) time.Duration {
	now := time.Now()
	b.mu.Lock()
	sweep := !now.Before(b.sweepAt)
	if sweep {
		b.sweepAt = now.Add(slackSweepEvery)
	}
	var ready []string
	for id, at := range b.due {
		if !now.Before(at) {
			ready = append(ready, id)
			delete(b.due, id)
		}
	}
	b.mu.Unlock()
	if sweep {
		ready = append(ready, b.sweep()...)
	}
	seen := map[string]bool{}
	for _, id := range ready {
		if seen[id] || ctx.Err() != nil {
			continue
		}
		seen[id] = true
		if wait, again := b.step(ctx, id); again {
			b.notice(id, wait)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	next := b.sweepAt
	for _, at := range b.due {
		if at.Before(next) {
			next = at
		}
	}
	return max(time.Until(next), 10*time.Millisecond)
}

// sweep lists the requests whose messages need something now: every
// pending one and the latest decided ones.
func (b *slackBridge) sweep() []string {
	ctx, cancel := storeCtx()
	defer cancel()
	pending, _, err := b.s.st.pending(ctx, 0, -1)
	if err != nil {
		return nil
	}
	history, err := b.s.st.history(ctx, historyRows)
	if err != nil {
		return nil
	}
	var out []string
	now := time.Now()
	for _, r := range append(pending, history...) {
		if w, _ := slackWork(&r, now); w != "" {
			out = append(out, r.Req.ID)
		}
	}
	return out
}

// step brings one request's message in step: it claims the post or the
// update in the store, makes it, and records how it went. It returns when
// to look again if something is left to do. The store's callbacks only
// compute (they may run twice); Slack is called between them.
func (b *slackBridge) step(ctx context.Context, id string) (time.Duration, bool) {
	sctx, cancel := storeCtx()
	cur, err := b.s.st.get(sctx, id)
	cancel()
	switch {
	case errors.Is(err, errNotFound):
		return 0, false // pruned
	case err != nil:
		return time.Second, true
	}
	if w, wait := slackWork(&cur, time.Now()); w == "" {
		// Nothing, or a claim or a retry holds it: look again when that
		// ends (the holder's write wakes everyone sooner).
		return wait, wait > 0
	}
	token := randomToken()
	var work string
	var wait time.Duration
	sctx, cancel = storeCtx()
	rec, err := b.s.st.update(sctx, id, slackClaim(token, &work, &wait))
	cancel()
	switch {
	case errors.Is(err, errNotFound):
		return 0, false
	case err != nil:
		return time.Second, true
	case work == "":
		return wait, wait > 0
	}
	cctx, ccancel := context.WithTimeout(ctx, slackCallTimeout)
	var chID, ts string
	if work == "post" {
		chID, ts, err = b.api.PostMessageContext(cctx, b.opts.Channel, b.message(&rec)...)
		if err == nil && ts == "" {
			err = errors.New("chat.postMessage answered without a message ts")
		}
	} else {
		_, _, _, err = b.api.UpdateMessageContext(cctx, rec.Slack.Channel, rec.Slack.TS, b.message(&rec)...)
	}
	ccancel()
	return b.record(id, token, work, slackState(&rec), chID, ts, err)
}

// slackClaim is the store step that claims a request's message for token
// when it needs a post or an update and no claim or retry holds it; work
// says which ("" when not claimed, and wait how long the hold lasts).
func slackClaim(token string, work *string, wait *time.Duration) func(record, time.Time) (*record, error) {
	return func(cur record, now time.Time) (*record, error) {
		if *work, *wait = slackWork(&cur, now); *work == "" {
			return nil, nil
		}
		ref := slackRef{}
		if cur.Slack != nil {
			ref = *cur.Slack
		}
		ref.Claim, ref.ClaimUntil = token, now.Add(slackClaimLease)
		next := cur
		next.Slack = &ref
		return &next, nil
	}
}

// record writes how a claimed post or update went, if the claim is still
// this replica's, and tells every waiter (the page's card shows a failure;
// another replica held off by the claim looks again).
func (b *slackBridge) record(id, token, work, state, chID, ts string, callErr error) (time.Duration, bool) {
	var retry time.Duration
	lost := false
	ctx, cancel := storeCtx()
	_, err := b.s.st.update(ctx, id, func(cur record, now time.Time) (*record, error) {
		retry, lost = 0, false
		if cur.Slack == nil || cur.Slack.Claim != token {
			lost = true
			return nil, nil
		}
		ref := *cur.Slack
		ref.Claim, ref.ClaimUntil = "", time.Time{}
		if callErr == nil {
			if work == "post" {
				ref.Channel, ref.TS = chID, ts
			}
			ref.Shown, ref.Tries, ref.NextTry, ref.LastError = state, 0, time.Time{}, ""
		} else {
			ref.Tries++
			retry = b.backoff(ref.Tries, callErr)
			ref.NextTry, ref.LastError = now.Add(retry), slackErrorWords(callErr)
		}
		next := cur
		next.Slack = &ref
		return &next, nil
	})
	cancel()
	switch {
	case err != nil && callErr == nil && work == "post":
		// Posted, but not recorded: the claim lapses and the message may
		// be posted twice; never the other way round (one that was not).
		b.s.log().Warn("slack: a message was posted but the store did not record it", "request", id, "error", err)
		return slackClaimLease, true
	case err != nil:
		return time.Second, true
	case lost && callErr == nil:
		b.s.log().Warn("slack: a claim ran out while Slack was called; the message may have been written twice", "request", id)
	case callErr != nil:
		b.s.log().Warn("slack: "+strings.TrimSuffix(work, "e")+"ing a message failed; trying again", "request", id, "retry_in", retry, "error", slackErrorWords(callErr))
	}
	b.s.touch(id)
	return 0, false
}

// backoff is the wait before the next try after the tries-th failure in
// a row: RetryBase doubled per failure, at most 5 minutes, and never
// sooner than a 429's Retry-After.
func (b *slackBridge) backoff(tries int, err error) time.Duration {
	wait := b.opts.RetryBase
	for i := 1; i < tries && wait < slackMaxRetry; i++ {
		wait *= 2
	}
	wait = min(wait, slackMaxRetry)
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) && rl.RetryAfter > wait {
		wait = rl.RetryAfter
	}
	return wait
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

// slackNote is what a pending request's card on the web says about
// Slack: "" without Slack, or when its message is posted and current.
func slackNote(r *record) string {
	m := r.Slack
	switch {
	case r.Status != channel.StatusPending || m == nil || m.Tries == 0:
		return ""
	case m.TS == "":
		return fmt.Sprintf("Slack was not reached (%d tries, trying again): %s. Decide here.", m.Tries, m.LastError)
	default:
		return fmt.Sprintf("The Slack message could not be updated (%d tries, trying again): %s.", m.Tries, m.LastError)
	}
}
