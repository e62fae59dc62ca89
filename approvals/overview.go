package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// The overview: what waits now, and what this service and the gates whose
// journals it was given (ServiceOptions.Journals) did over the last day,
// per hour. Charts are SVG drawn here, with the numbers in a table beside
// them; every number links to the records it counts, so a chart never
// asks to be believed.

const (
	overviewHours = 24
	// maxListed bounds the records one record view lists; the count above
	// the list is always the full one.
	maxListed = 500
	// maxFilterBytes bounds a reason or kind in a record view's query.
	maxFilterBytes = 128
)

// series is one kind of thing a chart counts.
type series struct{ Key, Label string }

var (
	decisionSeries = []series{{channel.StatusApproved, "approved"}, {channel.StatusDenied, "denied"}, {channel.StatusExpired, "expired"}, {channel.StatusWithdrawn, "withdrawn"}}
	outcomeSeries  = []series{{kindExecuted, "executed"}, {kindFailed, "failed"}, {kindRefused, "refused"}, {kindAmbiguous, "ambiguous"}}
	grantSeries    = []series{{kindGrantUsed, "grant uses"}}
)

// Kinds of journal record the overview counts.
const (
	kindExecuted  = "executed"
	kindFailed    = "failed"
	kindRefused   = "refused" // refused, declined, cancelled, timeout: Reason holds the code
	kindAmbiguous = "ambiguous"
	kindGrantUsed = "grant-used"
)

// kindOf is the overview's kind of a journal record, "" for one it does
// not count. The charts and the record view both use it, so a number and
// the list behind its link cannot disagree.
func kindOf(rec *journal.Record) string {
	switch rec.Decision {
	case journal.Executed:
		return kindExecuted
	case journal.Failed:
		return kindFailed
	case journal.Ambiguous:
		return kindAmbiguous
	case journal.Refused, journal.Declined, journal.Cancelled, journal.Timeout:
		return kindRefused
	case journal.GrantUsed:
		return kindGrantUsed
	}
	return ""
}

// chart is one chart as the overview page draws it and the API returns it.
type chart struct {
	ID, Title, Desc string
	Series          []series
	Bars            []bar // one per hour, oldest first (or one per reason)
	Totals          []seg // per series, over the whole window
	Max             int
}

// bar is one column of a chart.
type bar struct {
	Label      string
	Start, End time.Time
	Segs       []seg // one per series, stacked bottom up
	Total      int
}

// seg is one count in a chart: a stacked part of a bar, or a total.
type seg struct {
	Key, Label string
	N          int
	Href       string // the records this number counts
	// Drawn geometry (SVG user units).
	X, Y, W, H int
}

// journalSource is the state of one journal the overview read.
type journalSource struct {
	Name    string `json:"name"` // the file's name
	Path    string `json:"path"`
	Records int    `json:"records"` // verified records in the file
	State   string `json:"state"`   // intact, writing, damaged, unreadable
	Note    string `json:"note,omitempty"`
}

// Source states.
const (
	srcIntact     = "intact"
	srcWriting    = "writing"    // the last line is incomplete: the writer is mid-write, or crashed
	srcDamaged    = "damaged"    // the chain does not verify: records after the damage are not counted
	srcUnreadable = "unreadable" // not opened or not read
)

type overviewData struct {
	User, CSRF   string
	Now          time.Time
	Since, Until time.Time
	Pending      int
	OldestWait   time.Duration
	Decided      int // human decisions (approved, denied) in the window
	Median, P90  time.Duration
	Decisions    chart
	JournalsOn   bool
	Sources      []journalSource
	Outcomes     chart
	Grants       chart
	Reasons      chart
}

// window is the last overviewHours whole UTC hours, the current one last.
func window(now time.Time) (since, until time.Time) {
	until = now.UTC().Truncate(time.Hour).Add(time.Hour)
	return until.Add(-overviewHours * time.Hour), until
}

