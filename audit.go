package mcpsafe

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
)

// The journal's two rules: every record the gate writes goes through
// mustRecord or report.

// mustRecord writes a record that something letting a call run depends on
// (a redemption, an approval, a standing grant), durably, on the caller's
// context. An error means the caller refuses and nothing runs.
func (g *Gate) mustRecord(ctx context.Context, rec journal.Record) error {
	return g.opts.Journal.Append(ctx, rec)
}

// report writes a record that says what happened (a refusal, an outcome, a
// grant's end, a withdrawal at shutdown) on a context that survives the
// caller's, bounded by limit: a caller that left does not take the record
// with it. A failure is the caller's to log; it changes no answer.
func (g *Gate) report(ctx context.Context, rec journal.Record, limit time.Duration) error {
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	return g.opts.Journal.Append(jctx, rec)
}

func (g *Gate) record(k *call, decision string) journal.Record {
	return journal.Record{
		Tool: k.t.Name, Principal: k.c.Principal, Session: k.c.Session,
		ArgsDigest: k.c.ArgsDigest, Args: k.c.Arguments, Decision: decision,
		SecretFields: k.t.SecretFields,
	}
}

// journalRedeeming writes, durably, that this call is about to spend the
// grant nonce; the call's approval record or its refusal closes it.
func (g *Gate) journalRedeeming(ctx context.Context, k *call, nonce string) *Refusal {
	rec := g.record(k, journal.Redeeming)
	rec.Call, rec.Summary = nonce, k.plan.Summary
	if err := g.mustRecord(ctx, rec); err != nil {
		return refusal(ReasonJournalUnavailable, "the audit journal could not record the approval's redemption, so it was not used and nothing ran: %v", err)
	}
	k.redeeming = nonce
	return nil
}

// journalApproval writes the approval durably before Execute: a journal
// that cannot record it refuses the call, and nothing runs.
func (g *Gate) journalApproval(ctx context.Context, k *call, a *Approval) *Refusal {
	rec := g.record(k, a.Decision)
	rec.Call, rec.By, rec.Summary, rec.Grant = a.CallID, a.By, a.Plan.Summary, a.Grant
	rec.Assurance, rec.Evidence = a.Assurance.String(), a.Evidence
	rec.Shown = shownDigest(planView(k.plan), k.plan.Targets)
	if err := g.mustRecord(ctx, rec); err != nil {
		return refusal(ReasonJournalUnavailable, "the audit journal could not record the approval, so nothing ran: %v", err)
	}
	k.redeeming = "" // (the approval record closes the redemption)
	if o := g.opts.Observer; o != nil {
		o.Approved(k.t.Name, rec.Decision, rec.Assurance)
	}
	return nil
}

// journalRefusal records a refusal. It is best effort: the call is refused
// whether or not the record lands.
func (g *Gate) journalRefusal(ctx context.Context, k *call, tool string, r *Refusal) {
	var rec journal.Record
	if k != nil && k.t != nil {
		rec = g.record(k, journal.Refused)
		rec.Summary = k.plan.Summary
		// Refused before there was a plan (the target missing, outside
		// the roots...): the message is what names the target.
		if rec.Summary == "" && r.Reason != ReasonArgumentsInvalid {
			rec.Summary = r.Message
		}
	} else {
		rec = journal.Record{Tool: tool, Decision: journal.Refused}
	}
	switch r.Reason {
	case ReasonDeclined:
		rec.Decision = journal.Declined
	case ReasonCancelled:
		rec.Decision = journal.Cancelled
	case ReasonTimeout:
		rec.Decision = journal.Timeout
	}
	if r.Reason == ReasonArgumentsInvalid {
		rec.Args = nil // unparseable input is not worth keeping and may hold anything
	}
	rec.Reason = r.Reason
	if k != nil && k.redeeming != "" {
		// The refusal ends a redemption the journal holds open: nothing
		// ran on it. (Uncapped: the journal must not reopen it as an
		// interruption.)
		rec.Call, k.redeeming = k.redeeming, ""
	}
	if r.Reason == ReasonJournalUnavailable {
		// The operator must hear of a full disk even if no model reports it.
		g.opts.Logger.Error("journal: approval not recorded, so the call was refused", "tool", tool, "err", r.Message)
	}
	if err := g.report(ctx, rec, journalGrace); err != nil {
		level := slog.LevelWarn
		if errors.Is(err, journal.ErrRefusalsCapped) {
			level = slog.LevelDebug // the journal noted the limit once; not a log line per refusal
		}
		g.opts.Logger.Log(ctx, level, "journal: refusal not recorded", "tool", tool, "reason", r.Reason, "err", err)
	}
}

// appendBounded writes rec on a context that survives ctx, bounded.
func (g *Gate) appendBounded(ctx context.Context, rec journal.Record) {
	if err := g.report(ctx, rec, journalGrace); err != nil {
		g.opts.Logger.Warn("journal: shutdown record not written", "tool", rec.Tool, "decision", rec.Decision, "err", err)
	}
}
