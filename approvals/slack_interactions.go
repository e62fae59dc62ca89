package approvals

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// slackMaxBody bounds an interaction payload (it carries the message).
const slackMaxBody = 1 << 20

// slackWindow is how far a click's timestamp may be from now
// (slack.NewSecretsVerifier's fixed five minutes); a signature is
// remembered twice as long, so a replay inside the window is refused.
const slackWindow = 5 * time.Minute

// handleInteraction takes a click from Slack. Verify before parsing:
// Slack's v0 signature over the timestamp and the raw body, the timestamp
// within five minutes, and the signature never seen before (the service's
// store remembers it, as it remembers webhook signatures). Anything else
// is 401 and nothing is recorded. A verified click is decided by the
// service's one decision function, as the clicker's approver name.
func (b *slackBridge) handleInteraction(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, slackMaxBody))
	if err != nil {
		b.refuse(w, r, http.StatusBadRequest, "reading the body: "+err.Error())
		return
	}
	sv, err := slack.NewSecretsVerifier(r.Header, b.opts.SigningSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		b.refuse(w, r, http.StatusUnauthorized, "Slack signature: "+err.Error())
		return
	}
	ts := r.Header.Get("X-Slack-Request-Timestamp")
	if sec, _ := strconv.ParseInt(ts, 10, 64); sec < b.s.replayFloor {
		// The memory store's replay cache started empty with this process.
		b.refuse(w, r, http.StatusUnauthorized, "Slack signature older than this service (memory store): cannot tell it from a replay")
		return
	}
	sctx, cancel := storeCtx()
	fresh, err := b.s.st.sawSignature(sctx, "slack:"+ts+":"+r.Header.Get("X-Slack-Signature"), time.Now().Add(2*slackWindow))
	cancel()
	switch {
	case err != nil:
		b.refuse(w, r, http.StatusServiceUnavailable, "store unavailable")
		return
	case !fresh:
		b.refuse(w, r, http.StatusUnauthorized, "replayed Slack signature (t="+ts+")")
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || len(form["payload"]) != 1 {
		b.refuse(w, r, http.StatusBadRequest, "want one form field payload")
		return
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		b.refuse(w, r, http.StatusBadRequest, "payload is not an interaction")
		return
	}
	// Slack wants its answer within 3 seconds; the click is decided before
	// it, and what the clicker is told goes out after.
	w.WriteHeader(http.StatusOK)
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) != 1 {
		return
	}
	act := cb.ActionCallback.BlockActions[0]
	var approve bool
	switch act.ActionID {
	case slackActApprove:
		approve = true
	case slackActDeny:
	default:
		return // a link button (passkey, open): Slack reports it, nothing to decide
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	say := b.click(ctx, cb.User.ID, act.Value, approve)
	b.tell(cb.Channel.ID, cb.User.ID, say)
}

// click decides one verified click and returns what to tell the clicker.
func (b *slackBridge) click(ctx context.Context, user, id string, approve bool) string {
	name, err := b.approverFor(ctx, user)
	switch {
	case errors.Is(err, errNotApprover):
		b.s.log().Warn("slack: a click from someone who is not an approver", "slack_user", prompt.Visible(wire.Clip(user)), "request", prompt.Visible(wire.Clip(id)))
		return "You are not an approver for this tool; nothing was recorded."
	case err != nil:
		b.s.log().Warn("slack: could not check an approver", "slack_user", prompt.Visible(wire.Clip(user)), "error", slackErrorWords(err))
		return "Your approver group could not be checked just now; nothing was recorded. Try again, or decide on the service."
	}
	if _, mapped := b.users[user]; approve && !mapped {
		switch err := b.notRequester(ctx, user, id); {
		case errors.Is(err, errRequester):
			b.s.log().Warn("slack: the requester tried to approve their own request as a group member", "slack_user", prompt.Visible(wire.Clip(user)), "request", prompt.Visible(wire.Clip(id)))
			return "You asked for this call and cannot approve it; another approver must. Nothing was recorded."
		case errors.Is(err, errUnmatchable):
			b.s.log().Warn("slack: a group member's approval refused: the requester is not matched to a Slack account", "slack_user", prompt.Visible(wire.Clip(user)), "request", prompt.Visible(wire.Clip(id)),
				"fix", "give the requester's approvers-file line slack=THEIR_ID, or use email principals with the users:read.email scope")
			return "Nothing was recorded: the requester is not matched to a Slack account, so an approval by the approvers' user group cannot be told apart from the requester's own. An approver listed by Slack id can approve, or decide on the service."
		case err != nil:
			b.s.log().Warn("slack: could not check a group member against the requester", "slack_user", prompt.Visible(wire.Clip(user)), "error", slackErrorWords(err))
			return "Whether you asked for this call could not be checked just now; nothing was recorded. Try again, or decide on the service."
		}
	}
	rec, herr := b.s.decideVote(id, vote{By: name, Via: "slack"}, approve, "")
	if herr != nil {
		if herr.code == http.StatusConflict && rec.Status != channel.StatusPending && rec.Req.ID != "" {
			b.notice(id, 0) // a message still showing buttons is brought up to date
			return "Nothing changed: " + slackOutcome(&rec)
		}
		return "Nothing changed: " + herr.msg
	}
	switch {
	case rec.Status == channel.StatusApproved:
		return fmt.Sprintf("You approved %s as %s; it is approved.", prompt.Visible(rec.Req.Tool), name)
	case rec.Status == channel.StatusDenied:
		return fmt.Sprintf("You denied %s as %s.", prompt.Visible(rec.Req.Tool), name)
	default:
		return fmt.Sprintf("You approved %s as %s; %d of %d approvals so far, waiting for %s.", prompt.Visible(rec.Req.Tool), name,
			len(rec.Approvals), rec.Required, plural(rec.Required-len(rec.Approvals), "another approver", "more approvers"))
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return strconv.Itoa(n) + " " + many
}

// tell sends the clicker an ephemeral message (only they see it) in the
// background; a failure is logged, the decision stands as recorded.
func (b *slackBridge) tell(channelID, user, text string) {
	if !slackChannelRE.MatchString(channelID) || !slackUserRE.MatchString(user) {
		return
	}
	b.s.wg.Add(1)
	go func() {
		defer b.s.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The words may quote agent text (a tool name): plain_text, and an
		// escaped notification text.
		if _, err := b.api.PostEphemeralContext(ctx, channelID, user, slack.MsgOptionText(slackMrkdwnEscape(text), false),
			slack.MsgOptionBlocks(slack.NewSectionBlock(slackPlain(text), nil, nil))); err != nil {
			b.s.log().Warn("slack: telling a clicker what happened failed", "error", slackErrorWords(err))
		}
	}()
}

// refuse answers a click that is not taken and logs why.
func (b *slackBridge) refuse(w http.ResponseWriter, r *http.Request, code int, why string) {
	args := []any{"status", code, "reason", why, "remote", r.RemoteAddr}
	if code == http.StatusUnauthorized && !strings.HasPrefix(why, "replayed") {
		args = append(args, "fix", "the Slack app's signing secret is not --slack-signing-secret-file's, or a clock is off")
	}
	b.s.log().Warn("refused a Slack interaction", args...)
	http.Error(w, why, code)
}
