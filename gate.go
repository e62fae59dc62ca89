package mcpsafe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpsafe/mcpsafe/internal/canon"
	"github.com/mcpsafe/mcpsafe/internal/seal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"
)

// TokenField is the argument a client sends an approval token in. The gate
// adds it to every gated tool's input schema and leaves it out of the digest.
const TokenField = "approval_token"

// Options configure a Gate.
type Options struct {
	// Audience names this server; every grant is bound to it, so a token
	// from another server is refused even if it shares the key. Required.
	Audience string
	// Mode is the default approval path; a Tool may override it.
	// The zero value is ModeAuto.
	Mode Mode
	// Keys seal grants. The zero Keys is a fresh random key per process.
	Keys Keys
	// Ledger records grants so each is redeemed at most once. Nil means an
	// in-memory ledger (one process only). Replicas share a store from
	// ledger/redis or ledger/postgres (ledger/sqlite: processes of one
	// host): import the backend you want; the gate links in none.
	Ledger Ledger
	// Journal receives the audit trail. Required: pass NoJournal to run
	// without one on purpose.
	Journal Journal
	// Observer, if set, is told about every answered call and every
	// approval decision, for metrics.
	Observer Observer
	// TracerProvider, if set, receives a span per gated call and per step
	// (decode, rules, resolve, preview, ask, redeem, recheck, journal,
	// execute), joined to the caller's trace when _meta carries W3C trace
	// context. Nil: no spans.
	TracerProvider trace.TracerProvider
	// Approver is the out-of-band channel for ModeChannel.
	Approver Approver
	// AllowTokenFor names the irreversible tools that may use one-time
	// tokens when the client cannot elicit. Exact names only.
	AllowTokenFor []OptIn
	// AllowGrantsFor names the irreversible tools whose Tool.Grants are
	// offered. Exact names only; reversible tools need no entry.
	AllowGrantsFor []string

	// TTL is how long an approval stays valid (default 5 minutes).
	TTL time.Duration
	// ElicitTimeout bounds an in-call elicitation (default 2 minutes).
	ElicitTimeout time.Duration
	// ChannelTimeout bounds how long one call waits for an out-of-band
	// decision (default: TTL). It may not exceed TTL: the request expires
	// with its grant, so a longer wait could never be used.
	ChannelTimeout time.Duration
	// ChannelWait is how long a channel call whose client sent no progress
	// token waits before it answers "approval_pending" with a handle to
	// call again with (default 45 seconds, under the 60 seconds most
	// clients give a request). It applies only when the Approver is a
	// ResumableApprover; calls with a progress token wait up to
	// ChannelTimeout and get progress notifications meanwhile.
	ChannelWait time.Duration
	// ProgressInterval is how often a waiting channel call sends a progress
	// notification when the client sent a progress token (default 10
	// seconds), so that clients resetting their timeout on progress wait.
	ProgressInterval time.Duration
	// MaxPending caps outstanding grants in all (default 10,000) and per
	// principal (default 100). Over a cap new requests are refused; no
	// outstanding grant is ever dropped to make room.
	MaxPending             int
	MaxPendingPerPrincipal int

	// GrantEndSweep is how often the gate looks in the ledger for standing
	// grants of this server that ended unseen (expired, or revoked from the
	// approval service or `mcpsafe grants revoke`) and journals their end
	// (default 30 seconds; negative: never in the background, only when a
	// call finds a grant ended, or when JournalGrantEnds is called). The
	// sweep runs while the ledger keeps standing grants, until Close.
	GrantEndSweep time.Duration

	// Clock returns the current time (default time.Now). Tests inject one.
	Clock func() time.Time
	// Principal names the caller of a request. The default is the
	// authenticated user's id from the transport, "anonymous" over HTTP
	// without auth, and "stdio" when there is no transport identity.
	Principal func(req *mcp.CallToolRequest) string
	// ClientAddrHeader names a request header that a trusted HTTP front end
	// (serverconf's MCP handler) sets to the caller's network address after
	// removing any copy the client sent. When set, the pending approvals of
	// an unauthenticated HTTP caller count against MaxPendingPerPrincipal per
	// address, not in one bucket that one client could fill for everyone.
	// Leave it empty unless the front end really strips the client's copy.
	ClientAddrHeader string
	// Logger receives operational logs (default: discard).
	Logger *slog.Logger
}

// NoJournal is a Journal that records nothing, for callers that decided to
// run without an audit trail.
var NoJournal Journal = noJournal{}

// Gate wraps dangerous tools so that they run only after approval.
type Gate struct {
	opts    Options
	ring    *seal.Keyring
	ledger  Ledger
	pending *pending
	// standing is the ledger's standing grants, nil when it keeps none.
	standing   ledger.StandingStore
	programs   sync.Map // CEL source -> cel.Program
	grantCache grantCache
	tracer     trace.Tracer

	mu    sync.Mutex
	tools map[string]*gatedTool

	stop stopState // shutdown: see gate_shutdown.go

	stopSweep chan struct{} // closed by Close
	sweepDone chan struct{} // closed when the sweep has stopped
	closeOnce sync.Once
}

