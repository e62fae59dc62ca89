package mcpsafe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReasonCallerGone refuses a channel call whose caller cancelled or
// disconnected while a human was still deciding. Nothing ran, and the
// request was withdrawn from the approver when the approver supports it.
const ReasonCallerGone = "caller_gone"

// withdrawTimeout bounds telling the approver that a request is withdrawn,
// and journalGrace bounds the bookkeeping after a caller may have gone
// (journaling a refusal or an outcome, spending a grant): all of them run
// on a context that survives the caller's cancellation.
const (
	withdrawTimeout = 10 * time.Second
	journalGrace    = 5 * time.Second
)

// checkChannelTimes fills in the channel's waiting times and refuses
// combinations where one would silently cut the other short.
func checkChannelTimes(o *Options) error {
	switch {
	case o.TTL < 0 || o.ChannelTimeout < 0 || o.ChannelWait < 0 || o.ProgressInterval < 0:
		return errors.New("mcpsafe: TTL, ChannelTimeout, ChannelWait and ProgressInterval must not be negative")
	case o.ChannelTimeout > o.TTL:
		return fmt.Errorf("mcpsafe: ChannelTimeout %s is longer than TTL %s; a channel request expires with its approval after TTL, so raise TTL or lower ChannelTimeout", o.ChannelTimeout, o.TTL)
	}
	setDefault(&o.ChannelTimeout, o.TTL)
	if o.ChannelWait > o.ChannelTimeout {
		return fmt.Errorf("mcpsafe: ChannelWait %s is longer than ChannelTimeout %s; a call never waits longer than ChannelTimeout", o.ChannelWait, o.ChannelTimeout)
	}
	setDefault(&o.ChannelWait, min(45*time.Second, o.ChannelTimeout))
	setDefault(&o.ProgressInterval, 10*time.Second)
	return nil
}

// An outOfBand is a way of asking a human away from the client: the
// approval channel (Options.Approver) or the approval page (Options.Page).
// Both wait the same way; they differ in the grant mode of their handles,
// the words of their refusals and what their decisions prove.
type outOfBand struct {
	mode       string // grantChannel or grantPage: handles, parking, logs
	words      string // "the approval channel", "the approval page"
	approver   approver.Approver
	awaiter    approver.Awaiter
	withdrawer approver.Withdrawer
	page       approver.Page // the page, nil for the channel
	// link is the address where a person decides a request: the page's,
	// or the approval service's (Options.ApproverLink); nil: none.
	link func(approver.Request) (string, error)
}

func newOutOfBand(mode, words string, a approver.Approver) *outOfBand {
	if a == nil {
		return nil
	}
	return &outOfBand{mode: mode, words: words, approver: a, awaiter: a.Awaiter(), withdrawer: a.Withdrawer()}
}

// via is the out-of-band path of a grant mode, nil when not configured.
func (g *Gate) via(mode string) *outOfBand {
	switch mode {
	case grantChannel:
		return g.channel
	case grantPage:
		return g.page
	}
	return nil
}

// resumable reports whether the channel can answer "pending" and be asked
// again, which is what the asynchronous path needs.
func (g *Gate) resumable() bool { return g.channel != nil && g.channel.awaiter != nil }

// askChannel sends the plan to the out-of-band approver and waits.
func (g *Gate) askChannel(ctx context.Context, k *call) (*mcp.CallToolResult, *Refusal) {
	return g.askVia(ctx, k, g.channel)
}

// askVia sends the plan out of band and waits.
func (g *Gate) askVia(ctx context.Context, k *call, via *outOfBand) (_ *mcp.CallToolResult, r *Refusal) {
	// The span covers the wait for the decision and what follows it.
	ctx, span := g.step(ctx, "mcpsafe.ask")
	defer func() { endStep(span, r) }()
	gr, sealed, r := g.issue(ctx, k, via.mode)
	if r != nil {
		return nil, r
	}
	if res, r, done := g.sendLink(ctx, k, via, gr, sealed); done {
		return res, r
	}
	return g.waitVia(ctx, k, via, gr, sealed)
}

