package mcpsafe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpsafe/mcpsafe/internal/canon"
	"github.com/mcpsafe/mcpsafe/internal/optincheck"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Register adds t to server behind the gate. The gate owns the AddTool call:
// it sets the annotations, adds approval_token to the input schema, and
// wraps the handler so that Execute runs only after approval.
//
// Register (the function) is the typed form: arguments decoded into a
// struct, the input schema inferred from it, a typed resolved state.
func (g *Gate) Register(server *mcp.Server, t Tool) error {
	switch {
	case t.Preview == nil:
		return fmt.Errorf("mcpsafe: tool %q has no Preview", t.Name)
	case t.Execute == nil:
		return fmt.Errorf("mcpsafe: tool %q has no Execute", t.Name)
	}
	return g.register(server, t, untypedSteps(t))
}

func (g *Gate) register(server *mcp.Server, t Tool, s steps) error {
	gt, sdkTool, err := g.prepare(t, s)
	if err != nil {
		return err
	}
	g.mu.Lock()
	if _, dup := g.tools[t.Name]; dup {
		g.mu.Unlock()
		return fmt.Errorf("mcpsafe: tool %q registered twice", t.Name)
	}
	g.tools[t.Name] = gt
	g.mu.Unlock()
	server.AddTool(sdkTool, g.handler(gt))
	g.attachCard(server)
	return nil
}

// Remove takes gated tools off server and out of the gate, so that they
// can be registered again with a new definition (for example when an
// upstream server's tool list changes). Outstanding grants for a tool whose
// policy changed are void, because the policy hash differs.
func (g *Gate) Remove(server *mcp.Server, names ...string) {
	g.mu.Lock()
	for _, n := range names {
		delete(g.tools, n)
	}
	g.mu.Unlock()
	server.RemoveTools(names...)
}

// CheckOptIns reports an error when AllowTokenFor or AllowGrantsFor names a
// tool that is not registered, or one that is reversible, or (grants) one
// without a grant policy: an opt-in that does nothing is a typo waiting to
// bite. Call it after registering every tool.
func (g *Gate) CheckOptIns() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.opts.AllowTokenFor {
		t, ok := g.tools[o.Tool]
		if !ok {
			return &optincheck.Error{Option: "AllowTokenFor", Tool: o.Tool, Problem: "is not a gated tool of this server", Valid: g.optInCandidates(false)}
		}
		if !t.Irreversible {
			return &optincheck.Error{Option: "AllowTokenFor", Tool: o.Tool, Problem: "is reversible and needs no opt-in", Valid: g.optInCandidates(false)}
		}
	}
	for _, n := range g.opts.AllowGrantsFor {
		t, ok := g.tools[n]
		switch {
		case !ok:
			return &optincheck.Error{Option: "AllowGrantsFor", Tool: n, Problem: "is not a gated tool of this server", Valid: g.optInCandidates(true)}
		case !t.Irreversible:
			return &optincheck.Error{Option: "AllowGrantsFor", Tool: n, Problem: "is reversible and needs no opt-in", Valid: g.optInCandidates(true)}
		case t.Grants == nil:
			return &optincheck.Error{Option: "AllowGrantsFor", Tool: n, Problem: "has no grant policy (Tool.Grants)", Valid: g.optInCandidates(true)}
		}
	}
	return nil
}

