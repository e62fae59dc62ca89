// Package serverconf turns the command-line options that every ready-made
// mcpsafe server shares (key file, ledger, journal, approval channel) into
// mcpsafe.Options, with the same startup checks everywhere: a shared ledger
// needs a shared key, channel approvals need both a URL and a secret.
package serverconf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/appcard"
	"github.com/mcpsafe/mcpsafe/approvalpage"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/grants/celscope"
	"github.com/mcpsafe/mcpsafe/internal/optin"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/mcpsafe/mcpsafe/mcphttp"
	"github.com/mcpsafe/mcpsafe/metrics"
	"github.com/mcpsafe/mcpsafe/tracing/oteltracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Config is the gate-related part of a server's command line.
type Config struct {
	Audience      string // required
	Mode          mcpsafe.Mode
	AllowTokenFor []mcpsafe.OptIn
	// AllowGrantsFor names irreversible tools whose standing grants are offered.
	AllowGrantsFor []string
	TTL            time.Duration
	ElicitTimeout  time.Duration
	// GrantEndSweep is mcpsafe.Options.GrantEndSweep.
	GrantEndSweep time.Duration
	KeyFile       string // empty: a random key for this process
	LedgerURL     string // empty or memory:...: in this process only
	JournalPath   string // empty: journal.DefaultPathFor(Audience, or Audience-hash(Instance))
	// Instance tells apart servers that share an audience but not a
	// journal (the proxy sets the upstream's command line or URL): it keys
	// the default journal path, so that two servers on default settings
	// can run side by side.
	Instance  string
	NoJournal bool // run without an audit journal (tests and demos only)
	// JournalSyncOutcome fsyncs each outcome record before the call's
	// answer (journal.WithSyncOutcome): two fsyncs per call instead of one.
	JournalSyncOutcome bool
	// JournalKeepLongValues keeps string arguments over
	// journal.LongValueBytes whole in the journal
	// (journal.WithKeepLongValues); by default each is its SHA-256 and size.
	JournalKeepLongValues bool
	// Checkpoints: signed checkpoints of the journal's head; off while
	// Checkpoints.KeyFile is empty.
	Checkpoints journal.Checkpoints
	// Rotation seals the journal's active file into a segment by size or
	// age; off when zero.
	Rotation journal.Rotation
	// MetricsAddr, when set, serves Prometheus metrics at
	// http://MetricsAddr/metrics (see package metrics).
	MetricsAddr string
	// OTLPEndpoint, when set, exports the gate's spans over OTLP/HTTP to
	// this URL (for example http://127.0.0.1:4318/v1/traces). Off when
	// empty, unless TracerProvider is set.
	OTLPEndpoint string
	// TracerProvider receives the gate's spans when OTLPEndpoint is empty
	// (tests, or a program with its own OpenTelemetry setup).
	TracerProvider trace.TracerProvider

	ApproverURL        string
	ApproverSecretFile string
	// ApproverPublicKey is the approval service's Ed25519 public key
	// (base64); when set, every channel approval must carry its signature.
	ApproverPublicKey string
	// ApproverPasskeysFile is a copy of the approval service's passkeys
	// file: passkey approvals are verified against its public keys.
	ApproverPasskeysFile string
	// ApproverPage is the approval service's origin (its --origin): a
	// client that declares URL-mode elicitation sends the person to the
	// request's card there (channel.ServiceLink).
	ApproverPage    string
	ApproverTimeout time.Duration // 0: as long as TTL; never longer
	// ApprovalPage, when set, serves the local approval page on this
	// loopback address (approvalpage.Listen): the page is then the first
	// approval path of mode auto, and mode page's only one.
	ApprovalPage string
	// ApprovalPagePasskeys is the passkeys file of the local page
	// (`mcpsafe approval-page enroll`): every approval on the page then
	// takes a user-verified passkey over the call.
	ApprovalPagePasskeys string
	// ApprovalCard offers the MCP Apps approval card (package appcard)
	// to clients that declare the extension: mode card's only path, and
	// mode auto's when no page or channel is configured and the client
	// cannot elicit. The flag --approval-card defaults to on.
	ApprovalCard bool
	// RequireUserInteraction marks the gated tools for Claude Code's own
	// prompt before every call (mcpsafe.Options.RequireUserInteraction).
	RequireUserInteraction bool
	ChannelWait            time.Duration // 0: the gate's default (45s)
	ProgressInterval       time.Duration // 0: the gate's default (10s)

	// CheckJournalPath, when set, vets the journal's absolute path (for
	// example: not inside a directory the agent can write).
	CheckJournalPath func(path string) error
	Logger           *slog.Logger

	MaxPending             int // 0: the gate's default
	MaxPendingPerPrincipal int // 0: the gate's default

	// ShutdownGrace is how long a call already running may take to finish
	// once the server is told to stop (SIGINT/SIGTERM); it is then
	// cancelled and journaled ambiguous. Used by the command, not Build.
	ShutdownGrace time.Duration
}