func newChart(id, title string, ss []series, since time.Time, link func(key string, from, to time.Time) string) chart {
	c := chart{ID: id, Title: title, Series: ss}
	for h := 0; h < overviewHours; h++ {
		from := since.Add(time.Duration(h) * time.Hour)
		b := bar{Label: from.Format("15:04"), Start: from, End: from.Add(time.Hour)}
		for _, s := range ss {
			b.Segs = append(b.Segs, seg{Key: s.Key, Label: s.Label, Href: link(s.Key, b.Start, b.End)})
		}
		c.Bars = append(c.Bars, b)
	}
	until := since.Add(overviewHours * time.Hour)
	for _, s := range ss {
		c.Totals = append(c.Totals, seg{Key: s.Key, Label: s.Label, Href: link(s.Key, since, until)})
	}
	return c
}

// add counts one thing of series key at t; things outside the window or
// of no series are not counted.
func (c *chart) add(key string, t time.Time) {
	if len(c.Bars) == 0 || t.Before(c.Bars[0].Start) || !t.Before(c.Bars[len(c.Bars)-1].End) {
		return
	}
	b := &c.Bars[int(t.Sub(c.Bars[0].Start)/time.Hour)]
	for i := range b.Segs {
		if b.Segs[i].Key == key {
			b.Segs[i].N++
			b.Total++
			c.Totals[i].N++
			return
		}
	}
}

// Chart geometry, in SVG user units.
const (
	chartW, chartH = 720, 180
	plotLeft       = 34
	plotTop        = 10
	plotBottom     = 22 // room for the hour labels
	barGap         = 3
)

// layout sets each segment's rectangle and the chart's description.
func (c *chart) layout() {
	for _, b := range c.Bars {
		c.Max = max(c.Max, b.Total)
	}
	plotH := chartH - plotTop - plotBottom
	slot := (chartW - plotLeft) / max(1, len(c.Bars))
	for i := range c.Bars {
		b := &c.Bars[i]
		y := chartH - plotBottom
		for j := range b.Segs {
			s := &b.Segs[j]
			if s.N == 0 || c.Max == 0 {
				continue
			}
			h := int(math.Round(float64(s.N) * float64(plotH) / float64(c.Max)))
			h = max(h, 2) // a count of one is never invisible
			y -= h
			s.X, s.Y, s.W, s.H = plotLeft+i*slot+barGap/2, y, slot-barGap, h
		}
	}
	desc := fmt.Sprintf("Per UTC hour from %s to %s.", c.Bars[0].Start.Format("Jan 2 15:04"), c.Bars[len(c.Bars)-1].End.Format("Jan 2 15:04"))
	for _, t := range c.Totals {
		desc += fmt.Sprintf(" %s: %d.", t.Label, t.N)
	}
	c.Desc = desc
}

// YTicks are the value axis labels: 0, half and the maximum.
func (c chart) YTicks() []struct{ Y, N int } {
	if c.Max == 0 {
		return nil
	}
	plotH := chartH - plotTop - plotBottom
	out := []struct{ Y, N int }{{chartH - plotBottom, 0}}
	if c.Max >= 2 {
		half := c.Max / 2
		out = append(out, struct{ Y, N int }{chartH - plotBottom - half*plotH/c.Max, half})
	}
	return append(out, struct{ Y, N int }{plotTop, c.Max})
}

// XTicks label every third hour.
func (c chart) XTicks() []struct {
	X     int
	Label string
} {
	slot := (chartW - plotLeft) / max(1, len(c.Bars))
	var out []struct {
		X     int
		Label string
	}
	for i, b := range c.Bars {
		if i%3 == 0 {
			out = append(out, struct {
				X     int
				Label string
			}{plotLeft + i*slot + slot/2, b.Label})
		}
	}
	return out
}

func journalLink(kind, reason string, from, to time.Time) string {
	q := url.Values{"since": {from.Format(time.RFC3339)}, "until": {to.Format(time.RFC3339)}, "kind": {kind}}
	if reason != "" {
		q.Set("reason", reason)
	}
	return "/journal?" + q.Encode()
}