type gatedTool struct {
	Tool
	mode     Mode
	policy   string // hash bound into grants
	schema   *jsonschema.Resolved
	optIn    *OptIn
	minAssur Assurance
	// grantsNamed: Grants may be offered (reversible, or irreversible and
	// named in AllowGrantsFor).
	grantsNamed bool
}

// New returns a Gate.
func New(opts Options) (*Gate, error) {
	if opts.Audience == "" {
		return nil, errors.New("mcpsafe: Options.Audience is required (this server's identity)")
	}
	if opts.Journal == nil {
		return nil, errors.New("mcpsafe: Options.Journal is nil: pass a journal, or mcpsafe.NoJournal to run without an audit trail")
	}
	if opts.Mode == "" {
		opts.Mode = ModeAuto
	}
	if !validMode(opts.Mode) {
		return nil, fmt.Errorf("mcpsafe: unknown mode %q (want auto, elicit, token or channel)", opts.Mode)
	}
	if opts.Mode == ModeChannel && opts.Approver == nil {
		return nil, errors.New("mcpsafe: mode channel needs Options.Approver")
	}
	seen := map[string]bool{}
	for _, o := range opts.AllowTokenFor {
		if o.Tool == "" || o.Tool != trimName(o.Tool) {
			return nil, fmt.Errorf("mcpsafe: AllowTokenFor entry %q is not an exact tool name", o.Tool)
		}
		if seen[o.Tool] {
			return nil, fmt.Errorf("mcpsafe: AllowTokenFor names %q twice", o.Tool)
		}
		seen[o.Tool] = true
	}
	setDefault(&opts.TTL, 5*time.Minute)
	setDefault(&opts.ElicitTimeout, 2*time.Minute)
	if err := checkChannelTimes(&opts); err != nil {
		return nil, err
	}
	setDefault(&opts.MaxPending, 10_000)
	setDefault(&opts.MaxPendingPerPrincipal, 100)
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Principal == nil {
		opts.Principal = defaultPrincipal
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ring := opts.Keys.ring
	if ring == nil {
		var err error
		if ring, err = seal.RandomKeyring(); err != nil {
			return nil, err
		}
	}
	l := opts.Ledger
	if l == nil {
		l = ledger.NewMemory(opts.MaxPending)
	}
	if opts.TracerProvider != nil {
		opts.Journal = tracedJournal{j: opts.Journal, t: newTracer(opts.TracerProvider)}
	}
	for _, n := range opts.AllowGrantsFor {
		if n == "" || n != trimName(n) {
			return nil, fmt.Errorf("mcpsafe: AllowGrantsFor entry %q is not an exact tool name", n)
		}
	}
	setDefault(&opts.GrantEndSweep, 30*time.Second)
	standing := l.Standing()
	g := &Gate{
		standing:  standing,
		opts:      opts,
		ring:      ring,
		ledger:    l,
		pending:   newPending(opts.MaxPending, opts.MaxPendingPerPrincipal),
		tools:     map[string]*gatedTool{},
		tracer:    newTracer(opts.TracerProvider),
		stopSweep: make(chan struct{}),
		sweepDone: make(chan struct{}),
	}
	if standing != nil && opts.GrantEndSweep > 0 {
		go g.sweepEnds(opts.GrantEndSweep)
	} else {
		close(g.sweepDone)
	}
	return g, nil
}

// Close stops the gate's background work (the sweep that journals grants'
// ends) and waits for it. It closes neither the ledger nor the journal,
// which belong to the caller. Calls may still be served afterwards.
func (g *Gate) Close() error {
	g.closeOnce.Do(func() { close(g.stopSweep) })
	<-g.sweepDone
	return nil
}

// sweepEnds journals unseen ends at once (what ended while no gate ran)
// and then every interval, until Close or until the ledger is closed.
func (g *Gate) sweepEnds(every time.Duration) {
	defer close(g.sweepDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), max(every, 10*time.Second))
		go func() {
			select {
			case <-g.stopSweep:
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err := g.JournalGrantEnds(ctx)
		cancel()
		if errors.Is(err, ledger.ErrClosed) {
			return
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			g.opts.Logger.Warn("ledger: could not look for ended standing grants; trying again later", "err", err)
		}
		select {
		case <-g.stopSweep:
			return
		case <-t.C:
		}
	}
}

func setDefault[T comparable](p *T, v T) {
	var zero T
	if *p == zero {
		*p = v
	}
}

func validMode(m Mode) bool {
	switch m {
	case ModeAuto, ModeElicit, ModeToken, ModeChannel:
		return true
	}
	return false
}

// trimName rejects names with surrounding space or wildcard characters: an
// opt-in is an exact tool name, never a pattern.
func trimName(s string) string {
	for _, r := range s {
		switch r {
		case ' ', '\t', '\n', '*', '?', '[', ']':
			return ""
		}
	}
	return s
}

func defaultPrincipal(req *mcp.CallToolRequest) string {
	if req.Extra == nil {
		return "stdio"
	}
	if req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
		return UserPrefix + req.Extra.TokenInfo.UserID
	}
	return "anonymous"
}