// resumeVia picks up the decision for a call that was answered "pending"
// before. The handle is checked exactly like a grant (sealed, tool,
// principal, policy, expiry, arguments, target) but not spent: only an
// approval spends it, right before the call runs.
func (g *Gate) resumeVia(ctx context.Context, k *call, via *outOfBand, handle string) (*mcp.CallToolResult, *Refusal) {
	if via == nil || via.awaiter == nil {
		return nil, refusal(ReasonPolicyDenied, "%s takes no approval handles on this server", k.t.Name)
	}
	gr, r := g.checkGrant(k, handle, via.mode)
	if r != nil {
		return nil, r
	}
	if gr.Resolved != k.target {
		return nil, refusal(ReasonTargetChanged, "what the call points at changed since it was sent for approval; preview it again")
	}
	return g.waitVia(ctx, k, via, gr, handle)
}

func (g *Gate) channelRequest(k *call, gr *grant) approver.Request {
	view := planView(k.plan)
	return approver.Request{
		ID: gr.Nonce, Tool: k.t.Name, Summary: view.Summary, Details: view.Details,
		Targets: k.plan.Targets, Parts: view.Parts, Arguments: journal.Redact(k.c.Arguments, k.t.SecretFields),
		ArgsDigest: k.c.ArgsDigest, Principal: k.c.Principal,
		Audience: g.opts.Audience, Irreversible: k.t.Irreversible, ExpiresAt: gr.expires().UTC(),
		Grants:       g.channelOffers(k),
		MinAssurance: k.t.minAssur,
	}
}

// requestVia is the request via gets: the channel's, and for the local
// page also the plan's PageOnly, which nothing else is sent.
func (g *Gate) requestVia(k *call, via *outOfBand, gr *grant) approver.Request {
	req := g.channelRequest(k, gr)
	if via.page != nil {
		req.PageOnly = k.plan.PageOnly
	}
	return req
}

// channelOffers are the standing grants offered through the channel; a
// scope that fails to derive offers none rather than failing the request.
func (g *Gate) channelOffers(k *call) []approver.GrantOffer {
	if k.t.minAssur >= AssurancePasskey {
		// A passkey signs one call; a standing grant would let later
		// calls run on it unsigned.
		return nil
	}
	offers, err := g.offers(k, AssuranceChannel)
	if err != nil {
		g.opts.Logger.Warn("grant scopes failed; offering none", "tool", k.t.Name, "err", err)
		return nil
	}
	return offers
}

