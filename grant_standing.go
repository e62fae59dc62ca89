package mcpsafe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// GrantPolicy lets the human who approves a call of the tool approve,
// instead of that call alone, a standing grant: this call and calls like it,
// by the same principal, for at most MaxTTL and MaxUses uses (this call
// included), within a scope derived from the approved call.
type GrantPolicy struct {
	// MaxTTL is the longest window a grant may have. Required.
	MaxTTL time.Duration
	// MaxUses is the most uses a grant may have, the approving call
	// included. Required, at least 2 (one use is an ordinary approval).
	MaxUses int
	// ClientRelayed lets a client-relayed approval (an elicitation accept)
	// create a grant. Without it grants are offered only through the
	// out-of-band channel, whose approvers are authenticated.
	ClientRelayed bool
	// Scopes derives the scopes the human may choose from the call to
	// approve, besides "exactly these arguments", which is always offered.
	// Each scope is shown in words and evaluated as CEL. It must be a pure
	// function of the call and its resolved state: the offers are computed
	// again when the answer arrives, and an answer names an offer by its
	// position.
	Scopes func(c Call, r Resolved) ([]GrantScope, error)
	// ScopesBinding names what Scopes derives (a function cannot be
	// hashed): a version, or a digest of the fixed scopes it returns. It is
	// part of the tool's policy hash, so changing it voids the grants made
	// under the old scopes and the approvals pending under them, whose
	// answer names an offer by its position (under another scope list the
	// same ID would name another scope). Change it whenever Scopes changes
	// what it returns. A policy file (mcpsafe proxy) sets it to a digest of
	// its scopes' words and CEL.
	ScopesBinding string
}

// GrantScope is a constraint on the calls a standing grant covers.
type GrantScope struct {
	// Words describe the scope to the human, e.g. "paths under /data/tmp/".
	Words string
	// CEL decides whether a call fits. It sees tool, principal, args (the
	// canonical arguments), args_digest and resolved (the resolved state of
	// the later call). Only the exact bool true fits; an error or any other
	// value refuses the grant for that call, which is then asked as usual.
	CEL string
}

// GrantOffer is one standing grant a human may choose when approving.
type GrantOffer struct {
	ID    string        `json:"id"`    // what to answer to choose it
	Label string        `json:"label"` // the whole offer in words, sanitized
	Words string        `json:"scope"` // the scope in words, sanitized
	CEL   string        `json:"cel"`
	TTL   time.Duration `json:"ttl"`
	Uses  int           `json:"uses"` // the approving call included

	raw string // the scope's words as the tool gave them
}

