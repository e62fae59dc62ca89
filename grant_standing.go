package mcpsafe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// standingVersion is bound into the sealed standing grant.
const standingVersion = 1

// standingGrant is what the ledger keeps, sealed, for a standing grant. The
// ledger's own fields (uses left, expiry) only ever narrow it.
type standingGrant struct {
	Version   int       `json:"v"`
	ID        string    `json:"id"`
	Tool      string    `json:"tool"`
	Policy    string    `json:"policy"`
	Principal string    `json:"sub"`
	Audience  string    `json:"aud"`
	Words     string    `json:"words"`
	CEL       string    `json:"cel"`
	By        string    `json:"by"`
	Assurance Assurance `json:"assurance"`
	Uses      int       `json:"uses"`
	IssuedAt  int64     `json:"iat"`
	ExpiresAt int64     `json:"exp"` // unix milliseconds, exclusive
}

// standingData is the ledger's opaque Data: the sealed grant, which alone
// the gate trusts, and a plain copy for listing without keys.
type standingData struct {
	Info   grants.Info `json:"info"`
	Sealed string      `json:"sealed"`
}

// standingScope is the ledger's lookup key for the grants of one tool and
// principal on this server.
func standingScope(audience, tool, principal string) string {
	sum := sha256.Sum256([]byte(audience + "\x00" + tool + "\x00" + principal))
	return hex.EncodeToString(sum[:])
}

var errNoStanding = errors.New("the ledger does not keep standing grants")

// createStanding records a standing grant that a human chose while
// approving k, and journals it. The approving call is its first use.
func (g *Gate) createStanding(ctx context.Context, k *call, o *approver.GrantOffer, words string, a Approval) (string, *Refusal) {
	if g.standing == nil {
		return "", refusal(ReasonLedgerUnavailable, "%v", errNoStanding)
	}
	id, err := newNonce()
	if err != nil {
		return "", refusal(ReasonLedgerUnavailable, "%v", err)
	}
	now := g.opts.Clock()
	exp := now.Add(o.TTL)
	sg := standingGrant{
		Version: standingVersion, ID: id, Tool: k.t.Name, Policy: k.t.policy,
		Principal: k.c.Principal, Audience: g.opts.Audience, Words: words, CEL: o.CEL,
		By: a.By, Assurance: a.Assurance, Uses: o.Uses,
		IssuedAt: now.UnixMilli(), ExpiresAt: exp.UnixMilli(),
	}
	plain, _ := json.Marshal(sg)
	sealed, err := g.ring.Seal(g.opts.Audience, plain)
	if err != nil {
		return "", refusal(ReasonLedgerUnavailable, "sealing the grant failed: %v", err)
	}
	info := sg.info()
	info.UsesLeft = o.Uses - 1
	data, _ := json.Marshal(standingData{Info: info, Sealed: sealed})
	rec := g.record(k, journal.GrantCreated)
	rec.Grant, rec.By = id, a.By
	rec.Summary = fmt.Sprintf("standing grant for %s by %s: calls with %s (CEL: %s), until %s, %d uses in all (approved as %s)",
		k.t.Name, prompt.Quote(k.c.Principal), o.Words, o.CEL, exp.UTC().Format(time.RFC3339), o.Uses, a.Decision)
	// Journaled before it exists: the journal never lacks a grant that
	// could let a call through.
	if err := g.mustRecord(ctx, rec); err != nil {
		return "", refusal(ReasonJournalUnavailable, "the audit journal could not record the grant, so nothing ran: %v", err)
	}
	err = g.standing.PutStanding(ctx, ledger.Standing{
		ID: id, Scope: standingScope(g.opts.Audience, k.t.Name, k.c.Principal),
		Expires: exp, Uses: o.Uses - 1, Data: data,
	})
	if err != nil {
		return "", refusal(ReasonLedgerUnavailable, "the ledger could not record the grant: %v", err)
	}
	g.grantCache.forget(standingScope(g.opts.Audience, k.t.Name, k.c.Principal))
	return id, nil
}

func (sg *standingGrant) info() grants.Info {
	return grants.Info{
		ID: sg.ID, Tool: sg.Tool, Principal: sg.Principal, Audience: sg.Audience,
		Scope: sg.Words, CEL: sg.CEL, By: sg.By, Assurance: sg.Assurance, Uses: sg.Uses,
		IssuedAt: time.UnixMilli(sg.IssuedAt).UTC(), ExpiresAt: time.UnixMilli(sg.ExpiresAt).UTC(),
	}
}