// waitVia asks the approver about gr and waits for the decision, sending
// progress notifications meanwhile. A caller that sent no progress token
// cannot be kept alive, so with a resumable approver it gets a pending
// result after ChannelWait instead of a timeout in its client.
func (g *Gate) waitVia(ctx context.Context, k *call, via *outOfBand, gr *grant, sealed string) (*mcp.CallToolResult, *Refusal) {
	req := g.requestVia(k, via, gr)
	defer g.linkDone(k, via, gr)
	cctx, cancel := context.WithTimeout(ctx, g.opts.ChannelTimeout)
	defer cancel()
	settled := false // spent, or kept open for a later call
	defer func() {
		if !settled {
			g.spend(ctx, gr.Nonce)
		}
	}()
	waited, ok := g.waitOn(gr.Nonce, k.t.Name, via.mode)
	if !ok {
		if k.token != nil { // a handle: the request is open at the channel
			g.withdraw(ctx, via, req, approver.WithdrawShuttingDown)
		}
		return nil, shuttingDown("the pending approval was withdrawn from " + via.words)
	}
	defer g.onStop(cancel)()
	stop := g.progress(cctx, k)
	var dec approver.Decision
	err := safely(func() error {
		var err error
		switch ra := via.awaiter; {
		case ra != nil && progressToken(k.req) == nil && !k.t.OwnsTokenField:
			// (A tool whose approval_token is its own argument cannot be
			// called back with a handle: it waits the whole time.)
			dec, err = ra.Await(cctx, req, g.opts.ChannelWait)
		case ra != nil:
			dec, err = ra.Await(cctx, req, 0)
		default:
			dec, err = via.approver.Approve(cctx, req)
		}
		return err
	})
	stop()
	waited()
	switch {
	case g.stopping():
		// Whatever the channel answered: nothing starts once shutdown
		// began, and nobody should approve the request any more.
		g.withdraw(ctx, via, req, approver.WithdrawShuttingDown)
		return nil, shuttingDown("the pending approval was withdrawn from " + via.words)
	case ctx.Err() != nil:
		// The caller left: nothing runs for it, whatever the channel
		// answered, and nobody should approve it any more.
		what := "the request could not be withdrawn from " + via.words + "; it expires on its own"
		if g.withdraw(ctx, via, req, approver.WithdrawCallerGone) {
			what = "the request was withdrawn from " + via.words
		}
		return nil, refusal(ReasonCallerGone, "the caller cancelled or disconnected while waiting for an approver; nothing ran and %s", what)
	case errors.Is(err, approver.ErrPending) && via.awaiter != nil:
		if !g.park(gr.Nonce, via.mode, k, &req, gr.expires()) {
			g.withdraw(ctx, via, req, approver.WithdrawShuttingDown)
			return nil, shuttingDown("the pending approval was withdrawn from " + via.words)
		}
		settled = true
		return g.pendingResult(k, gr, sealed, pendingWhere(via, errors.Is(err, approver.ErrNotShown))), nil
	case errors.Is(err, approver.ErrDenied) && via.page != nil:
		return nil, refusal(ReasonPageDenied, "the user denied the call on the approval page; do not retry unless the user asks")
	case errors.Is(err, approver.ErrDenied):
		return nil, refusal(ReasonChannelDenied, "the approver denied the request")
	case err != nil && (errors.Is(err, approver.ErrNoDecision) || errors.Is(err, context.DeadlineExceeded) || errors.Is(cctx.Err(), context.DeadlineExceeded)):
		g.withdraw(ctx, via, req, approver.WithdrawTimedOut)
		return nil, refusal(ReasonTimeout, "no decision from %s in time", via.words)
	case errors.Is(err, approver.ErrPlanTooLarge):
		return nil, refusal(ReasonPlanTooLarge, "the plan and arguments are too large for the approval channel to show whole, and they are never cut; split the call into smaller ones")
	case err != nil && k.token != nil && via.awaiter != nil && errors.Is(err, approver.ErrUnreachable) && g.park(gr.Nonce, via.mode, k, &req, gr.expires()):
		// A call again with the handle, and the channel failed on the
		// way (a replica of the service went away, its store is down):
		// the person may have decided already, so the request stays
		// open there and the handle stays good; nothing is withdrawn or
		// spent. The handle is no approval: nothing runs without the
		// decision, whenever it arrives.
		settled = true
		g.opts.Logger.Warn("out-of-band approval failed; the handle stays valid", "via", via.mode, "tool", k.t.Name, "request", gr.Nonce, "err", err)
		return nil, refusal(ReasonChannelUnavailable, "%s could not be reached just now; nothing ran. The request stays open there: call %s again later with the same arguments and the same %s", via.words, k.t.Name, TokenField)
	case err != nil:
		g.withdraw(ctx, via, req, approver.WithdrawTimedOut)
		// The error may name the approver's URL or carry what it answered:
		// operators read it in the log, the model only learns the outcome.
		g.opts.Logger.Warn("out-of-band approval failed", "via", via.mode, "tool", k.t.Name, "request", gr.Nonce, "err", err)
		return nil, refusal(ReasonChannelUnavailable, "%s could not be reached or gave no valid answer; the server's log has the details", via.words)
	case !dec.Approved && via.page != nil:
		return nil, refusal(ReasonPageDenied, "the approval page did not approve the request; do not retry unless the user asks")
	case !dec.Approved:
		return nil, refusal(ReasonChannelDenied, "the approver did not approve the request")
	}
	assurance, decision := decidedAt(via, dec)
	if k.t.minAssur == AssurancePasskey && assurance < AssurancePasskey {
		return nil, refusal(ReasonAssuranceTooLow, "%s requires each approver's passkey on this exact call, and the approval carried none the gate could verify", k.t.Name)
	}
	if assurance < k.t.minAssur {
		return nil, refusal(ReasonAssuranceTooLow, "%s approved at %s assurance, and %s requires %s", via.words, assurance, k.t.Name, k.t.minAssur)
	}
	k.now = g.opts.Clock() // the decision may have taken a while
	settled = true
	if _, r := g.openFor(ctx, k, sealed, via.mode, k.token != nil); r != nil {
		// A redemption that failed in the ledger is not given back: this
		// gate cannot tell whether it reached the store, nor whether
		// another replica redeemed the grant meanwhile and ran the call
		// (a handle presented to two replicas at once); a grant given
		// back then would run the call again. If the redemption did
		// not reach the store, the handle still works; if it did, the
		// refusal closing the journal's redemption record says so.
		return nil, r
	}
	a := Approval{Decision: decision, By: strings.Join(dec.Approvers, ","), Assurance: assurance, CallID: gr.Nonce, Evidence: dec.Evidence}
	if k.t.minAssur >= AssurancePasskey && dec.Grant != "" && dec.Grant != approver.Once {
		return nil, refusal(ReasonAssuranceTooLow, "%s requires a passkey on each call; the approval chose a standing grant, which no passkey signed", k.t.Name)
	}
	if dec.Grant != "" {
		if r := g.chooseStanding(ctx, k, &dec.Grant, &a, gr.Resolved); r != nil {
			return nil, r
		}
	}
	res, r := g.execute(ctx, k, gr.Resolved, a)
	if r != nil && k.token != nil && (r.Reason == ReasonJournalUnavailable || r.Reason == ReasonShuttingDown) {
		r = g.giveBack(ctx, k, gr, r)
	}
	return res, r
}

