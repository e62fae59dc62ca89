package approvalpage

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/passkeyreg"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// Enrolment: a passkey for the local page is registered by the person, from
// a terminal, with `mcpsafe approval-page enroll` (Enroll). It serves one
// registration page on loopback for as long as it runs, at an unguessable
// link it opens in the person's browser and prints on their terminal,
// writes the credential's public key to the passkeys file, and stops. The
// running approval page has no way to add a passkey: an agent that can
// click on it cannot enroll its own. The file is trusted as it is when the
// server starts (trust on enrolment): protect it like configuration.

// EnrollOptions configure Enroll.
type EnrollOptions struct {
	// File is the passkeys file: created (mode 0600), or added to.
	File string
	// Name is who the passkey belongs to, as the journal names the
	// approver (a-z 0-9 . _ @ + -).
	Name string
	// Addr is the loopback address to serve the registration page on;
	// "" is 127.0.0.1:0.
	Addr string
	// Open shows the link to the person; nil opens the browser
	// (OpenBrowser). The command also prints it on the terminal.
	Open func(link string) error
	// Logger gets the link and failures; nil discards them.
	Logger *slog.Logger
}

//go:embed enroll.html
var enrollHTML string

//go:embed enroll.js
var enrollJS []byte

var enrollTmpl = template.Must(template.New("enroll").Parse(enrollHTML))

// Enroll registers one passkey for the local approval page and adds it to
// opts.File. It returns when the passkey is stored, or when ctx ends
// (nothing stored).
func Enroll(ctx context.Context, opts EnrollOptions) (channel.RegisteredPasskey, error) {
	var none channel.RegisteredPasskey
	if opts.File == "" {
		return none, errors.New("approval page: enroll needs the passkeys file to write")
	}
	if _, err := identity.Key(opts.Name); err != nil {
		return none, fmt.Errorf("approval page: enroll: the name: %v", err)
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if err := CheckAddr(opts.Addr); err != nil {
		return none, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Open == nil {
		var l *Launcher
		opts.Open = func(link string) error {
			var err error
			l, err = OpenBrowser(link)
			return err
		}
		defer func() {
			if l != nil {
				l.Remove()
			}
		}()
	}
	var reg *channel.PasskeyRegistry
	if _, err := os.Stat(opts.File); err == nil {
		if reg, err = LoadPasskeys(opts.File); err != nil {
			return none, err
		}
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return none, fmt.Errorf("approval page: enroll: %w", err)
	}
	base := "http://" + net.JoinHostPort(LocalRPID, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	if reg == nil {
		reg = &channel.PasskeyRegistry{RPID: LocalRPID, Origin: base, Passkeys: []channel.RegisteredPasskey{}}
	}
	wa, err := webauthn.New(&webauthn.Config{RPID: LocalRPID, RPDisplayName: "mcpsafe approval page", RPOrigins: []string{base}})
	if err != nil {
		ln.Close()
		return none, fmt.Errorf("approval page: enroll: %v", err)
	}
	e := &enrolment{opts: opts, wa: wa, reg: reg, base: base, secret: random(), done: make(chan channel.RegisteredPasskey, 1)}
	page := &Page{base: base} // for its guard: this host only, the headers
	mux := http.NewServeMux()
	mux.HandleFunc("GET /enroll/{secret}", e.show)
	mux.HandleFunc("GET /enroll.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Write(enrollJS)
	})
	mux.HandleFunc("POST /enroll/{secret}/begin", e.begin)
	mux.HandleFunc("POST /enroll/{secret}/finish", e.finish)
	srv := &http.Server{Handler: page.guardCSP(mux, "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"),
		ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	link := base + "/enroll/" + e.secret
	opts.Logger.Info("approval page: register a passkey at this link", "link", link)
	if err := opts.Open(link); err != nil {
		opts.Logger.Warn("approval page: could not open the browser; open the link yourself", "link", link, "err", err)
	}
	select {
	case k := <-e.done:
		return k, nil
	case <-ctx.Done():
		return none, ctx.Err()
	}
}

type enrolment struct {
	opts   EnrollOptions
	wa     *webauthn.WebAuthn
	base   string
	secret string
	done   chan channel.RegisteredPasskey

	mu      sync.Mutex
	reg     *channel.PasskeyRegistry
	session *webauthn.SessionData
	stored  bool
}

// allowed admits requests for this enrolment's link from its own page.
func (e *enrolment) allowed(w http.ResponseWriter, r *http.Request, post bool) bool {
	if !sameSecret(r.PathValue("secret"), e.secret) {
		http.Error(w, "no such enrolment", http.StatusNotFound)
		return false
	}
	if post && r.Header.Get("Origin") != e.base {
		http.Error(w, "refused: only the enrolment page itself registers a passkey", http.StatusForbidden)
		return false
	}
	return true
}

func (e *enrolment) user() passkeyreg.User {
	return passkeyreg.NewUser("mcpsafe local approver", e.opts.Name, e.reg, nil)
}

func (e *enrolment) show(w http.ResponseWriter, r *http.Request) {
	if !e.allowed(w, r, false) {
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	e.mu.Lock()
	stored := e.stored
	e.mu.Unlock()
	enrollTmpl.Execute(w, map[string]any{"Name": prompt.Quote(e.opts.Name), "Stored": stored})
}

func (e *enrolment) begin(w http.ResponseWriter, r *http.Request) {
	if !e.allowed(w, r, true) {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stored {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "a passkey was registered already; run the command again for another"})
		return
	}
	opts, sd, err := passkeyreg.Begin(e.wa, e.user())
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "passkey registration: " + wire.PasskeyError(err)})
		return
	}
	e.session = sd
	writeJSON(w, http.StatusOK, opts)
}

func (e *enrolment) finish(w http.ResponseWriter, r *http.Request) {
	if !e.allowed(w, r, true) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	e.mu.Lock()
	defer e.mu.Unlock()
	sd := e.session
	e.session = nil
	if sd == nil || e.stored {
		writeJSON(w, http.StatusConflict, map[string]string{"error": "no registration in progress; start again"})
		return
	}
	k, _, err := passkeyreg.Finish(e.wa, e.user(), *sd, r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "passkey refused: " + wire.PasskeyError(err)})
		return
	}
	next := *e.reg
	next.Passkeys = append(append([]channel.RegisteredPasskey(nil), e.reg.Passkeys...), k)
	if err := next.Save(e.opts.File); err != nil {
		e.opts.Logger.Warn("approval page: the passkey could not be stored", "file", e.opts.File, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the passkey could not be stored; nothing registered"})
		return
	}
	e.reg, e.stored = &next, true
	e.done <- k
	writeJSON(w, http.StatusOK, map[string]string{"registered": k.CredentialID, "name": k.Approver})
}