// GrantInfo describes a live standing grant, as `mcpsafe grants list` and
// the approval service show it. Its strings are not sanitized: quote them
// (package prompt) before showing them.
type GrantInfo struct {
	ID        string    `json:"id"`
	Tool      string    `json:"tool"`
	Principal string    `json:"principal"`
	Audience  string    `json:"audience"`
	Scope     string    `json:"scope"`
	CEL       string    `json:"cel"`
	By        string    `json:"by"`
	Assurance Assurance `json:"assurance"`
	Uses      int       `json:"uses"` // granted, the approving call included
	UsesLeft  int       `json:"uses_left"`
	IssuedAt  time.Time `json:"issued_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

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
	Info   GrantInfo `json:"info"`
	Sealed string    `json:"sealed"`
}

// offerLimits are the limits offered for each scope: a short default and
// the policy's ceiling, never above it.
func offerLimits(p *GrantPolicy) [][2]int64 {
	short := [2]int64{int64(min(15*time.Minute, p.MaxTTL)), int64(min(3, p.MaxUses))}
	ceil := [2]int64{int64(p.MaxTTL), int64(p.MaxUses)}
	if short == ceil {
		return [][2]int64{ceil}
	}
	return [][2]int64{short, ceil}
}

// OnceOffer is the answer that approves the call alone.
const OnceOffer = "once"

// grantsOffered reports whether t offers standing grants at all.
func (t *gatedTool) grantsOffered() bool { return t.Grants != nil && t.grantsNamed }

// offers lists the standing grants a human may choose for this call, in a
// fixed order: they are computed again, from the same call and policy, when
// the answer comes back.
func (g *Gate) offers(k *call, assurance Assurance) ([]GrantOffer, error) {
	t := k.t
	if !t.grantsOffered() || g.standing == nil {
		return nil, nil
	}
	if assurance <= AssuranceClientRelayed && !t.Grants.ClientRelayed {
		return nil, nil
	}
	scopes := []GrantScope{{Words: "exactly these arguments", CEL: fmt.Sprintf("args_digest == %q", k.digest)}}
	if t.Grants.Scopes != nil {
		var more []GrantScope
		err := safely(func() error {
			var err error
			more, err = t.Grants.Scopes(k.c, k.resolved)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("grant scopes: %w", err)
		}
		scopes = append(scopes, more...)
	}
	var out []GrantOffer
	for i, s := range scopes {
		if strings.TrimSpace(s.Words) == "" || strings.TrimSpace(s.CEL) == "" {
			return nil, fmt.Errorf("grant scope %d has no words or no CEL", i)
		}
		if _, err := g.program(s.CEL); err != nil {
			return nil, fmt.Errorf("grant scope %d: %w", i, err)
		}
		words := prompt.Quote(s.Words)
		for j, l := range offerLimits(t.Grants) {
			ttl, uses := time.Duration(l[0]), int(l[1])
			out = append(out, GrantOffer{
				ID:    fmt.Sprintf("grant-%d-%d", i+1, j+1),
				Label: fmt.Sprintf("this and calls with %s, for %s, %d uses in all", words, shortDuration(ttl), uses),
				Words: words, CEL: s.CEL, TTL: ttl, Uses: uses, raw: s.Words,
			})
		}
	}
	return out, nil
}

// shortDuration writes 15m, 1h, 1h30m rather than 15m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// chosenOffer maps an answer to an offer. Only an exact listed ID counts;
// anything else is an error, and the whole approval is refused.
func chosenOffer(offers []GrantOffer, answer string) (*GrantOffer, error) {
	if answer == OnceOffer {
		return nil, nil
	}
	for i := range offers {
		if offers[i].ID == answer {
			return &offers[i], nil
		}
	}
	return nil, fmt.Errorf("the answer chose %s, which is not one of the offers", prompt.Quote(answer))
}

// celEnv is the environment grant scopes are compiled in.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("principal", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("args_digest", cel.StringType),
		cel.Variable("resolved", cel.MapType(cel.StringType, cel.DynType)),
	)
})

// celCostLimit bounds one evaluation of a scope.
const celCostLimit = 100_000

func (g *Gate) program(src string) (cel.Program, error) {
	if p, ok := g.programs.Load(src); ok {
		return p.(cel.Program), nil
	}
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("CEL %s: %w", prompt.Quote(src), iss.Err())
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, err
	}
	g.programs.Store(src, prg)
	return prg, nil
}

// CheckGrantScope compiles a scope's CEL as the gate will, so that a policy
// file can refuse a bad one when it loads rather than at the first call.
func CheckGrantScope(src string) error {
	env, err := celEnv()
	if err != nil {
		return err
	}
	if _, iss := env.Compile(src); iss != nil && iss.Err() != nil {
		return iss.Err()
	}
	return nil
}

// fits evaluates a scope on this call. Only the exact bool true fits.
func (g *Gate) fits(ctx context.Context, src string, k *call) (bool, error) {
	prg, err := g.program(src)
	if err != nil {
		return false, err
	}
	args := map[string]any{}
	if err := json.Unmarshal(k.c.Arguments, &args); err != nil || args == nil {
		return false, fmt.Errorf("arguments: %v", err)
	}
	res := map[string]any(k.resolved)
	if res == nil {
		res = map[string]any{}
	}
	var v any
	err = safely(func() error {
		out, _, err := prg.ContextEval(ctx, map[string]any{
			"tool": k.t.Name, "principal": k.c.Principal, "args": args,
			"args_digest": k.digest, "resolved": res,
		})
		v = out
		return err
	})
	if err != nil {
		return false, err
	}
	b, ok := v.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the scope yielded %v, not a bool", v)
	}
	return b == types.True, nil
}

// strictJSON parses one JSON value with no unknown fields or trailing data.
func strictJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data")
	}
	return nil
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
func (g *Gate) createStanding(ctx context.Context, k *call, o *GrantOffer, a Approval) (string, *Refusal) {
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
		Principal: k.c.Principal, Audience: g.opts.Audience, Words: o.raw, CEL: o.CEL,
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
	if err := g.opts.Journal.Append(ctx, rec); err != nil {
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

func (sg *standingGrant) info() GrantInfo {
	return GrantInfo{
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
	if err := strictJSON(plain, &sg); err != nil {
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

// grantCacheTTL bounds how long a replica may not see a grant made on
// another replica (it asks meanwhile).
const grantCacheTTL = time.Second

type grantCache struct {
	mu sync.Mutex
	m  map[string]grantCacheEntry
}

type grantCacheEntry struct {
	at   time.Time
	list []*standingGrant
}

func (c *grantCache) get(scope string) ([]*standingGrant, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[scope]
	if !ok || time.Since(e.at) >= grantCacheTTL {
		return nil, false
	}
	return e.list, true
}

func (c *grantCache) put(scope string, list []*standingGrant) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 10_000 {
		c.m = map[string]grantCacheEntry{}
	}
	c.m[scope] = grantCacheEntry{at: time.Now(), list: list}
}

func (c *grantCache) forget(scope string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, scope)
}

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