// giveBack returns a grant this gate redeemed to the ledger when nothing
// ran after all (the journal could not record the approval, or shutdown
// began before Execute): the person's decision is not lost with this
// process, and the client's handle runs the call on its next try, here or
// on another replica. It cannot make the call run twice: this process redeemed the
// grant, so nobody else could have, and it runs nothing now. If the ledger
// will not take it back, the grant stays spent (nothing runs).
func (g *Gate) giveBack(ctx context.Context, k *call, gr *grant, r *Refusal) *Refusal {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalGrace)
	defer cancel()
	if !g.opts.Clock().Before(gr.expires()) {
		return r
	}
	for {
		// ErrExists: the redemption never reached the ledger, and the
		// grant is still there. A ledger that is down (a restart) gets
		// until journalGrace to come back.
		err := g.ledger.Issue(ictx, gr.Nonce, gr.expires())
		if err == nil || errors.Is(err, ledger.ErrExists) {
			g.spent.forget(gr.Nonce)
			break
		}
		if !errors.Is(err, ledger.ErrUnavailable) || ictx.Err() != nil {
			g.opts.Logger.Warn("an approved call that did not run could not be given back to the ledger; its handle is spent", "tool", k.t.Name, "request", gr.Nonce, "err", err)
			return r
		}
		select {
		case <-ictx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return refusal(r.Reason, "%s; the approval is kept: call %s again later with the same arguments and the same %s", r.Message, k.t.Name, TokenField)
}

// decidedAt is what an approval from via proves. The page the gate was
// given vouches for a click on it, or for a passkey assertion when it takes
// one (never more than its Assurance); the channel for its named
// approvers, and for their passkeys when it checked them.
func decidedAt(via *outOfBand, dec approver.Decision) (Assurance, string) {
	if via.page != nil {
		switch {
		case dec.Assurance == AssuranceLocalPage && len(dec.Approvers) == 0:
			return AssuranceLocalPage, journal.PageApproved
		case dec.Assurance == AssurancePasskey && len(dec.Approvers) > 0 && via.page.Assurance() == AssurancePasskey:
			return AssurancePasskey, journal.PageApproved
		}
		return AssuranceClientRelayed, journal.PageApproved
	}
	if len(dec.Approvers) > 0 {
		if dec.Assurance == AssurancePasskey {
			return AssurancePasskey, journal.ChannelApproved
		}
		return AssuranceChannel, journal.ChannelApproved
	}
	return AssuranceClientRelayed, journal.ChannelApproved
}

// withdraw tells the approver, if it can be told, that nobody will pick
// req up. It runs on a context that outlives the caller, bounded.
func (g *Gate) withdraw(ctx context.Context, via *outOfBand, req approver.Request, reason string) bool {
	if via == nil || via.withdrawer == nil {
		return false
	}
	w := via.withdrawer
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), withdrawTimeout)
	defer cancel()
	err := safely(func() error { return w.Withdraw(wctx, req, reason) })
	if err != nil {
		g.opts.Logger.Warn("channel: could not withdraw a request; it stays open until it expires", "tool", req.Tool, "request", req.ID, "reason", reason, "err", err)
		return false
	}
	return true
}

