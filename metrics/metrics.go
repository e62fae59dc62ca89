// Package metrics exposes what an mcpsafe gate does as Prometheus metrics:
// calls by tool and outcome, refusals by reason code, approvals pending, the
// time people take to decide, and the latency and health of the ledger, the
// journal and the upstream server.
//
// Label values are only ever tool names (registered by the server itself),
// fixed outcome words, reason codes and store names: never argument
// values, principals or sessions, which would leak into dashboards and let
// any caller grow the series without bound.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds one registry; a process has one per server.
type Metrics struct {
	reg       *prometheus.Registry
	calls     *prometheus.CounterVec
	approvals *prometheus.CounterVec
	refusals  *prometheus.CounterVec
	human     *prometheus.HistogramVec
	ledger    *prometheus.HistogramVec
	journal   *prometheus.HistogramVec
	upstream  *prometheus.HistogramVec
	up        *prometheus.GaugeVec
	channel   *prometheus.CounterVec
	pending   func() int
}

// latencyBuckets span a cached ledger hit to a slow fsync or upstream.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// humanBuckets span a click to a TTL.
var humanBuckets = []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600}

// New returns metrics registered in a fresh registry, with the Go and
// process collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpsafe_calls_total",
		Help: "Gated tool calls answered, by tool and outcome (executed, failed, refused, approval_required, approval_pending, input_required).",
	}, []string{"tool", "outcome"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpsafe_refusals_total",
		Help: "Refused gated calls by reason code (see SECURITY-MODEL.md, Reason codes).",
	}, []string{"reason"})
	m.human = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpsafe_human_decision_seconds",
		Help:    "Time from an approval request being issued to its answer being redeemed, by path (elicit, token, channel).",
		Buckets: humanBuckets,
	}, []string{"path"})
	m.ledger = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpsafe_ledger_duration_seconds",
		Help:    "Latency of ledger operations, by op (issue, redeem; for standing grants grant_put, grant_list, grant_use, grant_revoke, grant_ended, grant_claim_end) and result (ok, error).",
		Buckets: latencyBuckets,
	}, []string{"op", "result"})
	m.journal = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpsafe_journal_append_duration_seconds",
		Help:    "Latency of durable journal appends (write and fsync), by result (ok, error).",
		Buckets: latencyBuckets,
	}, []string{"result"})
	m.upstream = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "mcpsafe_upstream_duration_seconds",
		Help:    "Latency of tools/call to the upstream server (mcpsafe proxy), by result (ok, error).",
		Buckets: latencyBuckets,
	}, []string{"result"})
	m.up = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mcpsafe_component_up",
		Help: "1 when the component's last operation worked, 0 when it failed (component: journal, ledger, checkpoints, witness; server:NAME for a gateway server).",
	}, []string{"component"})
	m.approvals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpsafe_approvals_total",
		Help: "Approvals journaled, by tool, decision (client-accepted, token-redeemed, page-approved, channel-approved, ...) and assurance (client_relayed, local_page, channel, passkey).",
	}, []string{"tool", "decision", "assurance"})
	m.channel = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mcpsafe_channel_decisions_total",
		Help: "Approval service (mcpsafe approvals serve): requests that left pending, by status (approved, denied, expired, withdrawn).",
	}, []string{"status"})
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mcpsafe_pending_approvals",
		Help: "Approvals issued and not yet redeemed, expired or abandoned.",
	}, func() float64 {
		if m.pending == nil {
			return 0
		}
		return float64(m.pending())
	})
	m.reg.MustRegister(m.calls, m.approvals, m.refusals, m.human, m.ledger, m.journal, m.upstream, m.up, m.channel, pending,
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Registry is the registry the metrics live in, for adding more.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Serve listens on addr and serves /metrics until ctx ends. It returns the
// address it listens on (useful with port 0) once the listener is up.
func (m *Metrics) Serve(ctx context.Context, addr string) (net.Addr, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	stop := func() error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
	return ln.Addr(), stop, nil
}

// SetPending sets where the pending-approvals gauge reads from (a Gate's
// Pending method).
func (m *Metrics) SetPending(f func() int) { m.pending = f }

// CallDone implements journal.Observer.
func (m *Metrics) CallDone(tool, outcome, reason string) {
	m.calls.WithLabelValues(tool, outcome).Inc()
	if outcome == journal.OutcomeRefused {
		m.refusals.WithLabelValues(reason).Inc()
	}
}

// Approved implements journal.Observer.
func (m *Metrics) Approved(tool, decision, assurance string) {
	m.approvals.WithLabelValues(tool, decision, assurance).Inc()
}

// HumanDecision implements journal.Observer.
func (m *Metrics) HumanDecision(path string, d time.Duration) {
	m.human.WithLabelValues(path).Observe(d.Seconds())
}

// ChannelDecision records one request of the approval service leaving
// pending (channel.ServiceOptions.OnDecided). A person decided when the
// status is approved or denied; those feed the human-decision histogram
// under path "service".
func (m *Metrics) ChannelDecision(status string, waited time.Duration) {
	m.channel.WithLabelValues(status).Inc()
	if status == "approved" || status == "denied" {
		m.human.WithLabelValues("service").Observe(waited.Seconds())
	}
}

// Upstream records one upstream call.
func (m *Metrics) Upstream(d time.Duration, err error) {
	m.upstream.WithLabelValues(result(err)).Observe(d.Seconds())
}

// Up sets a component's health gauge.
func (m *Metrics) Up(component string, err error) {
	v := 1.0
	if err != nil {
		v = 0
	}
	m.up.WithLabelValues(component).Set(v)
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// Journal wraps j so that every append is timed and sets the health of
// the journal, its checkpoints and its witness deliveries. A capped
// refusal is not a failure of the journal. It takes the file journal
// itself, whose health it reads: what it reports is never lost behind
// another wrapper.
func (m *Metrics) Journal(j *journal.Journal) journal.Appender {
	m.Up("journal", nil)
	return &timedJournal{m: m, j: j}
}

type timedJournal struct {
	m *Metrics
	j *journal.Journal
}

func (t *timedJournal) Append(ctx context.Context, r journal.Record) error {
	start := time.Now()
	err := t.j.Append(ctx, r)
	if errors.Is(err, journal.ErrRefusalsCapped) || ctx.Err() != nil {
		t.m.journal.WithLabelValues("ok").Observe(time.Since(start).Seconds())
		return err
	}
	t.m.journal.WithLabelValues(result(err)).Observe(time.Since(start).Seconds())
	t.m.Up("journal", err)
	t.m.Up("checkpoints", t.j.CheckpointHealth())
	t.m.Up("witness", t.j.WitnessHealth())
	return err
}

// Ledger wraps l so that every operation is timed and sets the ledger's
// health.
func (m *Metrics) Ledger(l ledger.Ledger) ledger.Ledger {
	m.Up("ledger", nil)
	return &timedLedger{m: m, l: l}
}

type timedLedger struct {
	m *Metrics
	l ledger.Ledger
}

func (t *timedLedger) Issue(ctx context.Context, nonce string, expires time.Time) error {
	start := time.Now()
	err := t.l.Issue(ctx, nonce, expires)
	t.m.ledger.WithLabelValues("issue", result(err)).Observe(time.Since(start).Seconds())
	t.m.Up("ledger", err)
	return err
}

func (t *timedLedger) Redeem(ctx context.Context, nonce string) (bool, error) {
	start := time.Now()
	ok, err := t.l.Redeem(ctx, nonce)
	t.m.ledger.WithLabelValues("redeem", result(err)).Observe(time.Since(start).Seconds())
	t.m.Up("ledger", err)
	return ok, err
}

// Standing forwards the wrapped ledger's standing grants, timed like its
// other operations; nil when it keeps none.
func (t *timedLedger) Standing() ledger.StandingStore {
	s := t.l.Standing()
	if s == nil {
		return nil
	}
	return &timedStanding{m: t.m, s: s}
}

// Outcomes forwards the wrapped ledger's outcomes, timed like its other
// operations; nil when it keeps none.
func (t *timedLedger) Outcomes() ledger.OutcomeStore {
	o := t.l.Outcomes()
	if o == nil {
		return nil
	}
	return &timedOutcomes{m: t.m, o: o}
}

type timedOutcomes struct {
	m *Metrics
	o ledger.OutcomeStore
}

func (t *timedOutcomes) PutOutcome(ctx context.Context, id string, data []byte, expires time.Time) error {
	start := time.Now()
	err := t.o.PutOutcome(ctx, id, data, expires)
	t.m.ledger.WithLabelValues("outcome_put", result(err)).Observe(time.Since(start).Seconds())
	t.m.Up("ledger", err)
	return err
}

func (t *timedOutcomes) Outcome(ctx context.Context, id string) ([]byte, bool, error) {
	start := time.Now()
	data, ok, err := t.o.Outcome(ctx, id)
	t.m.ledger.WithLabelValues("outcome_get", result(err)).Observe(time.Since(start).Seconds())
	t.m.Up("ledger", err)
	return data, ok, err
}

type timedStanding struct {
	m *Metrics
	s ledger.StandingStore
}

func (t *timedStanding) observe(op string, start time.Time, err error) {
	t.m.ledger.WithLabelValues(op, result(err)).Observe(time.Since(start).Seconds())
	t.m.Up("ledger", err)
}

func (t *timedStanding) PutStanding(ctx context.Context, s ledger.Standing) error {
	start := time.Now()
	err := t.s.PutStanding(ctx, s)
	t.observe("grant_put", start, err)
	return err
}

func (t *timedStanding) StandingFor(ctx context.Context, scope string) ([]ledger.Standing, error) {
	start := time.Now()
	out, err := t.s.StandingFor(ctx, scope)
	t.observe("grant_list", start, err)
	return out, err
}

func (t *timedStanding) UseStanding(ctx context.Context, id string) (int, bool, error) {
	start := time.Now()
	left, ok, err := t.s.UseStanding(ctx, id)
	t.observe("grant_use", start, err)
	return left, ok, err
}

func (t *timedStanding) RevokeStanding(ctx context.Context, id string, r ledger.Revocation) (bool, error) {
	start := time.Now()
	ok, err := t.s.RevokeStanding(ctx, id, r)
	t.observe("grant_revoke", start, err)
	return ok, err
}

func (t *timedStanding) EndedStanding(ctx context.Context) ([]ledger.StandingEnd, error) {
	start := time.Now()
	out, err := t.s.EndedStanding(ctx)
	t.observe("grant_ended", start, err)
	return out, err
}

func (t *timedStanding) ClaimStandingEnd(ctx context.Context, id string) (ledger.StandingEnd, bool, error) {
	start := time.Now()
	e, ok, err := t.s.ClaimStandingEnd(ctx, id)
	t.observe("grant_claim_end", start, err)
	return e, ok, err
}
