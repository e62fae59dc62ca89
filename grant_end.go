package mcpsafe

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

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
	if err := g.opts.Journal.Append(ctx, rec); err != nil {
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

// Grants lists the live standing grants in a ledger, from the plain copies
// the ledger keeps (for display: the gate trusts only the sealed grant).
func Grants(ctx context.Context, store ledger.StandingStore) ([]GrantInfo, error) {
	list, err := store.StandingFor(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]GrantInfo, 0, len(list))
	for _, s := range list {
		var d standingData
		if err := json.Unmarshal(s.Data, &d); err != nil || d.Info.ID != s.ID {
			d.Info = GrantInfo{ID: s.ID, Tool: "(unreadable)"}
		}
		d.Info.UsesLeft = s.Uses
		if s.Expires.Before(d.Info.ExpiresAt) || d.Info.ExpiresAt.IsZero() {
			d.Info.ExpiresAt = s.Expires.UTC()
		}
		out = append(out, d.Info)
	}
	slices.SortFunc(out, func(a, b GrantInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// RevokeGrants ends every live standing grant in store that match selects,
// and returns those it ended. The store ends each before RevokeGrants
// returns, so no replica sharing it can use them afterwards, and keeps by
// (who revoked, and through what) until a gate sharing the store journals
// the end (JournalGrantEnds). It selects on the ledger's plain copies (see
// Grants).
func RevokeGrants(ctx context.Context, store ledger.StandingStore, by string, match func(GrantInfo) bool) ([]GrantInfo, error) {
	list, err := Grants(ctx, store)
	if err != nil {
		return nil, err
	}
	var ended []GrantInfo
	for _, gi := range list {
		if !match(gi) {
			continue
		}
		ok, err := store.RevokeStanding(ctx, gi.ID, ledger.Revocation{Reason: ledger.EndRevoked, By: clip(by, ledger.MaxRevokedBy)})
		if err != nil {
			return ended, err
		}
		if ok {
			ended = append(ended, gi)
		}
	}
	return ended, nil
}

// clip cuts s to at most n bytes without splitting a UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
