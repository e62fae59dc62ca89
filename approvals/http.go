package approvals

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/grants"
	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/planhtml"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

//go:embed web
var webFS embed.FS

var tmpl = template.Must(template.Must(template.New("").Funcs(template.FuncMap{
	"vis":   prompt.Visible,
	"join":  func(s []string) string { return strings.Join(s, ", ") },
	"when":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"short": func(t time.Time) string { return t.UTC().Format("Jan 2 15:04:05") },
	"dur":   duration,
	"fold":  func(n int) bool { return n > cardArgs },
	"op":    planhtml.OpClass,
}).ParseFS(webFS, "web/*.html")).Parse(planhtml.Templates)) // the plan's parts: internal/planhtml

// duration is a wait as a person reads it: tenths of a second under ten
// seconds, whole seconds above.
func duration(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func (s *Service) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(webFS, "web/static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("POST "+webhookPath, s.handleWebhook)

	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.withSession(true, s.logout))
	m.HandleFunc("GET /{$}", s.withSession(false, s.page))
	m.HandleFunc("GET /ui/fragment", s.withSession(false, s.fragment))
	m.HandleFunc("GET /ui/events", s.withSession(false, s.events))
	m.HandleFunc("POST /ui/requests/{id}/{action}", s.withSession(true, s.uiDecide))

	if s.pk != nil {
		s.passkeyRoutes(m)
	}
	if s.slack != nil {
		m.HandleFunc("POST "+slackInteractionsPath, s.slack.handleInteraction)
	}
	if s.oidc != nil {
		m.HandleFunc("GET /oidc/login", s.oidcStart)
		m.HandleFunc("GET /oidc/callback", s.oidcCallback)
	}
	m.HandleFunc("GET /api/requests", s.withBearer(s.apiList))
	m.HandleFunc("GET /api/requests/{id}", s.withBearer(s.apiGet))
	m.HandleFunc("POST /api/requests/{id}/{action}", s.withBearer(s.apiDecide))
	m.HandleFunc("POST /ui/grants/{id}/revoke", s.withSession(true, s.uiRevokeGrant))
	m.HandleFunc("GET /api/grants", s.withBearer(s.apiGrants))
	s.overviewRoutes(m)
	s.healthRoutes(m)
	m.HandleFunc("POST /api/grants/{id}/revoke", s.withBearer(s.apiRevokeGrant))
	s.mux = m
}

// item is one request as the UI and the JSON API show it.
type item struct {
	ID           string           `json:"id"`
	Tool         string           `json:"tool"`
	Summary      string           `json:"summary"`
	Details      []string         `json:"details"`
	Targets      []mcpsafe.Target `json:"targets"`
	Parts        []plan.PartView  `json:"parts,omitempty"`
	Arguments    json.RawMessage  `json:"arguments"` // in full, sensitive values redacted; null if the sender sent none
	ArgsDigest   string           `json:"args_digest"`
	Principal    string           `json:"principal"`
	Audience     string           `json:"audience"`
	Irreversible bool             `json:"irreversible"`
	Received     time.Time        `json:"received"`
	Deadline     time.Time        `json:"deadline"`
	Status       string           `json:"status"`
	Required     int              `json:"required_approvals"`
	Approvals    []string         `json:"approvals"`
	DeniedBy     string           `json:"denied_by,omitempty"`
	DecidedAt    time.Time        `json:"decided_at,omitzero"`
	Withdrawn    string           `json:"withdrawn,omitempty"` // why the gate took it back
	// Grants are the standing grants offered; Grant the one chosen.
	Grants       []approver.GrantOffer `json:"grants,omitempty"`
	Grant        string                `json:"grant,omitempty"`
	NeedsPasskey bool                  `json:"needs_passkey"` // approving takes a passkey on this call
	// Outcome says what became of the call, from the gates' journals
	// (ServiceOptions.Journals); empty when there is nothing to say.
	Outcome string `json:"outcome,omitempty"`
	// Slack says when Slack was not reached for this pending request
	// (slackNote).
	Slack string `json:"slack,omitempty"`

	// For the viewer.
	Mine        bool            `json:"-"` // the viewer asked for this call
	Voted       bool            `json:"-"`
	DeadlineMS  int64           `json:"-"`
	FirstDetail []string        `json:"-"` // shown at once
	MoreDetail  []string        `json:"-"` // behind a "show more" toggle, never dropped
	Args        []argRow        `json:"-"`
	Shown       []planhtml.Card `json:"-"` // the parts as the page shows them
	// Rev fingerprints what the card shows (page_window.go); Same marks a
	// card the tab shows as it is already: a live update sends a stub.
	Rev  string `json:"-"`
	Same bool   `json:"-"`
}

