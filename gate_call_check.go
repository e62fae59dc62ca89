package mcpsafe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpsafe/mcpsafe/internal/canon"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// decode checks the arguments before anything else looks at them: duplicate
// keys, keys equal under case folding, a case variant of approval_token or
// a schema violation refuse the call, since a digest must mean one call to
// every parser.
func (g *Gate) decode(t *gatedTool, req *mcp.CallToolRequest) (*call, *Refusal) {
	k := &call{t: t, req: req, now: g.opts.Clock()}
	k.c = Call{Tool: t.Name, Principal: g.opts.Principal(req), Request: req}
	if req.Session != nil {
		k.c.Session = req.Session.ID()
	}
	// One strict reading; the rest (without the token) is cut from it and
	// put in canonical form, and the fast schema check reads the members.
	obj, err := canon.ReadObject(req.Params.Arguments, TokenField)
	if errors.Is(err, canon.ErrFoldedKey) {
		// Rules and previews read keys exactly; a tool decoding with
		// encoding/json matches them case-insensitively. Two spellings of
		// one key would let them judge one call while another runs.
		return k, refusal(ReasonArgumentsInvalid, "argument names must differ in more than letter case, and %s must be spelt exactly: %v", TokenField, err)
	}
	if err != nil {
		return k, refusal(ReasonArgumentsInvalid, "arguments are not a valid JSON object: %v", err)
	}
	rest, tok, err := obj.Without(TokenField)
	if t.OwnsTokenField {
		// approval_token is the tool's own argument (checked above for
		// case variants all the same): it stays in the call and its digest.
		rest, err = obj.Canonical()
		tok = nil
	}
	if err != nil {
		return k, refusal(ReasonArgumentsInvalid, "arguments cannot be canonicalized: %v", err)
	}
	if tok != nil {
		var s string
		if err := json.Unmarshal(tok, &s); err != nil {
			return k, refusal(ReasonArgumentsInvalid, "%s must be a string", TokenField)
		}
		k.token = &s
	}
	if !t.fast.valid(obj.Members()) {
		var inst any
		if err := json.Unmarshal(req.Params.Arguments, &inst); err != nil || inst == nil {
			inst = map[string]any{}
		}
		schema, err := t.schema()
		if err != nil {
			return k, refusal(ReasonArgumentsInvalid, "the tool's input schema does not resolve, so no arguments can be checked: %v", err)
		}
		if err := schema.Validate(inst); err != nil {
			return k, refusal(ReasonArgumentsInvalid, "arguments do not match the tool's schema: %v", err)
		}
	}
	canonical := rest
	k.c.Arguments = canonical
	k.c.ArgsDigest = canon.SHA256(canonical)
	if t.decode != nil {
		if k.in, err = t.decode(canonical); err != nil {
			return k, refusal(ReasonArgumentsInvalid, "arguments do not decode: %v", err)
		}
	}
	return k, nil
}

// checkRules resolves the call, runs deny and allow rules, and previews. It
// runs before any approval path so that nothing a client answers can
// override a rule.
func (g *Gate) checkRules(ctx context.Context, k *call) *Refusal {
	var r *Refusal
	if k.st, r = g.resolve(ctx, k); r != nil {
		return r
	}
	for _, rule := range k.t.Deny {
		hit, err := matchRule(ctx, rule, k.c, k.st.resolved)
		if err != nil {
			return refusal(ReasonPolicyDenied, "deny rule %q failed, so the call is denied: %v", rule.Name, err)
		}
		if hit {
			return refusal(ReasonPolicyDenied, "denied by rule %q", rule.Name)
		}
	}
	if len(k.t.Allow) > 0 {
		allowed := false
		for _, rule := range k.t.Allow {
			if hit, err := matchRule(ctx, rule, k.c, k.st.resolved); err == nil && hit {
				allowed = true
				break
			}
		}
		if !allowed {
			return refusal(ReasonPolicyDenied, "no allow rule matches this call")
		}
	}
	plan, target, r := g.preview(ctx, k, k.st)
	if r != nil {
		return r
	}
	k.plan, k.target = plan, target
	return nil
}