// pendingWhere tells the model where the person decides, for a pending
// answer; notShown: the page could not be opened for them.
func pendingWhere(via *outOfBand, notShown bool) string {
	switch {
	case via == nil:
		return "Waiting for the user's decision"
	case via.page != nil && notShown:
		return "The server could not open the approval page in the user's browser, so nobody has seen this request yet. " +
			"Tell the user: the server's log (its standard error) names a file that opens the page; they approve or deny there"
	case via.page != nil:
		return "Waiting for the user to approve or deny on the approval page in their browser (opened for them by the server, or sent to their client as a link)"
	}
	return "Waiting for an approver to decide on " + via.words + ", outside this conversation"
}

// pendingResult answers "pending" with the plan and the handle; where
// says where the person decides (pendingWhere).
func (g *Gate) pendingResult(k *call, gr *grant, handle, where string) *mcp.CallToolResult {
	exp := gr.expires().UTC().Format(time.RFC3339Nano)
	view := planView(k.plan)
	retry := max(1, int(g.opts.ChannelWait/time.Second))
	text := fmt.Sprintf("%s; nothing has run yet, and the approved call runs only when you call again. The request shows this plan:\n\n%s\n\n"+
		"To pick up the decision, call %s again with exactly the same arguments plus %q set to structuredContent.approval_token "+
		"(a handle for this pending request, not an approval; valid until %s). If it is still pending you get this answer again. "+
		"Do not approve on the user's behalf.",
		where, renderPlan(view), k.t.Name, TokenField, exp)
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: result.Pending{
			Status: "approval_pending", ApprovalToken: handle, ExpiresAt: exp, RetryAfter: retry, Plan: view,
		},
	}
}

func progressToken(req *mcp.CallToolRequest) any {
	if req == nil || req.Params == nil {
		return nil
	}
	return req.Params.GetProgressToken()
}

// progress sends a progress notification every ProgressInterval while a
// human decides, so that clients which reset their request timeout on
// progress keep waiting. It returns a function that stops it.
func (g *Gate) progress(ctx context.Context, k *call) (stop func()) {
	token := progressToken(k.req)
	if token == nil || k.req.Session == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(g.opts.ProgressInterval)
		defer t.Stop()
		start := time.Now()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := k.req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(n), // must increase with every notification
				Message:       fmt.Sprintf("waiting for an approver to decide on %s (%s so far)", k.t.Name, time.Since(start).Round(time.Second)),
			})
			if err != nil {
				g.opts.Logger.Debug("progress notification not sent", "tool", k.t.Name, "err", err)
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