// Display limits on a card. Nothing past them is dropped: it is behind a
// toggle that says how much there is, and the JSON API has it all.
const (
	cardDetails   = 20  // plan lines shown before "N more"
	cardArgs      = 20  // arguments shown open; more start folded, with their count
	cardValueHead = 160 // characters of a long value shown before "show all N"
)

// argRow is one top-level argument as the page shows it.
type argRow struct {
	Key    string
	Value  string // a string argument as it is; anything else as compact JSON
	String bool
	Head   string // the start of a long value; "" when Value is short
	Size   int    // characters in Value
	// ShownBy is the number (from 1) of the plan part that shows this
	// argument in full; 0 when none does.
	ShownBy int
}

// argRows lists the top-level arguments in the order sent. A body that is
// not an object is shown as one row.
func argRows(raw json.RawMessage) []argRow {
	if len(raw) == 0 {
		return nil
	}
	var rows []argRow
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return []argRow{row("", raw)}
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			break
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		k, _ := kt.(string)
		rows = append(rows, row(k, v))
	}
	return rows
}

func row(key string, v json.RawMessage) argRow {
	r := argRow{Key: key}
	if json.Unmarshal(v, &r.Value) == nil {
		r.String = true
	} else {
		var b bytes.Buffer
		if json.Compact(&b, v) == nil {
			r.Value = b.String()
		} else {
			r.Value = string(v)
		}
	}
	runes := []rune(r.Value)
	r.Size = len(runes)
	if r.Size > 2*cardValueHead {
		r.Head = string(runes[:cardValueHead])
	}
	return r
}

// Missing is how many more approvals the request needs.
func (it item) Missing() int { return it.Required - len(it.Approvals) }

func itemOf(r record, viewer string) item {
	it := item{
		ID: r.Req.ID, Tool: r.Req.Tool, Summary: r.Req.Summary, Details: wire.NonNil(r.Req.Details),
		Targets: wire.NonNil(r.Req.Targets), ArgsDigest: r.Req.ArgsDigest, Principal: r.Req.Principal,
		Audience: r.Req.Audience, Irreversible: r.Req.Irreversible, Received: r.Received,
		Deadline: r.Deadline, Status: r.Status, Required: r.Required, Approvals: voters(&r),
		DecidedAt: r.DecidedAt, DeadlineMS: r.Deadline.UnixMilli(), Withdrawn: r.Withdrawn,
		Arguments: r.Req.Arguments, Args: shownBy(argRows(r.Req.Arguments), r.Req.Parts), Parts: r.Req.Parts, Shown: planhtml.Cards(r.Req.Parts),
		Grants: r.Req.Grants, Grant: r.Grant,
		NeedsPasskey: r.Req.MinAssurance == channel.AssurancePasskeyName,
		Slack:        slackNote(&r),
	}
	it.FirstDetail = it.Details
	if len(it.Details) > cardDetails {
		it.FirstDetail, it.MoreDetail = it.Details[:cardDetails], it.Details[cardDetails:]
	}
	if it.Approvals == nil {
		it.Approvals = []string{}
	}
	if r.DeniedBy != nil {
		it.DeniedBy = r.DeniedBy.By
	}
	it.Mine = identity.Same(viewer, r.Req.Principal)
	for _, a := range it.Approvals {
		if identity.Same(a, viewer) {
			it.Voted = true
		}
	}
	return it
}

