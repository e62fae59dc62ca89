package approvalpage

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/planhtml"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

//go:embed page.html
var pageHTML string

var goneTmpl = template.Must(template.New("gone").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>No such approval request</title>
<style>body { font: 16px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 48rem; padding: 1.5rem; }
.state { font-weight: 600; padding: .75rem 1rem; border-radius: .35rem; background: #f8e5e5; }</style></head>
<body><h1>No such approval request</h1>
<p class="state" role="status">This link is wrong, or its request ended more than an hour ago. Nothing can be approved with it.</p>
<p>If a call is waiting for you, its page has its own link: ask the assistant to try again.</p></body></html>`))

var pageTmpl = template.Must(template.Must(template.New("page").Funcs(planhtml.Funcs()).Parse(pageHTML)).Parse(planhtml.Templates))

// view is what the template shows; every text in it was sanitized for a
// person (package prompt) and is escaped by html/template.
type view struct {
	Tool, Summary string
	Server        string // the server the call is for (its audience), quoted
	Details       []string
	Targets       [][]string      // name, state
	Shown         []planhtml.Card // the plan's parts (diffs, tables)
	PartsCSS      template.CSS
	Arguments     string // indented JSON, sanitized
	Principal     string
	Irreversible  bool
	ExpiresAt     string
	Left          string
	Form          string
	State         string // "" (undecided), approved, denied, withdrawn, expired
	Why           string
	Passkey       string // the WebAuthn request options, when Approve takes a passkey
	Runs          string // when an approved call runs (runsWhen)
	// PageOnly is the plan's part for this page alone (what would be
	// lost), sanitized; never sent anywhere else.
	PageOnlyTitle string
	PageOnly      string
}

func (p *Page) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a/{secret}", p.show)
	mux.HandleFunc("POST /a/{secret}", p.decide)
	if p.opts.Passkeys != nil {
		mux.HandleFunc("GET /passkey.js", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
			w.Write(passkeyJS)
		})
	}
	return p.guard(mux)
}

// guard answers only requests addressed to the page's own host (a page on
// another name that resolves to loopback is a DNS rebinding attempt), and
// sets the headers every answer carries.
func (p *Page) guard(next http.Handler) http.Handler {
	csp := "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	if p.opts.Passkeys != nil {
		csp += "; script-src 'self'" // passkey.js, and nothing inline
	}
	return p.guardCSP(next, csp)
}

func (p *Page) guardCSP(next http.Handler, csp string) http.Handler {
	host := strings.TrimPrefix(p.base, "http://")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		// The link is the secret: no Referer leaves the page; and with
		// "same-origin" (not "no-referrer") the page's own form POST carries
		// its Origin, which decide checks.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Frame-Options", "DENY")
		if r.Host != host {
			http.Error(w, "this page answers only at "+p.base, http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p *Page) lookup(r *http.Request) *pending {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byLink[r.PathValue("secret")]
}

func (p *Page) show(w http.ResponseWriter, r *http.Request) {
	e := p.lookup(r)
	if e == nil {
		p.renderGone(w)
		return
	}
	p.mu.Lock()
	e.unopened = "" // the page reached a browser after all
	p.mu.Unlock()
	// A link opened again after the decision says so plainly.
	p.render(w, e, p.alreadyDecided(e), http.StatusOK)
}

// alreadyDecided is what a decided page says when it is opened again or
// clicked again; "" while it is undecided.
func (p *Page) alreadyDecided(e *pending) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-e.done:
	default:
		return ""
	}
	what := "denied; nothing runs"
	switch {
	case e.withdrawn != "":
		what = "withdrawn (the server " + e.withdrawn + "); nothing runs"
	case e.approved && e.proof != nil:
		what = "approved with the passkey of " + prompt.Quote(e.proof.Approver) + "; " + runsWhen(e)
	case e.approved:
		what = "approved; " + runsWhen(e)
	}
	return "Already decided: " + what + " (at " + e.decidedAt.UTC().Format("15:04:05 MST") + "). This link decides nothing more; you can close this page."
}

// runsWhen says when an approved call runs, as it stood when the person
// clicked: at once when its call was still waiting; otherwise the
// assistant had been told the request is pending, and the call runs when
// it calls again with its handle, before the approval expires.
func runsWhen(e *pending) string {
	if e.runsNow {
		return "the call was waiting for this decision and runs now, once"
	}
	return "nothing has run yet: the assistant stopped waiting and was told the request is pending, so the call runs once when the assistant calls again (before " +
		e.req.ExpiresAt.Local().Format("15:04:05 MST") + ")"
}

// renderGone answers a link the page does not know: a wrong one, or one
// whose request ended long ago. It names no request.
func (p *Page) renderGone(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	goneTmpl.Execute(w, nil)
}

// decide takes the one decision of a page: from the page itself (its
// origin, its form token), before the request expires, once.
func (p *Page) decide(w http.ResponseWriter, r *http.Request) {
	e := p.lookup(r)
	if e == nil {
		p.renderGone(w)
		return
	}
	if r.Header.Get("Origin") != p.base || (r.Header.Get("Sec-Fetch-Site") != "" && r.Header.Get("Sec-Fetch-Site") != "same-origin") {
		http.Error(w, "refused: the decision must come from the approval page itself", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10) // a passkey assertion is a few KiB
	if err := r.ParseForm(); err != nil || !sameSecret(r.PostForm.Get("form"), e.form) {
		http.Error(w, "refused: the form is not this page's", http.StatusForbidden)
		return
	}
	var approved bool
	switch r.PostForm.Get("decision") {
	case "approve":
		approved = true
	case "deny":
	default:
		http.Error(w, "refused: the decision is approve or deny", http.StatusBadRequest)
		return
	}
	var proof *channel.PasskeyProof
	if approved && p.opts.Passkeys != nil {
		var err error
		if proof, err = p.verifyAssertion(e.req, r.PostForm.Get("assertion")); err != nil {
			// Nothing is decided: the person can try again, or deny.
			p.render(w, e, "Not approved: "+err.Error()+".", http.StatusForbidden)
			return
		}
	}
	p.mu.Lock()
	expired := !p.opts.Clock().Before(e.req.ExpiresAt)
	settled := !expired && p.settleProvedLocked(e, approved, "", proof)
	p.mu.Unlock()
	switch {
	case expired:
		p.render(w, e, "This request expired before the decision; nothing was approved.", http.StatusGone)
	case !settled:
		p.render(w, e, p.alreadyDecided(e)+" The second click changed nothing.", http.StatusConflict)
	default:
		p.render(w, e, "", http.StatusOK)
	}
}

func (p *Page) render(w http.ResponseWriter, e *pending, why string, status int) {
	now := p.opts.Clock()
	v := view{
		Tool: prompt.Quote(e.req.Tool), Summary: e.req.Summary, Details: e.req.Details, Server: serverShown(e.req.Audience),
		Principal: principalShown(e.req.Principal), Irreversible: e.req.Irreversible,
		ExpiresAt: e.req.ExpiresAt.UTC().Format(time.RFC3339), Form: e.form, Why: why,
		Shown: planhtml.Cards(e.req.Parts), PartsCSS: template.CSS(planhtml.CSS),
	}
	if p.opts.Passkeys != nil {
		v.Passkey = p.requestOptions(e.req)
	}
	if po := e.req.PageOnly; po != nil && len(po.Lines) > 0 {
		lines := po.Lines[:min(len(po.Lines), plan.PageOnlyLines)]
		v.PageOnlyTitle = prompt.Text(po.Title)
		if !po.Modified.IsZero() {
			v.PageOnlyTitle += " · modified " + ago(now.Sub(po.Modified)) + " (" + po.Modified.Local().Format("15:04 MST, Jan 2") + ")"
		}
		v.PageOnly = prompt.Text(strings.Join(lines, "\n"))
	}
	if left := e.req.ExpiresAt.Sub(now).Round(time.Second); left > 0 {
		v.Left = left.String()
	}
	for _, t := range e.req.Targets {
		v.Targets = append(v.Targets, []string{prompt.Text(t.Name), prompt.Text(t.State)})
	}
	if len(e.req.Arguments) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, e.req.Arguments, "", "  ") == nil {
			v.Arguments = prompt.Text(buf.String())
		} else {
			v.Arguments = prompt.Text(string(e.req.Arguments))
		}
	}
	p.mu.Lock()
	select {
	case <-e.done:
		switch {
		case e.withdrawn != "":
			v.State = "withdrawn"
			if v.Why == "" {
				v.Why = "The server " + e.withdrawn + "; nothing will run."
			}
		case e.approved:
			v.State = "approved"
			v.Runs = runsWhen(e)
		default:
			v.State = "denied"
		}
	default:
		if !now.Before(e.req.ExpiresAt) {
			v.State = "expired"
		}
	}
	p.mu.Unlock()
	if v.State != "" {
		v.Left = "" // what is left of a decided request's time is no news
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := pageTmpl.Execute(w, v); err != nil {
		p.opts.Logger.Warn("approval page: rendering failed", "err", err)
	}
}

// ago says how long ago something was, in the largest whole unit.
func ago(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one + " ago"
		}
		return fmt.Sprintf("%d %ss ago", n, one)
	}
	switch {
	case d < 0:
		return "in the future (its clock is ahead of this machine's)"
	case d < time.Minute:
		return "less than a minute ago"
	case d < time.Hour:
		return unit(int64(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return unit(int64(d/time.Hour), "hour")
	}
	return unit(int64(d/(24*time.Hour)), "day")
}

// serverShown names the server a call is for: its audience, quoted; none
// when it has none.
func serverShown(audience string) string {
	if audience == "" {
		return ""
	}
	return prompt.Quote(audience)
}

// principalShown is the requester a person reads: none for the gate's
// placeholders of "no identity" (a stdio client, HTTP without auth).
func principalShown(p string) string {
	if p == "stdio" || p == "anonymous" {
		return ""
	}
	return prompt.Quote(p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