// DefaultShutdownGrace is --shutdown-grace's default.
const DefaultShutdownGrace = 5 * time.Second

// RegisterFlags binds the flags every gated server shares to c, so that
// `mcpsafe files` and `mcpsafe proxy` spell and document them the same way.
// c.Audience, if set, is the default of --audience.
func (c *Config) RegisterFlags(fl *flag.FlagSet) {
	positive(fl, &c.TTL, "ttl", 5*time.Minute, "how long an approval stays valid")
	positive(fl, &c.ElicitTimeout, "elicit-timeout", 2*time.Minute, "how long to wait for the user's answer")
	positive(fl, &c.GrantEndSweep, "grant-end-sweep", 30*time.Second, "how often to journal the end of standing grants that expired or were revoked from elsewhere (the approval service, mcpsafe grants revoke)")
	fl.StringVar(&c.KeyFile, "key-file", "", "key file for sealing approvals (default: a random key for this process)")
	fl.StringVar(&c.LedgerURL, "ledger", "memory:", "single-use ledger: memory:, file:PATH, redis://..., postgres://...")
	fl.StringVar(&c.JournalPath, "journal", "", "audit journal path (default: one per server in "+journal.DefaultDirRule()+", named after --audience and the roots, upstream or config; mcpsafe journal list shows them)")
	fl.BoolVar(&c.JournalSyncOutcome, "journal-sync-outcome", false, "fsync each call's outcome record before answering the call (default: its fsync joins the next record's, within 1 s; a machine crash in between leaves the call ambiguous in the journal)")
	fl.BoolVar(&c.JournalKeepLongValues, "journal-keep-long-values", false, "keep string arguments over 1 KiB (a written file's content) whole in the journal, secrets still redacted (default: each is recorded as its SHA-256 and size)")
	fl.StringVar(&c.Checkpoints.KeyFile, "journal-key", "", "checkpoint signer key `FILE` (from mcpsafe journal keygen), outside the journal's directory: the journal signs its head with it")
	fl.IntVar(&c.Checkpoints.Every, "checkpoint-every", journal.DefaultCheckpointEvery, "with --journal-key: sign a checkpoint every this many records")
	fl.DurationVar(&c.Checkpoints.Interval, "checkpoint-interval", journal.DefaultCheckpointInterval, "with --journal-key: sign new records at least this often")
	fl.StringVar(&c.Checkpoints.Witness, "checkpoint-witness", "", "with --journal-key: a second file, outside the journal's directory, that receives every checkpoint")
	fl.StringVar(&c.Checkpoints.WitnessURL, "journal-witness-url", "", "with --journal-key: an HTTP witness (mcpsafe journal witness serve, on another machine) that receives every checkpoint, in the background")
	fl.StringVar(&c.Checkpoints.WitnessTokenFile, "journal-witness-token-file", "", "with --journal-witness-url: `FILE` holding the witness's bearer token")
	fl.Func("journal-max-size", "rotate the journal: seal the active file into a segment PATH.FIRST-LAST once it reaches this `SIZE` (e.g. 64MiB); off when unset", func(v string) error {
		n, err := humanize.ParseBytes(v)
		if err != nil || n == 0 || n > 1<<62 {
			return errors.New("not a positive size (e.g. 64MiB, 1GiB)")
		}
		c.Rotation.MaxBytes = int64(n)
		return nil
	})
	positive(fl, &c.Rotation.MaxAge, "journal-max-age", 0, "rotate the journal: seal the active file once its first record is this old (e.g. 24h); off when unset")
	fl.StringVar(&c.MetricsAddr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics (for example 127.0.0.1:9464); off when empty")
	fl.StringVar(&c.OTLPEndpoint, "otlp-endpoint", "", "export OpenTelemetry spans of gated calls over OTLP/HTTP to this URL (e.g. http://127.0.0.1:4318/v1/traces); off when empty")
	fl.StringVar(&c.Audience, "audience", c.Audience, "this server's identity, bound into every approval (replicas share it)")
	fl.StringVar(&c.ApprovalPagePasskeys, "approval-page-passkeys", "", "the passkeys `FILE` of the approval page (mcpsafe approval-page enroll writes it): Approve then takes your passkey, user verified, over that call, and the journal says passkey")
	fl.StringVar(&c.ApprovalPage, "approval-page", "", "serve the local approval page on this loopback `ADDR` (127.0.0.1:0 picks a port): a person approves each call there, reached by URL elicitation when the client offers it, else in the browser this server opens ($BROWSER); first in mode auto, the only path in mode page")
	fl.BoolVar(&c.ApprovalCard, "approval-card", true, "offer the MCP Apps approval card (Approve/Deny in the chat) to clients that declare the MCP Apps extension and cannot elicit, before tokens; client-relayed assurance; --approval-card=false turns it off")
	fl.BoolVar(&c.RequireUserInteraction, "require-user-interaction", false, "mark the gated tools _meta[\"anthropic/requiresUserInteraction\"]: Claude Code then asks before every call of them too, even in its bypass mode, and denies them in non-interactive runs (a second prompt, the host's, before the gate's)")
	fl.StringVar(&c.ApproverURL, "approver-url", "", "webhook of the approval channel (mode channel)")
	fl.StringVar(&c.ApproverSecretFile, "approver-secret-file", "", "file holding the channel's HMAC secret")
	fl.StringVar(&c.ApproverPage, "approver-page", "", "the approval service's `ORIGIN` (https://approvals.example.com, its --origin): a client that declares URL-mode elicitation sends the person straight to the request there; the decision still comes signed through the webhook")
	fl.StringVar(&c.ApproverPasskeysFile, "approver-passkeys-file", "", "a copy of the approval service's passkeys file: passkey approvals are checked against its public keys (tools with MinAssurance passkey need it)")
	fl.StringVar(&c.ApproverPublicKey, "approver-public-key", "", "the approval service's Ed25519 public key (base64, printed by `mcpsafe approvals keygen`): every channel approval must carry its signature")
	positive(fl, &c.ApproverTimeout, "approver-timeout", 0, "how long one call waits for a channel decision (default and maximum: --ttl, since the request expires with its approval)")
	positive(fl, &c.ChannelWait, "channel-wait", 0, "mode channel: a client that sent no progress token gets an approval_pending answer with a handle after this long, and calls again with it (default 45s, or the whole wait when that is shorter)")
	positive(fl, &c.ProgressInterval, "progress-interval", 10*time.Second, "mode channel: how often a waiting call sends a progress notification (clients that reset their timeout on progress keep waiting)")
	positive(fl, &c.ShutdownGrace, "shutdown-grace", DefaultShutdownGrace, "on SIGINT/SIGTERM, how long a call already running may take to finish before it is cancelled and journaled ambiguous (pending approvals are withdrawn at once, and nothing new starts)")
	atLeastOne(fl, &c.MaxPending, "max-pending", 10_000, "cap on outstanding approvals in this process")
	atLeastOne(fl, &c.MaxPendingPerPrincipal, "max-pending-per-principal", 100, "cap on outstanding approvals per principal")
}

// positive registers a duration flag that refuses zero and negative
// values: in Config zero means "the default", so a --ttl 0 would otherwise
// silently become 5m. A def of 0 leaves the default to Build.
func positive(fl *flag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	if def > 0 {
		usage = fmt.Sprintf("%s (default %s)", usage, def)
	}
	fl.Func(name, usage, func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return errors.New("not a duration (e.g. 90s, 5m, 1h)")
		}
		if d <= 0 {
			return errors.New("must be positive")
		}
		*p = d
		return nil
	})
}