type pageData struct {
	User    string
	CSRF    string
	Pending []item
	History []item
	Error   string
	// Standing grants, when the service was given the shared ledger.
	GrantsOn  bool
	Grants    []grants.Info
	GrantsErr string
	SSO       bool // the login page offers single sign-on
	// Passkeys: the page offers passkey registration and approval.
	Passkeys bool
	// The window of the pending list (page_window.go): Page of Pages,
	// PageSize requests each; PrevPage and NextPage are 0 when none.
	Page, Pages, PrevPage, NextPage, TotalPending int
	// HistoryRev fingerprints the history; HistorySame: the tab has it.
	HistoryRev  string
	HistorySame bool
}

func (s *Service) view(viewer, csrf string) (pageData, error) {
	p, h, err := s.snapshot()
	if err != nil {
		return pageData{}, err
	}
	d := pageData{User: viewer, CSRF: csrf, Pending: []item{}, History: []item{}}
	for _, r := range p {
		d.Pending = append(d.Pending, itemOf(r, viewer))
	}
	for _, r := range h {
		d.History = append(d.History, itemOf(r, viewer))
	}
	s.callOutcomes(d.History)
	s.addGrants(&d)
	return d, nil
}

func (s *Service) addGrants(d *pageData) {
	if s.opts.Grants != nil {
		d.GrantsOn = true
		list, err := s.liveGrants()
		if err != nil {
			d.GrantsErr = "the ledger could not be read; no grant is shown"
		}
		d.Grants = list
	}
}

func (s *Service) liveGrants() ([]grants.Info, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return grants.List(ctx, s.opts.Grants)
}

// revokeGrant ends one standing grant in the shared ledger: every replica
// stops honouring it before this returns. The ledger keeps who revoked it
// and through what, and a gate sharing the ledger journals the end with
// them (the service keeps no journal of its own).
func (s *Service) revokeGrant(id, who, via string) (grants.Info, *httpError) {
	if s.opts.Grants == nil {
		return grants.Info{}, fail(http.StatusNotFound, "this service was not given the servers' ledger")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ended, err := grants.Revoke(ctx, s.opts.Grants, who+" via "+via, func(g grants.Info) bool { return g.ID == id })
	if err != nil {
		return grants.Info{}, fail(http.StatusServiceUnavailable, "the ledger could not be reached; nothing was revoked")
	}
	if len(ended) != 1 {
		return grants.Info{}, fail(http.StatusNotFound, "no live grant %s", id)
	}
	return ended[0], nil
}

func (s *Service) uiRevokeGrant(w http.ResponseWriter, r *http.Request, sess *session) {
	g, herr := s.revokeGrant(r.PathValue("id"), sess.name, "the approval service page")
	if !strings.Contains(r.Header.Get("Accept"), "application/json") {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if herr != nil {
		writeJSON(w, herr.code, map[string]any{"error": herr.msg})
		return
	}
	writeJSON(w, http.StatusOK, g)
}

func (s *Service) apiGrants(w http.ResponseWriter, r *http.Request, _ string) {
	if s.opts.Grants == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "this service was not given the servers' ledger"})
		return
	}
	list, err := s.liveGrants()
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "the ledger could not be read"})
		return
	}
	if list == nil {
		list = []grants.Info{}
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Service) apiRevokeGrant(w http.ResponseWriter, r *http.Request, who string) {
	g, herr := s.revokeGrant(r.PathValue("id"), who, "the approval service API")
	if herr != nil {
		writeJSON(w, herr.code, map[string]any{"error": herr.msg})
		return
	}
	writeJSON(w, http.StatusOK, g)
}

// Browser side: login form, session cookie, CSRF token, Origin check.

