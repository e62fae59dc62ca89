package mcpsafe

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/prompt"
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
	Scopes func(c Call, r Resolved) ([]grants.Scope, error)
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

// grantsOffered reports whether t offers standing grants at all.
func (t *gatedTool) grantsOffered() bool { return t.Grants != nil && t.grantsNamed }

// offers lists the standing grants a human may choose for this call, in a
// fixed order: they are computed again, from the same call and policy, when
// the answer comes back.
func (g *Gate) offers(k *call, assurance Assurance) ([]approver.GrantOffer, error) {
	out, _, err := g.offerWords(k, assurance)
	return out, err
}

// offerWords is offers, with each offer's scope in words as the tool gave
// them (what a standing grant keeps).
func (g *Gate) offerWords(k *call, assurance Assurance) ([]approver.GrantOffer, []string, error) {
	t := k.t
	if !t.grantsOffered() || g.standing == nil {
		return nil, nil, nil
	}
	if assurance <= AssuranceClientRelayed && !t.Grants.ClientRelayed {
		return nil, nil, nil
	}
	scopes := []grants.Scope{{Words: "exactly these arguments", CEL: fmt.Sprintf("args_digest == %q", k.c.ArgsDigest)}}
	if t.Grants.Scopes != nil {
		var more []grants.Scope
		err := safely(func() error {
			var err error
			more, err = t.Grants.Scopes(k.c, k.st.resolved)
			return err
		})
		if err != nil {
			return nil, nil, fmt.Errorf("grant scopes: %w", err)
		}
		scopes = append(scopes, more...)
	}
	var out []approver.GrantOffer
	var raws []string
	for i, s := range scopes {
		if strings.TrimSpace(s.Words) == "" || strings.TrimSpace(s.CEL) == "" {
			return nil, nil, fmt.Errorf("grant scope %d has no words or no CEL", i)
		}
		if _, err := g.program(s.CEL); err != nil {
			return nil, nil, fmt.Errorf("grant scope %d: %w", i, err)
		}
		words := prompt.Quote(s.Words)
		for j, l := range offerLimits(t.Grants) {
			ttl, uses := time.Duration(l[0]), int(l[1])
			out = append(out, approver.GrantOffer{
				ID:    fmt.Sprintf("grant-%d-%d", i+1, j+1),
				Label: fmt.Sprintf("this and calls with %s, for %s, %d uses in all", words, shortDuration(ttl), uses),
				Words: words, CEL: s.CEL, TTL: ttl, Uses: uses,
			})
			raws = append(raws, s.Words)
		}
	}
	return out, raws, nil
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
func chosenOffer(offers []approver.GrantOffer, answer string) (*approver.GrantOffer, error) {
	if answer == approver.Once {
		return nil, nil
	}
	for i := range offers {
		if offers[i].ID == answer {
			return &offers[i], nil
		}
	}
	return nil, fmt.Errorf("the answer chose %s, which is not one of the offers", prompt.Quote(answer))
}

// chooseStanding creates the standing grant the approver chose, if any.
// The offers are computed again from the same call and policy; only an
// exact listed choice counts, and anything else refuses the approval.
func (g *Gate) chooseStanding(ctx context.Context, k *call, choice *string, a *Approval, approvedTarget string) *Refusal {
	if choice == nil || *choice == approver.Once {
		return nil
	}
	// The offers derive from the resolved state: recomputed on another
	// state they could differ from what the approver saw. The human may
	// have taken a while (in-call elicitation, channel), so look again.
	st, r := g.resolve(ctx, k)
	if r != nil {
		return refusal(ReasonTargetChanged, "what the call points at changed since it was approved (now %s: %s); preview it again", r.Reason, r.Message)
	}
	_, target, r := g.preview(ctx, k, st)
	if r != nil || target != approvedTarget {
		return refusal(ReasonTargetChanged, "what the call points at changed since it was approved; preview it again")
	}
	k.st = st
	offers, raws, err := g.offerWords(k, a.Assurance)
	if err != nil {
		return refusal(ReasonPreviewFailed, "%v", err)
	}
	if len(offers) == 0 && *choice != approver.Once {
		return refusal(ReasonDeclined, "the answer chose a standing grant, and none was offered")
	}
	o, err := chosenOffer(offers, *choice)
	if err != nil {
		return refusal(ReasonDeclined, "%v", err)
	}
	if o == nil {
		return nil
	}
	raw := ""
	for i := range offers {
		if offers[i].ID == o.ID {
			raw = raws[i]
		}
	}
	id, r := g.createStanding(ctx, k, o, raw, *a)
	if r != nil {
		return r
	}
	a.Grant = id
	return nil
}
