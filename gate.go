package mcpsafe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/seal"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/tracing"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TokenField is the argument a client sends an approval token in. The gate
// adds it to every gated tool's input schema and leaves it out of the digest.
const TokenField = "approval_token"

// RequiresUserInteractionMeta is the tools/list _meta key by which Claude
// Code asks the user before every call of a tool (Options.RequireUserInteraction).
const RequiresUserInteractionMeta = "anthropic/requiresUserInteraction"

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
	Ledger ledger.Ledger
	// Journal receives the audit trail (a *journal.Journal, or any
	// journal.Appender). Required: pass journal.Discard to run without one
	// on purpose.
	Journal journal.Appender
	// Observer, if set, is told about every answered call and every
	// approval decision, for metrics.
	Observer journal.Observer
	// Tracer, if set, starts a span per gated call and per step (decode,
	// rules, resolve, preview, ask, redeem, recheck, journal, execute):
	// oteltracing.New(tp) (package tracing/oteltracing) gives them to
	// OpenTelemetry, joined to the caller's trace when _meta carries W3C
	// trace context. Nil: no spans.
	Tracer tracing.Tracer
	// Approver is the out-of-band channel: ModeChannel asks only it, and
	// ModeAuto asks it when no approval page is configured.
	Approver approver.Approver
	// ApproverLink, if set, is the address where a person decides a
	// request of Approver (for an `mcpsafe approvals serve`:
	// channel.ServiceLink). A client that declares URL-mode elicitation is
	// then sent there, as it is to the approval page; its "accept" only
	// means the person agreed to open it. The decision is still the
	// approver's, checked as every channel decision.
	ApproverLink func(r approver.Request) (string, error)
	// Page is the approval page a person opens in a browser (package
	// approvalpage serves one on the user's machine): ModePage asks only
	// it, and ModeAuto asks it first (see [ModePage]).
	Page approver.Page
	// Card is the MCP Apps approval card (package appcard has one): for
	// clients that declared the MCP Apps extension, ModeCard asks only it,
	// and ModeAuto asks it when no page or channel is configured and the
	// client cannot elicit, before tokens (see [ModeCard]).
	Card approver.Card
	// AllowTokenFor names the irreversible tools that may use one-time
	// tokens when the client cannot elicit. Exact names only.
	AllowTokenFor []OptIn
	// AllowGrantsFor names the irreversible tools whose Tool.Grants are
	// offered. Exact names only; reversible tools need no entry.
	AllowGrantsFor []string
	// GrantCEL evaluates the CEL of grant scopes: celscope.New() (package
	// grants/celscope, which links cel-go). Nil: the gate evaluates only
	// the scope it always offers, "exactly these arguments", and refuses to
	// register a tool whose GrantPolicy has Scopes.
	GrantCEL grants.Evaluator
	// RequireUserInteraction marks every gated tool in tools/list with
	// _meta["anthropic/requiresUserInteraction"]: true (the
	// RequiresUserInteractionMeta key). Claude Code (v2.1.199+) then asks
	// the user before each call of such a tool, even in its bypass mode,
	// and denies it in non-interactive runs: a second lock, kept by the
	// host, in front of the gate's own approval (two prompts in Claude
	// Code). Other clients ignore the key. Off by default: the gate's
	// approval is the one that binds the call; the host's prompt binds
	// nothing and only adds a click.
	RequireUserInteraction bool

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
	// resumable (has an Awaiter); calls with a progress token wait up to
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
	// Principal names the caller of a request. The default is "user:"
	// followed by the authenticated user's id from the transport,
	// "anonymous" over HTTP without auth, and "stdio" when there is no
	// transport identity.
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

// Gate wraps dangerous tools so that they run only after approval.
type Gate struct {
	opts    Options
	ring    *seal.Keyring
	ledger  ledger.Ledger
	pending *pending
	spent   spentHere // grants this gate saw spent: replays refused before any record
	// standing is the ledger's standing grants, nil when it keeps none.
	standing ledger.StandingStore
	// channel and page are the out-of-band paths, nil when not configured.
	channel, page *outOfBand
	cards         cardOutcomes // what approval cards decided
	programs      sync.Map     // scope CEL source -> grants.Match
	grantCache    grantCache
	tracer        tracing.Tracer

	mu    sync.Mutex
	tools map[string]*gatedTool

	stop stopState // shutdown: see gate_shutdown.go

	stopSweep chan struct{} // closed by Close
	sweepDone chan struct{} // closed when the sweep has stopped
	closeOnce sync.Once
}

type gatedTool struct {
	Tool     // without its Resolve, Preview and Execute: see steps
	steps    // the tool's functions
	mode     Mode
	policy   string                               // hash bound into grants
	schema   func() (*jsonschema.Resolved, error) // resolved once, on first need (prepare)
	fast     *fastSchema                          // nil: every call goes to schema
	optIn    *OptIn
	minAssur Assurance
	// grantsNamed: Grants may be offered (reversible, or irreversible and
	// named in AllowGrantsFor).
	grantsNamed bool
	// outSchema: the tool advertises its OutputSchema, so its refusals
	// carry no structured content (see refused).
	outSchema bool
}

// New returns a Gate.
func New(opts Options) (*Gate, error) {
	if opts.Audience == "" {
		return nil, errors.New("mcpsafe: Options.Audience is required (this server's identity)")
	}
	if opts.Journal == nil {
		return nil, errors.New("mcpsafe: Options.Journal is nil: pass a journal, or journal.Discard to run without an audit trail")
	}
	if opts.Mode == "" {
		opts.Mode = ModeAuto
	}
	if !validMode(opts.Mode) {
		return nil, fmt.Errorf("mcpsafe: unknown mode %q (want auto, elicit, token, channel, page or card)", opts.Mode)
	}
	if opts.Mode == ModeCard && opts.Card == nil {
		return nil, errors.New("mcpsafe: mode card needs Options.Card (appcard.New() is one)")
	}
	if opts.Mode == ModeChannel && opts.Approver == nil {
		return nil, errors.New("mcpsafe: mode channel needs Options.Approver")
	}
	if opts.Mode == ModePage && opts.Page == nil {
		return nil, errors.New("mcpsafe: mode page needs Options.Page (approvalpage.Listen serves one on this machine)")
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
	if opts.Tracer != nil {
		opts.Journal = tracedJournal{j: opts.Journal, t: opts.Tracer}
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
		cards:     cardOutcomes{store: l.Outcomes()},
		pending:   newPending(opts.MaxPending, opts.MaxPendingPerPrincipal),
		tools:     map[string]*gatedTool{},
		tracer:    newTracer(opts.Tracer),
		stopSweep: make(chan struct{}),
		sweepDone: make(chan struct{}),
	}
	g.channel = newOutOfBand(grantChannel, "the approval channel", opts.Approver)
	if g.channel != nil {
		g.channel.link = opts.ApproverLink
	}
	if opts.Page != nil {
		g.page = newOutOfBand(grantPage, "the approval page", opts.Page)
		g.page.page, g.page.link = opts.Page, opts.Page.Link
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
	case ModeAuto, ModeElicit, ModeToken, ModeChannel, ModePage, ModeCard:
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
		return identity.UserPrefix + req.Extra.TokenInfo.UserID
	}
	return "anonymous"
}