func decisionsLink(status string, from, to time.Time) string {
	q := url.Values{"since": {from.Format(time.RFC3339)}, "until": {to.Format(time.RFC3339)}, "status": {status}}
	return "/decisions?" + q.Encode()
}

// all returns copies of every record the service holds (none, and the
// error, when the store cannot be read).
func (s *Service) all() ([]record, error) {
	s.expireNow()
	ctx, cancel := storeCtx()
	defer cancel()
	return s.st.all(ctx)
}

func (s *Service) overview(now time.Time) (overviewData, error) {
	d := overviewData{Now: now.UTC()}
	recs, err := s.all()
	if err != nil {
		return d, err
	}
	d.Since, d.Until = window(now)
	d.Decisions = newChart("decisions", "Decisions at this service", decisionSeries, d.Since, decisionsLink)
	var waits []time.Duration
	for _, r := range recs {
		if r.Status == channel.StatusPending {
			d.Pending++
			d.OldestWait = max(d.OldestWait, now.Sub(r.Received))
			continue
		}
		d.Decisions.add(r.Status, r.DecidedAt)
		in := !r.DecidedAt.Before(d.Since) && r.DecidedAt.Before(d.Until)
		if in && (r.Status == channel.StatusApproved || r.Status == channel.StatusDenied) {
			waits = append(waits, r.DecidedAt.Sub(r.Received))
		}
	}
	d.Decided = len(waits)
	d.Median, d.P90 = percentile(waits, 50), percentile(waits, 90)
	d.Decisions.layout()

	d.JournalsOn = len(s.opts.Journals) > 0
	if !d.JournalsOn {
		return d, nil
	}
	link := func(kind string, from, to time.Time) string { return journalLink(kind, "", from, to) }
	d.Outcomes = newChart("outcomes", "Gate outcomes", outcomeSeries, d.Since, link)
	d.Grants = newChart("grants", "Standing grant uses", grantSeries, d.Since, link)
	reasons := map[string]int{}
	d.Sources = s.readJournals(func(_ int, rec *journal.Record) {
		k := kindOf(rec)
		d.Outcomes.add(k, rec.Time)
		d.Grants.add(k, rec.Time)
		if k == kindRefused && !rec.Time.Before(d.Since) && rec.Time.Before(d.Until) {
			reasons[rec.Reason]++
		}
	})
	d.Outcomes.layout()
	d.Grants.layout()
	d.Reasons = reasonChart(reasons, d.Since, d.Until)
	return d, nil
}

// reasonChart is one horizontal bar per refusal reason code, most first.
func reasonChart(counts map[string]int, since, until time.Time) chart {
	c := chart{ID: "reasons", Title: "Refusals by reason code"}
	for reason, n := range counts {
		c.Bars = append(c.Bars, bar{Label: reason, Start: since, End: until, Total: n,
			Segs: []seg{{Key: kindRefused, Label: reason, N: n, Href: journalLink(kindRefused, reason, since, until)}}})
		c.Max = max(c.Max, n)
	}
	sort.Slice(c.Bars, func(i, j int) bool {
		if c.Bars[i].Total != c.Bars[j].Total {
			return c.Bars[i].Total > c.Bars[j].Total
		}
		return c.Bars[i].Label < c.Bars[j].Label
	})
	const rowH, labelW = 22, 220
	for i := range c.Bars {
		s := &c.Bars[i].Segs[0]
		s.X, s.Y, s.H = labelW, i*rowH+4, rowH-8
		s.W = max(2, int(math.Round(float64(s.N)*float64(chartW-labelW-60)/float64(max(1, c.Max)))))
	}
	c.Desc = fmt.Sprintf("Refused calls from %s to %s, by reason code.", since.Format("Jan 2 15:04"), until.Format("Jan 2 15:04"))
	for _, b := range c.Bars {
		c.Desc += fmt.Sprintf(" %s: %d.", prompt.Visible(wire.Clip(b.Label)), b.Total)
	}
	return c
}

