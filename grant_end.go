package mcpsafe

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// endStanding ends a live grant the gate found void, and journals the end.
func (g *Gate) endStanding(ctx context.Context, id string, r ledger.Revocation) {
	if _, err := g.standing.RevokeStanding(ctx, id, r); err != nil {
		g.opts.Logger.Warn("ledger: could not end a void standing grant", "grant", id, "err", err)
		return
	}
	g.journalEnd(ctx, id)
}

// journalEnd journals the end of grant id if it ended and this gate is the
// one that claims the end in the ledger: whichever replica, sweep or call
// gets there first, the end is journaled once. Nothing is journaled for a
// live grant (the claim fails). An end claimed and then not journaled (the
// journal failing, or this process dying in between) is lost: it is logged,
// and the grant stays ended all the same.
func (g *Gate) journalEnd(ctx context.Context, id string) bool {
	e, won, err := g.standing.ClaimStandingEnd(ctx, id)
	if err != nil {
		g.opts.Logger.Warn("ledger: could not claim a standing grant's end; a later sweep will", "grant", id, "err", err)
		return false
	}
	if !won {
		return false
	}
	sg, err := g.openStanding(e.Standing)
	if err != nil {
		g.opts.Logger.Warn("journal: grant end not recorded: the ended grant does not authenticate", "grant", id, "err", err)
		return false
	}
	rec := journal.Record{Tool: sg.Tool, Principal: sg.Principal, Decision: journal.GrantEnded, Grant: id, Reason: e.Reason, By: e.By, Summary: endWords(sg, e)}
	if err := g.report(ctx, rec, journalGrace); err != nil {
		g.opts.Logger.Warn("journal: grant end not recorded", "grant", id, "err", err)
		return false
	}
	return true
}

// endWords says how a grant ended, as the ledger recorded it: who revoked
// it is what the revoker told the ledger, not something the gate saw.
func endWords(sg *standingGrant, e ledger.StandingEnd) string {
	switch e.Reason {
	case ledger.EndUsedUp:
		return fmt.Sprintf("all %d uses taken", sg.Uses)
	case ledger.EndExpired:
		return "expired at " + time.UnixMilli(sg.ExpiresAt).UTC().Format(time.RFC3339Nano)
	case ledger.EndPolicyChanged:
		return "the tool's policy changed since the grant was made"
	default:
		return fmt.Sprintf("revoked in the ledger at %s, by %s as the revoker stated it", e.At.UTC().Format(time.RFC3339Nano), prompt.Quote(e.By))
	}
}

// JournalGrantEnds journals the end of every standing grant of this server
// that ended without a gate journaling it yet: expired, or revoked from the
// approval service or `mcpsafe grants revoke`. Each end is claimed in the
// ledger first, so that replicas sharing it journal it once between them.
// Ends of other servers' grants (another audience or key) are left to their
// gates. The gate calls it every Options.GrantEndSweep; it reports how many
// ends this call journaled.
func (g *Gate) JournalGrantEnds(ctx context.Context) (int, error) {
	if g.standing == nil {
		return 0, nil
	}
	ends, err := g.standing.EndedStanding(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ends {
		if _, err := g.openStanding(e.Standing); err != nil {
			continue // not this server's
		}
		if g.journalEnd(ctx, e.ID) {
			n++
		}
	}
	return n, ctx.Err()
}