// optInCandidates lists the tools an opt-in could name: the irreversible
// gated tools, and for grants only those with a grant policy. The caller
// holds g.mu.
func (g *Gate) optInCandidates(grants bool) []string {
	var out []string
	for name, t := range g.tools {
		if t.Irreversible && (!grants || t.Grants != nil) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func (g *Gate) prepare(t Tool, s steps) (*gatedTool, *mcp.Tool, error) {
	if t.Name == "" {
		return nil, nil, errors.New("mcpsafe: Tool.Name is empty")
	}
	mode := t.Mode
	if mode == "" {
		mode = g.opts.Mode
	}
	if !validMode(mode) {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q: unknown mode %q", t.Name, mode)
	}
	if mode == ModeChannel && g.opts.Approver == nil {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q uses mode channel but Options.Approver is nil", t.Name)
	}
	minA := t.MinAssurance
	if minA == 0 {
		minA = AssuranceClientRelayed
	}
	if minA > AssurancePasskey || minA < AssuranceClientRelayed {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q: unknown MinAssurance %d", t.Name, minA)
	}
	if mode == ModeCard && g.opts.Card == nil {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q uses mode card but Options.Card is nil", t.Name)
	}
	if mode == ModePage && g.opts.Page == nil {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q uses mode page but Options.Page is nil", t.Name)
	}
	// The minimum must be reachable by the path the tool takes.
	if reach := g.reachable(mode); minA > reach {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q requires %s assurance, but its mode %s reaches only %s", t.Name, minA, mode, reach)
	}
	schemaMap, err := withTokenField(t.InputSchema, !t.OwnsTokenField)
	if err != nil {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q: %w", t.Name, err)
	}
	raw, _ := json.Marshal(schemaMap)
	resolveSchema := func() (*jsonschema.Resolved, error) {
		var schema jsonschema.Schema
		if err := json.Unmarshal(raw, &schema); err != nil {
			return nil, fmt.Errorf("mcpsafe: tool %q: input schema: %w", t.Name, err)
		}
		resolved, err := schema.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("mcpsafe: tool %q: input schema: %w", t.Name, err)
		}
		return resolved, nil
	}
	// jsonschema-go is resolved on first need when the fast check models
	// the schema (its shape always resolves: TestPropertyFastSchemaAgrees
	// WithValidator resolves every one): decoding a jsonschema.Schema
	// leaves encoding/json's field cache of that type (hundreds of
	// objects) live for good, and every GC cycle marks it, a cost every
	// call of the process pays. A schema the fast check does not model
	// must resolve now, or the tool is not registered.
	fast := newFastSchema(schemaMap)
	schema := sync.OnceValues(resolveSchema)
	if fast == nil {
		if _, err := schema(); err != nil {
			return nil, nil, err
		}
	}
	// The Tool's own functions are the steps' to call: nothing reaches
	// them but through the steps.
	t.Resolve, t.Preview, t.Execute = nil, nil, nil
	gt := &gatedTool{Tool: t, steps: s, mode: mode, schema: schema, fast: fast, minAssur: minA}
	if g.opts.Tracer != nil {
		gt.execute = tracedExecute(g.tracer, gt.execute)
	}
	for i := range g.opts.AllowTokenFor {
		if g.opts.AllowTokenFor[i].Tool == t.Name {
			gt.optIn = &g.opts.AllowTokenFor[i]
		}
	}
	if t.Grants != nil {
		p := t.Grants
		if p.MaxTTL <= 0 || p.MaxUses < 2 || p.MaxUses > ledger.MaxStandingUses+1 {
			return nil, nil, fmt.Errorf("mcpsafe: tool %q: Grants needs MaxTTL > 0 and MaxUses in 2..%d", t.Name, ledger.MaxStandingUses+1)
		}
		if g.standing == nil {
			return nil, nil, fmt.Errorf("mcpsafe: tool %q offers standing grants, but the ledger (%T) keeps none (its Standing method returns nil)", t.Name, g.ledger)
		}
		if p.Scopes != nil && g.opts.GrantCEL == nil {
			return nil, nil, fmt.Errorf("mcpsafe: tool %q derives grant scopes (GrantPolicy.Scopes), which are CEL: set Options.GrantCEL to celscope.New() (package github.com/mcpsafe/mcpsafe/grants/celscope)", t.Name)
		}
		gt.grantsNamed = !t.Irreversible || slices.Contains(g.opts.AllowGrantsFor, t.Name)
	}
	gt.policy = policyHash(gt, raw)
	ann := &mcp.ToolAnnotations{Title: t.Title}
	if t.Annotations != nil {
		copied := *t.Annotations
		ann = &copied
	}
	// A gated tool changes something by definition; an irreversible one is
	// destructive whatever the author or an upstream server claimed.
	ann.ReadOnlyHint = false
	if t.Irreversible || ann.DestructiveHint == nil {
		destructive := t.Irreversible
		ann.DestructiveHint = &destructive
	}
	sdkTool := &mcp.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: json.RawMessage(raw),
		Annotations: ann,
	}
	if g.opts.RequireUserInteraction {
		sdkTool.Meta = mcp.Meta{RequiresUserInteractionMeta: true}
	}
	// A result that may be "approval_required" or "approval_pending"
	// cannot match the tool's own output schema, and clients that validate
	// structured content would reject it.
	if mode == ModeElicit || (mode == ModeChannel && !g.resumable()) || (mode == ModePage && g.page.awaiter == nil) {
		sdkTool.OutputSchema = t.OutputSchema
		gt.outSchema = t.OutputSchema != nil
	}
	return gt, sdkTool, nil
}