// Register adds t to server behind the gate. The gate owns the AddTool call:
// it sets the annotations, adds approval_token to the input schema, and
// wraps the handler so that Execute runs only after approval.
func (g *Gate) Register(server *mcp.Server, t Tool) error {
	gt, sdkTool, err := g.prepare(t)
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
			return &OptInError{"AllowTokenFor", o.Tool, "is not a gated tool of this server", g.optInCandidates(false)}
		}
		if !t.Irreversible {
			return &OptInError{"AllowTokenFor", o.Tool, "is reversible and needs no opt-in", g.optInCandidates(false)}
		}
	}
	for _, n := range g.opts.AllowGrantsFor {
		t, ok := g.tools[n]
		switch {
		case !ok:
			return &OptInError{"AllowGrantsFor", n, "is not a gated tool of this server", g.optInCandidates(true)}
		case !t.Irreversible:
			return &OptInError{"AllowGrantsFor", n, "is reversible and needs no opt-in", g.optInCandidates(true)}
		case t.Grants == nil:
			return &OptInError{"AllowGrantsFor", n, "has no grant policy (Tool.Grants)", g.optInCandidates(true)}
		}
	}
	return nil
}

func (g *Gate) prepare(t Tool) (*gatedTool, *mcp.Tool, error) {
	switch {
	case t.Name == "":
		return nil, nil, errors.New("mcpsafe: Tool.Name is empty")
	case t.Preview == nil:
		return nil, nil, fmt.Errorf("mcpsafe: tool %q has no Preview", t.Name)
	case t.Execute == nil:
		return nil, nil, fmt.Errorf("mcpsafe: tool %q has no Execute", t.Name)
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
	if minA >= AssuranceChannel && mode != ModeChannel {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q requires channel assurance but its mode is %s", t.Name, mode)
	}
	schemaMap, err := withTokenField(t.InputSchema, !t.OwnsTokenField)
	if err != nil {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q: %w", t.Name, err)
	}
	raw, _ := json.Marshal(schemaMap)
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q: input schema: %w", t.Name, err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcpsafe: tool %q: input schema: %w", t.Name, err)
	}
	gt := &gatedTool{Tool: t, mode: mode, schema: resolved, minAssur: minA}
	if g.opts.TracerProvider != nil {
		gt.Execute = tracedExecute(g.tracer, gt.Execute)
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
	// A result that may be "approval_required" or "approval_pending"
	// cannot match the tool's own output schema, and clients that validate
	// structured content would reject it.
	if mode == ModeElicit || (mode == ModeChannel && !g.resumable()) {
		sdkTool.OutputSchema = t.OutputSchema
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

// tokenAllowed reports whether t may use a one-time token now.
func (g *Gate) tokenAllowed(t *gatedTool, now time.Time) bool {
	if t.OwnsTokenField {
		return false // approval_token is the tool's own argument
	}
	if !t.Irreversible {
		return true
	}
	return t.optIn != nil && (t.optIn.Until.IsZero() || now.Before(t.optIn.Until))
}

// pending caps outstanding grants so that a flood of first calls cannot
// exhaust memory. Over a cap, new requests are refused; existing grants are
// never dropped to make room.
type pending struct {
	mu           sync.Mutex
	max, perUser int
	byNonce      map[string]pendingEntry
	byUser       map[string]int
}

type pendingEntry struct {
	principal string
	expires   time.Time
}

func newPending(max, perUser int) *pending {
	return &pending{max: max, perUser: perUser, byNonce: map[string]pendingEntry{}, byUser: map[string]int{}}
}

var (
	errTooManyPending     = errors.New("too many approvals are pending on this server")
	errTooManyPendingUser = errors.New("too many approvals are pending for this principal")
)

func (p *pending) add(nonce, principal string, expires, now time.Time) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.byNonce) >= p.max || p.byUser[principal] >= p.perUser {
		p.sweep(now)
	}
	if len(p.byNonce) >= p.max {
		return errTooManyPending
	}
	if p.byUser[principal] >= p.perUser {
		return errTooManyPendingUser
	}
	p.byNonce[nonce] = pendingEntry{principal, expires}
	p.byUser[principal]++
	return nil
}

func (p *pending) done(nonce string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(nonce)
}

func (p *pending) removeLocked(nonce string) {
	e, ok := p.byNonce[nonce]
	if !ok {
		return
	}
	delete(p.byNonce, nonce)
	if p.byUser[e.principal]--; p.byUser[e.principal] <= 0 {
		delete(p.byUser, e.principal)
	}
}

func (p *pending) sweep(now time.Time) {
	var expired []string
	for n, e := range p.byNonce {
		if !now.Before(e.expires) {
			expired = append(expired, n)
		}
	}
	for _, n := range expired {
		p.removeLocked(n)
	}
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