func (g *Gate) resolve(ctx context.Context, k *call) (state, *Refusal) {
	if k.t.resolve == nil {
		return state{}, nil
	}
	ctx, span := g.step(ctx, "mcpsafe.resolve")
	res, r := g.runResolve(ctx, k)
	endStep(span, r)
	return res, r
}

func (g *Gate) runResolve(ctx context.Context, k *call) (state, *Refusal) {
	var res any
	err := safely(func() error {
		var err error
		res, err = k.t.resolve(ctx, k.c, k.in)
		return err
	})
	if err != nil {
		return state{}, asRefusal(err, ReasonResolverFailed)
	}
	if empty(res) {
		return state{}, refusal(ReasonResolverFailed, "the resolver found nothing for these arguments")
	}
	st, err := k.t.stateOf(res)
	if err != nil {
		return state{}, refusal(ReasonResolverFailed, "resolved state cannot be encoded: %v", err)
	}
	return st, nil
}

// preview asks the tool for its plan and digests what the approval binds:
// the resolved context, the targets with their state and the parts as
// rendered.
func (g *Gate) preview(ctx context.Context, k *call, st state) (_ Plan, _ string, r *Refusal) {
	ctx, span := g.step(ctx, "mcpsafe.preview")
	defer func() { endStep(span, r) }()
	var p Plan
	err := safely(func() error {
		var err error
		p, err = k.t.preview(ctx, k.c, k.in, st.v)
		return err
	})
	if err != nil {
		return Plan{}, "", asRefusal(err, ReasonPreviewFailed)
	}
	if strings.TrimSpace(p.Summary) == "" {
		return Plan{}, "", refusal(ReasonPreviewFailed, "the tool's preview has no summary")
	}
	// The binding covers the targets as the tool saw them, and the parts
	// as shown: redacted before they are rendered, so that no approver
	// sees a secret in a diff line either.
	targets := p.Targets
	p = redactPlan(p, k.secretsOf())
	views, r := partViews(p.Parts)
	if r != nil {
		return Plan{}, "", r
	}
	p.views = views
	if st.v == nil && len(targets) == 0 && len(views) == 0 {
		// Nothing resolved, no targets, no parts (a tool without a
		// Resolve): the digest of that encoding, computed once.
		return p, emptyTarget, nil
	}
	b, err := json.Marshal(struct {
		Resolved any             `json:"resolved"`
		Targets  []Target        `json:"targets"`
		Parts    []plan.PartView `json:"parts,omitempty"`
	}{st.v, targets, views})
	if err != nil {
		return Plan{}, "", refusal(ReasonResolverFailed, "resolved context cannot be encoded: %v", err)
	}
	// Not RFC 8785: the resolved context is the server's own data (inodes,
	// nanosecond times) that need not fit an IEEE double, and encoding/json
	// is deterministic for it (sorted map keys, exact integers).
	sum := sha256.Sum256(b)
	return p, hex.EncodeToString(sum[:]), nil
}

// emptyTarget is preview's digest when nothing was resolved and the plan
// has no targets and no parts: the same encoding, the same SHA-256.
var emptyTarget = func() string {
	b, _ := json.Marshal(struct {
		Resolved any             `json:"resolved"`
		Targets  []Target        `json:"targets"`
		Parts    []plan.PartView `json:"parts,omitempty"`
	}{})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}()

// secretsOf finds the call's secret values once: both previews (before
// asking, and again right before Execute, one level deeper on the stack)
// redact the same arguments.
func (k *call) secretsOf() journal.Secrets {
	if k.secrets == nil {
		s := journal.FindSecrets(k.c.Arguments, k.t.SecretFields)
		k.secrets = &s
	}
	return *k.secrets
}

// matchRule runs a rule; only an exact true with a nil error is a match. A
// panic is an error.
func matchRule(ctx context.Context, rule Rule, c Call, res Resolved) (bool, error) {
	if rule.Match == nil {
		return false, fmt.Errorf("rule %q has no Match", rule.Name)
	}
	var hit bool
	err := safely(func() error {
		var err error
		hit, err = rule.Match(ctx, c, res)
		return err
	})
	if err != nil {
		return false, err
	}
	return hit, nil
}

// safely runs f and turns a panic into an error.
func safely(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return f()
}