// atLeastOne registers an int flag that refuses values below 1.
func atLeastOne(fl *flag.FlagSet, p *int, name string, def int, usage string) {
	*p = def
	fl.Func(name, fmt.Sprintf("%s (default %d)", usage, def), func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("not a whole number")
		}
		if n < 1 {
			return errors.New("must be at least 1")
		}
		*p = n
		return nil
	})
}

// JournalName is the name the default journal path is keyed by: the
// audience, followed by a short hash of Instance when that is set.
func (c *Config) JournalName() string {
	if c.Instance == "" {
		return c.Audience
	}
	sum := sha256.Sum256([]byte(c.Instance))
	return c.Audience + "-" + hex.EncodeToString(sum[:4])
}

// openJournal opens cfg's journal. A journal has one writer: a named one
// in use is an error, while the default one of a server whose twin already
// runs (the same configuration in two MCP clients) is the next free slot
// (journal.DefaultSlotPath), with a note beside it saying whose it is.
func openJournal(cfg Config, jopts []journal.Option, created *bool) (*journal.Journal, string, error) {
	open := func(path string) (*journal.Journal, string, error) {
		path, err := filepath.Abs(path)
		if err != nil {
			return nil, "", err
		}
		if cfg.CheckJournalPath != nil {
			if err := cfg.CheckJournalPath(path); err != nil {
				return nil, "", err
			}
		}
		_, serr := os.Lstat(path)
		*created = errors.Is(serr, fs.ErrNotExist)
		j, err := journal.Open(path, jopts...)
		if err != nil && !errors.Is(err, journal.ErrInUse) && cfg.JournalPath == "" {
			err = defaultJournalError(path, err)
		}
		return j, path, err
	}
	if cfg.JournalPath != "" {
		j, path, err := open(cfg.JournalPath)
		if errors.Is(err, journal.ErrInUse) {
			return nil, "", fmt.Errorf("%w; every server needs its own --journal PATH", err)
		}
		return j, path, err
	}
	for n := 1; n <= journal.DefaultSlots; n++ {
		path, err := journal.DefaultSlotPath(cfg.JournalName(), n)
		if err != nil {
			return nil, "", defaultJournalError("", err)
		}
		j, path, err := open(path)
		if errors.Is(err, journal.ErrInUse) {
			continue
		}
		if err != nil {
			return nil, "", err
		}
		if werr := journal.WriteServerNote(path, cfg.serverNote()); werr != nil && cfg.Logger != nil {
			cfg.Logger.Warn("journal: could not note which server writes it", "path", path, "err", werr)
		}
		return j, path, nil
	}
	return nil, "", fmt.Errorf("journal: the %d default journals of %q are all in use by other servers: give this one its own --journal PATH or --audience NAME", journal.DefaultSlots, cfg.JournalName())
}