// Height is the reason chart's drawn height.
func (c chart) Height() int { return max(1, len(c.Bars)) * 22 }

// percentile is the nearest-rank p-th percentile of ds (0 when empty).
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	rank := int(math.Ceil(float64(p) / 100 * float64(len(s))))
	return s[max(0, rank-1)]
}

// readJournals reads every configured journal, read-only, calling each
// with the journal's index and every record that verified.
func (s *Service) readJournals(each func(i int, rec *journal.Record)) []journalSource {
	out := make([]journalSource, 0, len(s.opts.Journals))
	for i, path := range s.opts.Journals {
		src := journalSource{Name: filepath.Base(path), Path: path}
		sum, err := journal.ReadFile(path, func(rec *journal.Record) { each(i, rec) })
		src.Records = sum.Records
		var torn *journal.TornError
		var tamper *journal.TamperError
		switch {
		case err == nil:
			src.State = srcIntact
		case errors.As(err, &torn):
			src.State, src.Note = srcWriting, fmt.Sprintf("line %d is incomplete (being written, or a crash): the %d records before it are counted", torn.Line, sum.Records)
		case errors.As(err, &tamper):
			src.State, src.Note = srcDamaged, fmt.Sprintf("JOURNAL NOT INTACT: %v; only the %d records before the damage are counted", err, sum.Records)
		default:
			src.State, src.Note = srcUnreadable, fmt.Sprintf("could not be read: %v", err)
		}
		out = append(out, src)
	}
	return out
}

func (s *Service) overviewPage(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := s.overview(time.Now())
	if err != nil {
		storeDown(w)
		return
	}
	d.User, d.CSRF = sess.name, sess.csrf
	s.render(w, http.StatusOK, "overview.html", d)
}

// apiOverview is the overview for bots: the same numbers, with the links.
func (s *Service) apiOverview(w http.ResponseWriter, r *http.Request, _ string) {
	d, err := s.overview(time.Now())
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	hours := func(c chart) []map[string]any {
		var out []map[string]any
		for _, b := range c.Bars {
			h := map[string]any{"start": b.Start, "end": b.End}
			for _, sg := range b.Segs {
				h[sg.Key] = sg.N
			}
			out = append(out, h)
		}
		return out
	}
	totals := func(c chart) map[string]int {
		m := map[string]int{}
		for _, t := range c.Totals {
			m[t.Key] = t.N
		}
		return m
	}
	out := map[string]any{
		"now": d.Now, "since": d.Since, "until": d.Until,
		"pending":          map[string]any{"count": d.Pending, "oldest_wait_seconds": d.OldestWait.Seconds()},
		"decisions":        map[string]any{"hours": hours(d.Decisions), "totals": totals(d.Decisions)},
		"time_to_decision": map[string]any{"decisions": d.Decided, "median_seconds": d.Median.Seconds(), "p90_seconds": d.P90.Seconds()},
	}
	if d.JournalsOn {
		reasons := map[string]int{}
		for _, b := range d.Reasons.Bars {
			reasons[b.Label] = b.Total
		}
		gh := hours(d.Outcomes)
		for i, b := range d.Grants.Bars {
			gh[i][kindGrantUsed] = b.Segs[0].N
		}
		tot := totals(d.Outcomes)
		tot[kindGrantUsed] = d.Grants.Totals[0].N
		out["journal"] = map[string]any{"sources": d.Sources, "hours": gh, "totals": tot, "refusals_by_reason": reasons}
	}
	writeJSON(w, http.StatusOK, out)
}

// recordFilter is a record view's query: a half-open time range and what
// to list.
type recordFilter struct {
	Since, Until time.Time
	What         string // kind (journal) or status (decisions)
	Reason       string
}