func (s *Service) expectedOrigin(r *http.Request) string {
	if s.opts.Origin != "" {
		return s.opts.Origin
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// sameOrigin refuses a state-changing browser request that does not come
// from this site's own pages. Browsers send Origin on every POST; a
// missing one is refused rather than guessed.
func (s *Service) sameOrigin(r *http.Request) error {
	o := r.Header.Get("Origin")
	if o == "" {
		return fmt.Errorf("missing Origin header")
	}
	if o != s.expectedOrigin(r) {
		return fmt.Errorf("origin %q is not this site", o)
	}
	if sf := r.Header.Get("Sec-Fetch-Site"); sf != "" && sf != "same-origin" {
		return fmt.Errorf("cross-site request (Sec-Fetch-Site: %s)", sf)
	}
	return nil
}

func (s *Service) withSession(mutating bool, h func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.auth.session(r)
		if !ok {
			if r.Method == http.MethodGet && (r.URL.Path == "/" || pages[r.URL.Path]) {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "login required"})
			return
		}
		if mutating {
			if err := s.sameOrigin(r); err != nil {
				writeJSON(w, http.StatusForbidden, map[string]any{"error": "CSRF check failed: " + err.Error()})
				return
			}
			tok := r.Header.Get("X-CSRF-Token")
			if tok == "" {
				r.Body = http.MaxBytesReader(w, r.Body, 4096)
				tok = r.PostFormValue("csrf")
			}
			if tok == "" || !wire.SecretEqual([]byte(tok), []byte(sess.csrf)) {
				writeJSON(w, http.StatusForbidden, map[string]any{"error": "CSRF check failed: missing or wrong token"})
				return
			}
		}
		h(w, r, sess)
	}
}

func (s *Service) render(w http.ResponseWriter, code int, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	if d, ok := data.(pageData); ok {
		d.SSO, d.Passkeys = s.oidc != nil, s.pk != nil
		data = d
	}
	if err := tmpl.ExecuteTemplate(w, name, data); err != nil {
		fmt.Fprintf(w, "<p>template error</p>")
	}
}

func (s *Service) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.auth.session(r); ok {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "login.html", pageData{})
}

func (s *Service) login(w http.ResponseWriter, r *http.Request) {
	if err := s.sameOrigin(r); err != nil {
		s.render(w, http.StatusForbidden, "login.html", pageData{Error: "Refused: " + err.Error()})
		return
	}
	if blocked, wait := s.throttle.blocked(r); blocked {
		w.Header().Set("Retry-After", fmt.Sprint(int(wait/time.Second)))
		s.render(w, http.StatusTooManyRequests, "login.html", pageData{Error: "Too many failed attempts from this address; try again later."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	name, pass := r.PostFormValue("name"), r.PostFormValue("password")
	who, ok := s.auth.byToken(name, pass)
	if name == "" || !ok {
		s.throttle.failed(r)
		s.render(w, http.StatusUnauthorized, "login.html", pageData{Error: "Wrong name or password."})
		return
	}
	cookie, _, ok := s.auth.newSession(who)
	if !ok {
		s.render(w, http.StatusServiceUnavailable, "login.html", pageData{Error: "The approval store cannot be reached right now; try again in a moment."})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: cookie, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: strings.HasPrefix(s.expectedOrigin(r), "https:"),
		MaxAge: int(s.opts.SessionTTL / time.Second),
	})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Service) logout(w http.ResponseWriter, r *http.Request, _ *session) {
	s.auth.endSession(r)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (s *Service) page(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := s.pageView(sess.name, sess.csrf, pageOf(r), nil)
	if err != nil {
		storeDown(w)
		return
	}
	s.render(w, http.StatusOK, "page.html", d)
}

func (s *Service) fragment(w http.ResponseWriter, r *http.Request, sess *session) {
	d, err := s.pageView(sess.name, sess.csrf, pageOf(r), r.URL.Query())
	if err != nil {
		storeDown(w)
		return
	}
	s.render(w, http.StatusOK, "lists", d)
}

// storeDown answers a page the store could not be read for: nothing is
// shown rather than a list that may be stale.
func storeDown(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "2")
	http.Error(w, "The approval store cannot be reached right now; nothing can be shown or decided. Try again in a moment.", http.StatusServiceUnavailable)
}

// events streams a "change" event whenever any request changes, so every
// open page re-renders at once and stale buttons go away.
func (s *Service) events(w http.ResponseWriter, r *http.Request, _ *session) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	version, changed := s.changes()
	fmt.Fprintf(w, "retry: 2000\ndata: %d\n\n", version)
	fl.Flush()
	heartbeat := time.NewTicker(15 * time.Second)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		case <-heartbeat.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case <-changed:
			version, changed = s.changes()
			fmt.Fprintf(w, "data: %d\n\n", version)
		}
		fl.Flush()
	}
}

