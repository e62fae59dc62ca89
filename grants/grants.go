// Package grants administers standing grants: the grants a person chose,
// while approving one call, for calls like it (same tool and principal,
// within a scope, for a while and a number of uses). It lists the live
// grants of a ledger and revokes them (what `mcpsafe grants list|revoke`
// and the approval service do), and holds the Scope a tool offers grants
// in (mcpsafe.GrantPolicy) and the Evaluator of scopes' CEL a gate is given
// (mcpsafe.Options.GrantCEL; package grants/celscope has one).
package grants

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/ledger"
)

// data is the plain part of a ledger entry's opaque Data, as the gate
// writes it (beside the sealed grant, which alone the gate trusts).
type data struct {
	Info Info `json:"info"`
}

// Scope is a constraint on the calls a standing grant covers.
type Scope struct {
	// Words describe the scope to the human, e.g. "paths under /data/tmp/".
	Words string
	// CEL decides whether a call fits. It sees tool, principal, args (the
	// canonical arguments), args_digest and resolved (the resolved state of
	// the later call). Only the exact bool true fits; an error or any other
	// value refuses the grant for that call, which is then asked as usual.
	CEL string
}

// Info describes a live standing grant, as `mcpsafe grants list` and
// the approval service show it. Its strings are not sanitized: quote them
// (package prompt) before showing them.
type Info struct {
	ID        string             `json:"id"`
	Tool      string             `json:"tool"`
	Principal string             `json:"principal"`
	Audience  string             `json:"audience"`
	Scope     string             `json:"scope"`
	CEL       string             `json:"cel"`
	By        string             `json:"by"`
	Assurance approver.Assurance `json:"assurance"`
	Uses      int                `json:"uses"` // granted, the approving call included
	UsesLeft  int                `json:"uses_left"`
	IssuedAt  time.Time          `json:"issued_at"`
	ExpiresAt time.Time          `json:"expires_at"`
}

// List lists the live standing grants in a ledger, from the plain copies
// the ledger keeps (for display: the gate trusts only the sealed grant).
func List(ctx context.Context, store ledger.StandingStore) ([]Info, error) {
	list, err := store.StandingFor(ctx, "")
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(list))
	for _, s := range list {
		var d data
		if err := json.Unmarshal(s.Data, &d); err != nil || d.Info.ID != s.ID {
			d.Info = Info{ID: s.ID, Tool: "(unreadable)"}
		}
		d.Info.UsesLeft = s.Uses
		if s.Expires.Before(d.Info.ExpiresAt) || d.Info.ExpiresAt.IsZero() {
			d.Info.ExpiresAt = s.Expires.UTC()
		}
		out = append(out, d.Info)
	}
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Revoke ends every live standing grant in store that match selects,
// and returns those it ended. The store ends each before Revoke
// returns, so no replica sharing it can use them afterwards, and keeps by
// (who revoked, and through what) until a gate sharing the store journals
// the end (mcpsafe.Gate.JournalGrantEnds). It selects on the ledger's plain copies (see
// List).
func Revoke(ctx context.Context, store ledger.StandingStore, by string, match func(Info) bool) ([]Info, error) {
	list, err := List(ctx, store)
	if err != nil {
		return nil, err
	}
	var ended []Info
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