// serverNote says which server writes a default journal.
func (c *Config) serverNote() string {
	if c.Instance == "" {
		return "audience " + strconv.Quote(c.Audience)
	}
	return "audience " + strconv.Quote(c.Audience) + ", " + c.Instance
}

// Gate holds the options built from a Config and the stores they opened.
type Gate struct {
	Options     mcpsafe.Options
	JournalPath string // empty when running without a journal
	// Metrics is non-nil when MetricsAddr is set; the server points its
	// pending gauge at the gate (Metrics.SetPending) once it has one.
	Metrics     *metrics.Metrics
	MetricsAddr net.Addr // where the metrics listen
	// PageURL is where the local approval page listens, when it does.
	PageURL string
	closers []func() error
	// journalCreated: Build created the journal file (see Discard).
	journalCreated bool
}

// Close releases the journal and the ledger, newest first.
func (g *Gate) Close() error {
	var errs []error
	for i := len(g.closers) - 1; i >= 0; i-- {
		errs = append(errs, g.closers[i]())
	}
	g.closers = nil
	return errors.Join(errs...)
}

// Build checks cfg, opens the stores it names and returns the options for
// mcpsafe.New. On error nothing stays open.
func Build(ctx context.Context, cfg Config) (_ *Gate, err error) {
	if cfg.Audience == "" {
		return nil, errors.New("serverconf: an audience (this server's identity) is required")
	}
	g := &Gate{Options: mcpsafe.Options{
		Audience:       cfg.Audience,
		Mode:           cfg.Mode,
		AllowTokenFor:  cfg.AllowTokenFor,
		AllowGrantsFor: cfg.AllowGrantsFor,
		TTL:            cfg.TTL,
		ElicitTimeout:  cfg.ElicitTimeout,
		GrantEndSweep:  cfg.GrantEndSweep,

		RequireUserInteraction: cfg.RequireUserInteraction,
		Logger:                 cfg.Logger,
		// Every ready server may offer grants with scopes of its own
		// (files --grants, a proxy policy's grants).
		GrantCEL: celscope.New(),

		MaxPending:             cfg.MaxPending,
		MaxPendingPerPrincipal: cfg.MaxPendingPerPrincipal,
		// Only MCPHandler serves these servers over HTTP, and it always
		// replaces the client's copy of this header.
		ClientAddrHeader: mcphttp.ClientAddrHeader,
	}}
	defer func() {
		if err != nil {
			g.Close()
		}
	}()
	opts := &g.Options
	if cfg.KeyFile != "" {
		if opts.Keys, err = mcpsafe.LoadKeys(cfg.KeyFile); err != nil {
			return nil, err
		}
	}
	if cfg.LedgerURL != "" {
		store, err := ledger.Open(ctx, cfg.LedgerURL)
		if err != nil {
			return nil, err
		}
		g.closers = append(g.closers, store.Close)
		opts.Ledger = store
		if _, local := store.(*ledger.Memory); !local && opts.Keys == (mcpsafe.Keys{}) {
			return nil, errors.New("a shared ledger needs --key-file: every replica must seal with the same key, or no other replica could ever redeem an approval (create one with `mcpsafe keygen PATH`)")
		}
	}
	var fileJournal *journal.Journal // nil with --no-journal
	if cfg.NoJournal {
		opts.Journal = journal.Discard
	} else {
		var jopts []journal.Option
		if cfg.Checkpoints.KeyFile != "" {
			ck := cfg.Checkpoints
			if ck.Logger == nil {
				ck.Logger = cfg.Logger
			}
			jopts = append(jopts, journal.WithCheckpoints(ck))
		} else if cfg.Checkpoints.Witness != "" || cfg.Checkpoints.WitnessURL != "" || cfg.Checkpoints.WitnessTokenFile != "" {
			return nil, errors.New("--checkpoint-witness, --journal-witness-url and --journal-witness-token-file need --journal-key")
		}
		if cfg.Rotation != (journal.Rotation{}) {
			jopts = append(jopts, journal.WithRotation(cfg.Rotation))
		}
		if cfg.JournalSyncOutcome {
			jopts = append(jopts, journal.WithSyncOutcome(true))
		}
		if cfg.JournalKeepLongValues {
			jopts = append(jopts, journal.WithKeepLongValues(true))
		}
		j, path, err := openJournal(cfg, jopts, &g.journalCreated)
		if err != nil {
			return nil, err
		}
		g.closers = append(g.closers, j.Close)
		opts.Journal, fileJournal = j, j
		g.JournalPath = path
	}
	if cfg.ApproverPage != "" && cfg.ApproverURL == "" {
		return nil, errors.New("--approver-page needs --approver-url (the approval service's webhook)")
	}
	if cfg.ApprovalPagePasskeys != "" && cfg.ApprovalPage == "" {
		return nil, errors.New("--approval-page-passkeys needs --approval-page ADDR")
	}
	if cfg.ApprovalCard {
		opts.Card = appcard.New()
	} else if cfg.Mode == mcpsafe.ModeCard {
		return nil, errors.New("mode card needs the approval card (--approval-card)")
	}
	if cfg.ApprovalPage != "" && cfg.Mode == mcpsafe.ModeCard && cfg.Logger != nil {
		// Not an error: a proxy policy may still pin a tool to mode page.
		cfg.Logger.Warn("--approval-page is unused with --mode card: every call asks in the approval card (only a tool whose policy says mode page uses the page); drop --approval-page, or use --mode auto to take the page where the card cannot be shown")
	}
	if cfg.ApprovalPage != "" || cfg.Mode == mcpsafe.ModePage {
		if cfg.ApprovalPage == "" {
			return nil, errors.New("mode page needs --approval-page ADDR (127.0.0.1:0 picks a port)")
		}
		popts := approvalpage.Options{Addr: cfg.ApprovalPage, Logger: cfg.Logger}
		if cfg.ApprovalPagePasskeys != "" {
			reg, err := approvalpage.LoadPasskeys(cfg.ApprovalPagePasskeys)
			if err != nil {
				return nil, fmt.Errorf("--approval-page-passkeys: %w", err)
			}
			popts.Passkeys = reg
			for _, k := range reg.Passkeys {
				// What the page trusts, once, for the person to recognise.
				fmt.Fprintf(os.Stderr, "mcpsafe: approval page takes the passkey %s of %s\n", k.CredentialID, k.Approver)
			}
		}
		page, err := approvalpage.Listen(popts)
		if err != nil {
			return nil, fmt.Errorf("--approval-page: %w", err)
		}
		g.closers = append(g.closers, page.Close)
		opts.Page = page
		g.PageURL = page.URL()
		// Like "serving MCP on": the one line an operator looks for.
		fmt.Fprintf(os.Stderr, "mcpsafe: approval page on %s (loopback; each pending call gets its own link)\n", page.URL())
		opts.ChannelTimeout = cfg.ApproverTimeout
		opts.ChannelWait = cfg.ChannelWait
		opts.ProgressInterval = cfg.ProgressInterval
	}
	if cfg.ApproverURL != "" || cfg.ApproverSecretFile != "" || cfg.Mode == mcpsafe.ModeChannel {
		if cfg.ApproverURL == "" || cfg.ApproverSecretFile == "" {
			return nil, errors.New("channel approvals need both --approver-url and --approver-secret-file")
		}
		secret, err := channel.LoadSecretFile(cfg.ApproverSecretFile)
		if err != nil {
			return nil, err
		}
		wait, err := channelTimes(cfg)
		if err != nil {
			return nil, err
		}
		wopts := []channel.WebhookOption{channel.WithTimeout(wait)}
		if cfg.ApproverPublicKey != "" {
			pub, err := channel.ParsePublicKey(cfg.ApproverPublicKey)
			if err != nil {
				return nil, fmt.Errorf("--approver-public-key: %w", err)
			}
			wopts = append(wopts, channel.WithServiceKey(pub))
		}
		if cfg.ApproverPasskeysFile != "" {
			reg, err := channel.LoadPasskeyRegistry(cfg.ApproverPasskeysFile)
			if err != nil {
				return nil, fmt.Errorf("--approver-passkeys-file: %w", err)
			}
			wopts = append(wopts, channel.WithPasskeys(reg))
		}
		w, err := channel.NewWebhook(cfg.ApproverURL, secret, wopts...)
		if err != nil {
			return nil, err
		}
		if err := checkChannel(ctx, w, cfg.Logger); err != nil {
			return nil, err
		}
		opts.Approver = w
		if cfg.ApproverPage != "" {
			link, err := channel.ServiceLink(cfg.ApproverPage)
			if err != nil {
				return nil, fmt.Errorf("--approver-page: %w", err)
			}
			opts.ApproverLink = link
		}
		opts.ChannelTimeout = wait
		opts.ChannelWait = cfg.ChannelWait
		opts.ProgressInterval = cfg.ProgressInterval
	}
	tp := cfg.TracerProvider
	if cfg.OTLPEndpoint != "" {
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(cfg.OTLPEndpoint))
		if err != nil {
			return nil, fmt.Errorf("--otlp-endpoint: %w", err)
		}
		sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", cfg.Audience))))
		g.closers = append(g.closers, func() error {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			return sdk.Shutdown(sctx)
		})
		tp = sdk
	}
	if tp != nil {
		opts.Tracer = oteltracing.New(tp)
	}
	if cfg.MetricsAddr != "" {
		m := metrics.New()
		if opts.Ledger != nil {
			opts.Ledger = m.Ledger(opts.Ledger)
		}
		if fileJournal != nil {
			opts.Journal = m.Journal(fileJournal)
		}
		opts.Observer = m
		addr, stop, err := m.Serve(ctx, cfg.MetricsAddr)
		if err != nil {
			return nil, err
		}
		g.closers = append(g.closers, stop)
		g.Metrics, g.MetricsAddr = m, addr
	}
	return g, nil
}