func (s *Service) uiDecide(w http.ResponseWriter, r *http.Request, sess *session) {
	rec, herr := s.decideAction(r, sess.name)
	if !strings.Contains(r.Header.Get("Accept"), "application/json") {
		// A plain form post (no JavaScript): back to the page.
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if herr != nil {
		writeJSON(w, herr.code, map[string]any{"error": herr.msg})
		return
	}
	writeJSON(w, http.StatusOK, itemOf(rec, sess.name))
}

func (s *Service) decideAction(r *http.Request, who string) (record, *httpError) {
	switch r.PathValue("action") {
	case "approve":
		// The standing grant chosen, from the page's form or the API's
		// query or form body: only an exact offered ID counts.
		return s.decide(r.PathValue("id"), who, true, r.FormValue("grant"))
	case "deny":
		return s.decide(r.PathValue("id"), who, false, "")
	default:
		return record{}, fail(http.StatusNotFound, "unknown action %q (approve or deny)", r.PathValue("action"))
	}
}

// JSON API for bots: bearer tokens only.

func (s *Service) withBearer(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The same budget of failed attempts as the login form: a bearer
		// token is the same secret as the password.
		if blocked, wait := s.throttle.blocked(r); blocked {
			tooMany(w, wait)
			return
		}
		who, ok := s.auth.bearer(r)
		if !ok {
			if r.Header.Get("Authorization") != "" {
				s.throttle.failed(r) // a guess; a request with no credentials is not
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpsafe approvals"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "bearer token required"})
			return
		}
		h(w, r, who)
	}
}

func (s *Service) apiList(w http.ResponseWriter, r *http.Request, who string) {
	if r.URL.Query().Has("page") && r.URL.Query().Get("status") == "" {
		// One window of the pending list, oldest first, as the page
		// has it: what a bot polling 10,000 requests should ask for.
		d, err := s.pageView(who, "", pageOf(r), nil)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"requests": d.Pending, "page": d.Page, "pages": d.Pages, "total": d.TotalPending})
		return
	}
	d, err := s.view(who, "")
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	switch r.URL.Query().Get("status") {
	case "", channel.StatusPending:
		writeJSON(w, http.StatusOK, map[string]any{"requests": d.Pending})
	case "all":
		writeJSON(w, http.StatusOK, map[string]any{"requests": append(d.Pending, d.History...)})
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "status must be pending or all"})
	}
}

func (s *Service) apiGet(w http.ResponseWriter, r *http.Request, who string) {
	s.expireNow()
	ctx, cancel := storeCtx()
	defer cancel()
	rec, err := s.st.get(ctx, r.PathValue("id"))
	switch {
	case errors.Is(err, errNotFound):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no such request"})
		return
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	it := []item{itemOf(rec, who)}
	if rec.Status != channel.StatusPending {
		s.callOutcomes(it)
	}
	writeJSON(w, http.StatusOK, it[0])
}

func (s *Service) apiDecide(w http.ResponseWriter, r *http.Request, who string) {
	rec, herr := s.decideAction(r, who)
	if herr != nil {
		writeJSON(w, herr.code, map[string]any{"error": herr.msg})
		return
	}
	writeJSON(w, http.StatusOK, itemOf(rec, who))
}

// DecisionWords says what became of a decided request, by whom and when,
// as the page shows it on the card and in the history.
func (it item) DecisionWords() string {
	at := it.DecidedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	switch it.Status {
	case channel.StatusApproved:
		if n := it.WithdrawnNote(); n != "" {
			// The gate reported that it did not run the approved call.
			return "Approved by " + strings.Join(it.Approvals, ", ") + " at " + at + ", not run: " + n
		}
		return "Approved by " + strings.Join(it.Approvals, ", ") + " at " + at
	case channel.StatusDenied:
		return "Denied by " + it.DeniedBy + " at " + at
	case channel.StatusExpired:
		return "Expired at " + at + ": nobody decided in time"
	case channel.StatusWithdrawn:
		if n := it.WithdrawnNote(); n != "" {
			return "Withdrawn (" + n + ") by the gate at " + at
		}
		return "Withdrawn by the gate at " + at
	}
	return ""
}