// openStanding authenticates a ledger entry's sealed grant and parses it
// strictly. The ledger's plain copy is never trusted.
func (g *Gate) openStanding(s ledger.Standing) (*standingGrant, error) {
	var d standingData
	if err := json.Unmarshal(s.Data, &d); err != nil {
		return nil, errGrantMalformed
	}
	plain, err := g.ring.Open(g.opts.Audience, d.Sealed)
	if err != nil {
		return nil, err
	}
	var sg standingGrant
	if err := frame.Decode(plain, &sg); err != nil {
		return nil, errGrantMalformed
	}
	if sg.Version != standingVersion || sg.ID != s.ID || sg.Audience != g.opts.Audience {
		return nil, errGrantMalformed
	}
	return &sg, nil
}

// useStanding runs k under a standing grant that covers it, if there is
// one. ok false means no grant covers the call and it is asked as usual.
func (g *Gate) useStanding(ctx context.Context, k *call) (res *mcp.CallToolResult, r *Refusal, ok bool) {
	if !k.t.grantsOffered() || g.standing == nil {
		return nil, nil, false
	}
	scope := standingScope(g.opts.Audience, k.t.Name, k.c.Principal)
	list, err := g.standingFor(ctx, scope)
	if err != nil {
		// Asking is never less safe than a grant.
		g.opts.Logger.Warn("ledger: standing grants unavailable; asking instead", "tool", k.t.Name, "err", err)
		return nil, nil, false
	}
	for _, sg := range list {
		switch {
		case sg.Tool != k.t.Name, sg.Principal != k.c.Principal:
			continue
		case sg.Policy != k.t.policy || sg.Policy != g.currentPolicy(k.t.Name):
			g.endStanding(ctx, sg.ID, ledger.Revocation{Reason: ledger.EndPolicyChanged, By: "mcpsafe: the tool's policy changed since the grant was made"})
			g.grantCache.forget(scope)
			continue
		case !k.now.Before(time.UnixMilli(sg.ExpiresAt)):
			continue
		case time.UnixMilli(sg.IssuedAt).After(k.now.Add(maxClockSkew)):
			continue
		case sg.Assurance < k.t.minAssur:
			continue
		}
		fit, err := g.fits(ctx, sg.CEL, k)
		if err != nil {
			g.opts.Logger.Warn("grant scope failed; asking instead", "tool", k.t.Name, "grant", sg.ID, "err", err)
			continue
		}
		if !fit {
			continue
		}
		left, used, err := g.standing.UseStanding(ctx, sg.ID)
		if err != nil {
			g.opts.Logger.Warn("ledger: standing grant use failed; asking instead", "grant", sg.ID, "err", err)
			continue
		}
		if !used {
			g.grantCache.forget(scope)
			g.journalEnd(ctx, sg.ID) // used up, revoked or expired meanwhile
			continue
		}
		if left == 0 {
			g.journalEnd(ctx, sg.ID)
		}
		callID, err := newNonce()
		if err != nil {
			return nil, refusal(ReasonLedgerUnavailable, "%v", err), true
		}
		res, r := g.execute(ctx, k, k.target, Approval{
			Decision: journal.GrantUsed, By: sg.By, Assurance: sg.Assurance, CallID: callID, Grant: sg.ID,
		})
		return res, r, true
	}
	return nil, nil, false
}

// standingFor lists the opened grants of scope, sorted by expiry, from a
// short-lived cache. The cache only saves the lookup: every use is still
// one atomic step in the ledger, which refuses a grant revoked, used up or
// expired meanwhile, and every binding is checked on every call. A grant
// made on another replica is found once the entry is older than
// grantCacheTTL; until then the call asks, which is never less safe.
func (g *Gate) standingFor(ctx context.Context, scope string) ([]*standingGrant, error) {
	if list, ok := g.grantCache.get(scope); ok {
		return list, nil
	}
	raw, err := g.standing.StandingFor(ctx, scope)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(raw, func(a, b ledger.Standing) int { return a.Expires.Compare(b.Expires) })
	list := make([]*standingGrant, 0, len(raw))
	for _, s := range raw {
		sg, err := g.openStanding(s)
		if err != nil {
			g.opts.Logger.Warn("ledger: a standing grant does not authenticate; ignored", "id", s.ID, "err", err)
			continue
		}
		list = append(list, sg)
	}
	g.grantCache.put(scope, list)
	return list, nil
}