// ParseOptIn reads one token opt-in (optin.Parse).
func ParseOptIn(v string) (mcpsafe.OptIn, error) { return optin.Parse(v) }

func parseOptIn(v string, now time.Time) (mcpsafe.OptIn, error) { return optin.ParseAt(v, now) }

// SharedLedger reports whether a ledger URL names a store other processes
// can reach (file, Redis, PostgreSQL); only the in-process memory store is
// private.
func SharedLedger(ledgerURL string) bool {
	scheme, _, _ := strings.Cut(ledgerURL, ":")
	scheme = strings.ToLower(scheme)
	return scheme != "" && scheme != "memory"
}

// channelTimes checks the channel's times against each other and returns
// how long one call waits for a decision. Values that would silently cut
// each other short are refused: a request expires with its approval after
// --ttl, so a longer --approver-timeout could never be used.
func channelTimes(cfg Config) (time.Duration, error) {
	ttl := cfg.TTL
	if ttl == 0 {
		ttl = 5 * time.Minute // the gate's default
	}
	switch {
	case ttl < 0 || cfg.ApproverTimeout < 0 || cfg.ChannelWait < 0 || cfg.ProgressInterval < 0:
		return 0, errors.New("--ttl, --approver-timeout, --channel-wait and --progress-interval must not be negative")
	case cfg.ApproverTimeout > ttl:
		return 0, fmt.Errorf("--approver-timeout %s is longer than --ttl %s: a channel request expires with its approval after --ttl, so the wait would end there; raise --ttl to at least %s or lower --approver-timeout", cfg.ApproverTimeout, ttl, cfg.ApproverTimeout)
	}
	wait := cfg.ApproverTimeout
	if wait == 0 {
		wait = ttl
	}
	if cfg.ChannelWait > wait {
		return 0, fmt.Errorf("--channel-wait %s is longer than the channel wait of %s (--approver-timeout, or --ttl when it is not set); lower --channel-wait", cfg.ChannelWait, wait)
	}
	return wait, nil
}