// withTokenField returns the schema as a JSON object with an optional string
// property approval_token (when add). Schemas with additionalProperties:false
// would otherwise reject the token. Without add, the schema must declare
// approval_token itself.
func withTokenField(schema any, add bool) (map[string]any, error) {
	if schema == nil {
		return nil, errors.New("input schema is nil")
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New("input schema is not a JSON object")
	}
	if m["type"] != "object" {
		return nil, errors.New(`input schema must have "type": "object"`)
	}
	props, _ := m["properties"].(map[string]any)
	if props == nil {
		if _, present := m["properties"]; present {
			return nil, errors.New("input schema properties is not an object")
		}
		props = map[string]any{}
	}
	if _, taken := props[TokenField]; taken && add {
		return nil, fmt.Errorf("input schema already has a property %q (a tool whose own argument it is sets OwnsTokenField)", TokenField)
	} else if !taken && !add {
		return nil, fmt.Errorf("OwnsTokenField is set but the input schema has no property %q", TokenField)
	}
	// The gate refuses arguments with two names equal under case folding,
	// and any case variant of the token field: a schema that needs one
	// could never be called.
	folded := map[string]string{}
	if add {
		folded[canon.FoldKey(TokenField)] = TokenField
	}
	for _, name := range slices.Sorted(maps.Keys(props)) {
		if other, dup := folded[canon.FoldKey(name)]; dup {
			return nil, fmt.Errorf("input schema properties %q and %q differ only in letter case; the gate refuses such arguments", other, name)
		}
		folded[canon.FoldKey(name)] = name
	}
	if !add {
		return m, nil
	}
	props[TokenField] = map[string]any{
		"type":        "string",
		"description": "One-time approval token returned by a previous call with the same arguments, after the user saw the plan.",
	}
	m["properties"] = props
	return m, nil
}

// policyHash digests everything about a tool's policy that a grant relies
// on. Rules are functions and cannot be hashed: their names stand in, so
// renaming, adding or removing a rule voids outstanding grants. What the
// tool says about itself (title, description, annotations, input schema) is
// part of it: an approval given while a tool described itself one way does
// not carry over to a tool that now says something else (an upstream
// server behind the proxy can re-announce its tools at any time).
func policyHash(t *gatedTool, schema []byte) string {
	names := func(rs []Rule) []string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.Name
		}
		return out
	}
	p := struct {
		Tool         string               `json:"tool"`
		Mode         Mode                 `json:"mode"`
		Irreversible bool                 `json:"irreversible"`
		MinAssurance Assurance            `json:"min_assurance"`
		Deny         []string             `json:"deny"`
		Allow        []string             `json:"allow"`
		Auto         []string             `json:"auto"`
		OptIn        bool                 `json:"opt_in"`
		OptInUntil   int64                `json:"opt_in_until"`
		Schema       string               `json:"schema"`
		Title        string               `json:"title"`
		Description  string               `json:"description"`
		Annotations  *mcp.ToolAnnotations `json:"annotations"`
		Grants       *grantPolicyHash     `json:"grants,omitempty"`
	}{
		Tool: t.Name, Mode: t.mode, Irreversible: t.Irreversible, MinAssurance: t.minAssur,
		Deny: names(t.Deny), Allow: names(t.Allow), Auto: names(t.AutoApprove),
		Schema: string(schema),
		Title:  t.Title, Description: t.Description, Annotations: t.Annotations,
	}
	if t.optIn != nil {
		p.OptIn = true
		if !t.optIn.Until.IsZero() {
			p.OptInUntil = t.optIn.Until.UnixMilli()
		}
	}
	if t.Grants != nil {
		p.Grants = &grantPolicyHash{
			MaxTTL: t.Grants.MaxTTL.Milliseconds(), MaxUses: t.Grants.MaxUses,
			ClientRelayed: t.Grants.ClientRelayed, Offered: t.grantsNamed,
			Scopes: t.Grants.ScopesBinding,
		}
	}
	b, _ := json.Marshal(p)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// grantPolicyHash is the part of a tool's grant policy bound into grants:
// lowering a ceiling, withdrawing grants or changing the scopes
// (GrantPolicy.ScopesBinding) voids grants made before.
type grantPolicyHash struct {
	MaxTTL        int64  `json:"max_ttl_ms"`
	MaxUses       int    `json:"max_uses"`
	ClientRelayed bool   `json:"client_relayed"`
	Offered       bool   `json:"offered"`
	Scopes        string `json:"scopes,omitempty"`
}

// Tools returns the names of the gated tools, sorted.
func (g *Gate) Tools() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	names := make([]string, 0, len(g.tools))
	for n := range g.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// reachable is the strongest assurance a tool of mode can get: a channel
// can vouch for passkeys, the approval page for a click on it, the client
// for a relayed answer. Auto takes the page, else the channel, when
// configured (the channel when the page cannot reach the tool's minimum).
func (g *Gate) reachable(mode Mode) Assurance {
	switch {
	case mode == ModeChannel, mode == ModeAuto && g.channel != nil:
		return AssurancePasskey
	case mode == ModePage, mode == ModeAuto && g.page != nil:
		return g.page.page.Assurance()
	}
	return AssuranceClientRelayed
}