func parseFilter(q url.Values, what string) (recordFilter, error) {
	var f recordFilter
	var err error
	if f.Since, err = time.Parse(time.RFC3339, q.Get("since")); err != nil {
		return f, errors.New("since must be an RFC 3339 time")
	}
	if f.Until, err = time.Parse(time.RFC3339, q.Get("until")); err != nil {
		return f, errors.New("until must be an RFC 3339 time")
	}
	f.What, f.Reason = q.Get(what), q.Get("reason")
	if len(f.What) > maxFilterBytes || len(f.Reason) > maxFilterBytes {
		return f, fmt.Errorf("%s and reason are at most %d bytes", what, maxFilterBytes)
	}
	return f, nil
}

func (f recordFilter) has(t time.Time) bool { return !t.Before(f.Since) && t.Before(f.Until) }

// journalRow is one journal record as the record view lists it.
type journalRow struct {
	Journal string
	Rec     journal.Record
	Args    string // redacted, compact
}

type recordsData struct {
	User, CSRF string
	Filter     recordFilter
	Sources    []journalSource
	Count      int // every match, even past maxListed
	Journal    []journalRow
	Decisions  []item
	Error      string
}

// journalRecords lists the journal records one overview number counts.
func (s *Service) journalRecords(w http.ResponseWriter, r *http.Request, sess *session) {
	d := recordsData{User: sess.name, CSRF: sess.csrf}
	f, err := parseFilter(r.URL.Query(), "kind")
	d.Filter = f
	switch {
	case err != nil:
		d.Error = err.Error()
	case len(s.opts.Journals) == 0:
		d.Error = "this service was not given any journal (approvals serve --journal PATH)"
	}
	if d.Error != "" {
		s.render(w, http.StatusBadRequest, "journal.html", d)
		return
	}
	d.Sources = s.readJournals(func(i int, rec *journal.Record) {
		k := kindOf(rec)
		if !f.has(rec.Time) || k == "" || f.What != "" && k != f.What || f.Reason != "" && rec.Reason != f.Reason {
			return
		}
		d.Count++
		if len(d.Journal) >= maxListed {
			return
		}
		row := journalRow{Journal: filepath.Base(s.opts.Journals[i]), Rec: *rec}
		// Redacted again on the way out, as an export does: a journal
		// from an older version, or edited, may hold a secret in clear.
		if clean := journal.Redact(rec.Args, nil); len(clean) > 0 {
			var b bytes.Buffer
			if json.Compact(&b, clean) == nil {
				row.Args = b.String()
			}
		}
		row.Rec.Args, row.Rec.Evidence = nil, nil
		d.Journal = append(d.Journal, row)
	})
	s.render(w, http.StatusOK, "journal.html", d)
}

// serviceDecisions lists the service's own decisions one number counts.
func (s *Service) serviceDecisions(w http.ResponseWriter, r *http.Request, sess *session) {
	d := recordsData{User: sess.name, CSRF: sess.csrf}
	f, err := parseFilter(r.URL.Query(), "status")
	d.Filter = f
	if err != nil {
		d.Error = err.Error()
		s.render(w, http.StatusBadRequest, "decisions.html", d)
		return
	}
	all, err := s.all()
	if err != nil {
		storeDown(w)
		return
	}
	sort.Slice(all, func(i, j int) bool { return all[i].DecidedAt.Before(all[j].DecidedAt) })
	for _, rec := range all {
		if rec.Status == channel.StatusPending || !f.has(rec.DecidedAt) || f.What != "" && rec.Status != f.What {
			continue
		}
		d.Count++
		if len(d.Decisions) < maxListed {
			d.Decisions = append(d.Decisions, itemOf(rec, sess.name))
		}
	}
	s.render(w, http.StatusOK, "decisions.html", d)
}

// pages are the signed-in pages a browser without a session is sent to
// the login form from (the API answers 401).
var pages = map[string]bool{"/overview": true, "/journal": true, "/decisions": true}

func (s *Service) overviewRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /overview", s.withSession(false, s.overviewPage))
	m.HandleFunc("GET /journal", s.withSession(false, s.journalRecords))
	m.HandleFunc("GET /decisions", s.withSession(false, s.serviceDecisions))
	m.HandleFunc("GET /api/overview", s.withBearer(s.apiOverview))
}
