package approvals

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/passkeyreg"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// PasskeyOptions turns on passkeys in the approval service: approvers
// register them (after logging in), and a request that requires one can
// only be approved with an assertion for that exact call.
type PasskeyOptions struct {
	// File keeps the registered passkeys (a PasskeyRegistry, mode 0600);
	// "" keeps them in memory only. Gates load a copy to verify approvals.
	File string
	// Tools require a passkey approval whatever the gate asks (the gate's
	// MinAssurance AssurancePasskey asks for it per request too).
	Tools []string
}

type passkeys struct {
	wa    *webauthn.WebAuthn
	file  string
	tools map[string]bool

	// shared, when set, is the store's passkey registry (PostgreSQL): the
	// source of truth, read again at each ceremony; file is then a copy
	// for gates, rewritten at start and by each registration here.
	shared passkeyStore
	flows  flowStore // ceremonies in progress (the store's)

	mu    sync.Mutex
	reg   channel.PasskeyRegistry
	flags map[string]webauthn.CredentialFlags // by credential id, kept for the backup-state checks
}

// ceremonyTTL bounds a passkey ceremony in progress.
const ceremonyTTL = 10 * time.Minute

// attach makes the store keep the ceremonies and, when it has a passkey
// registry, the passkeys: those of --passkeys-file are added to it (a
// first start on a shared store), and the file becomes a copy of it.
func (p *passkeys) attach(st store) error {
	p.flows = st.flows()
	p.shared = st.passkeys()
	if p.shared == nil {
		return nil
	}
	ctx, cancel := storeCtx()
	defer cancel()
	for _, k := range p.reg.Passkeys {
		if err := p.shared.addPasskey(ctx, k, p.flags[k.CredentialID]); err != nil {
			return fmt.Errorf("channel: passkeys: adding %s's passkeys from %s to the store: %w", k.Approver, p.file, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refreshLocked(ctx)
}

// refreshLocked reads the shared registry again (no-op without one), and
// keeps the file a copy of it.
func (p *passkeys) refreshLocked(ctx context.Context) error {
	if p.shared == nil {
		return nil
	}
	keys, flags, err := p.shared.listPasskeys(ctx)
	if err != nil {
		return err
	}
	changed := len(keys) != len(p.reg.Passkeys)
	next := p.reg
	next.Passkeys = append([]channel.RegisteredPasskey{}, keys...)
	p.reg, p.flags = next, flags
	if changed && p.file != "" {
		if err := next.Save(p.file); err != nil {
			return err
		}
	}
	return nil
}

func (p *passkeys) putCeremony(kind, key string, sd *webauthn.SessionData) error {
	raw, err := json.Marshal(sd)
	if err != nil {
		return err
	}
	ctx, cancel := storeCtx()
	defer cancel()
	return p.flows.putFlow(ctx, kind, key, raw, time.Now().Add(ceremonyTTL), 0)
}

// takeCeremony removes the ceremony in progress: single use, whatever
// happens next.
func (p *passkeys) takeCeremony(kind, key string) (webauthn.SessionData, bool, error) {
	var sd webauthn.SessionData
	ctx, cancel := storeCtx()
	defer cancel()
	raw, ok, err := p.flows.takeFlow(ctx, kind, key)
	if err != nil || !ok {
		return sd, false, err
	}
	return sd, json.Unmarshal(raw, &sd) == nil, nil
}

func newPasskeys(o PasskeyOptions, origin string) (*passkeys, error) {
	if origin == "" {
		return nil, errors.New("channel: passkeys need the service's Origin (the WebAuthn relying party)")
	}
	u, err := url.Parse(origin)
	if err != nil {
		return nil, fmt.Errorf("channel: passkeys: origin %q: %v", origin, err)
	}
	wa, err := webauthn.New(&webauthn.Config{RPID: u.Hostname(), RPDisplayName: "mcpsafe approvals", RPOrigins: []string{origin}})
	if err != nil {
		return nil, fmt.Errorf("channel: passkeys: %v", err)
	}
	p := &passkeys{wa: wa, file: o.File, tools: map[string]bool{}, flags: map[string]webauthn.CredentialFlags{},
		reg: channel.PasskeyRegistry{RPID: u.Hostname(), Origin: origin, Passkeys: []channel.RegisteredPasskey{}}}
	for _, t := range o.Tools {
		p.tools[t] = true
	}
	if o.File != "" {
		if _, err := os.Stat(o.File); err == nil {
			reg, err := channel.LoadPasskeyRegistry(o.File)
			if err != nil {
				return nil, err
			}
			if reg.RPID != p.reg.RPID || reg.Origin != origin {
				return nil, fmt.Errorf("channel: passkeys file %s is for %s, this service is %s: passkeys are bound to their origin", o.File, reg.Origin, origin)
			}
			p.reg = *reg
		}
	}
	return p, nil
}

// userLocked is an approver as go-webauthn sees them (the user handle is
// derived from the identity key, so it is stable and never shown).
func (p *passkeys) userLocked(name string) passkeyreg.User {
	return passkeyreg.NewUser("mcpsafe approver", name, &p.reg, p.flags)
}

// needsPasskey reports whether approving r takes a passkey.
func (s *Service) needsPasskey(r *record) bool {
	if r.Req.MinAssurance == channel.AssurancePasskeyName {
		return true
	}
	return s.pk != nil && s.pk.tools[r.Req.Tool]
}

func (s *Service) passkeyRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /passkeys/register/begin", s.withSession(true, s.pkRegisterBegin))
	m.HandleFunc("POST /passkeys/register/finish", s.withSession(true, s.pkRegisterFinish))
	m.HandleFunc("POST /passkeys/approve/{id}/begin", s.withSession(true, s.pkApproveBegin))
	m.HandleFunc("POST /passkeys/approve/{id}/finish", s.withSession(true, s.pkApproveFinish))
}

func (s *Service) pkRegisterBegin(w http.ResponseWriter, r *http.Request, sess *session) {
	p := s.pk
	p.mu.Lock()
	defer p.mu.Unlock()
	ctx, cancel := storeCtx()
	defer cancel()
	if err := p.refreshLocked(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	opts, sd, err := passkeyreg.Begin(p.wa, p.userLocked(sess.name))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "passkey registration: " + wire.PasskeyError(err)})
		return
	}
	if err := p.putCeremony(flowPasskeyRegister, sess.name, sd); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, opts)
}

func (s *Service) pkRegisterFinish(w http.ResponseWriter, r *http.Request, sess *session) {
	p := s.pk
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	p.mu.Lock()
	defer p.mu.Unlock()
	sd, ok, err := p.takeCeremony(flowPasskeyRegister, sess.name)
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable; start again"})
		return
	}
	if !ok {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "no passkey registration in progress; start again"})
		return
	}
	ctx, cancel := storeCtx()
	defer cancel()
	if err := p.refreshLocked(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable; start again"})
		return
	}
	k, flags, err := passkeyreg.Finish(p.wa, p.userLocked(sess.name), sd, r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "passkey refused: " + wire.PasskeyError(err)})
		return
	}
	id := k.CredentialID
	if p.shared != nil {
		if err := p.shared.addPasskey(ctx, k, flags); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "the passkey could not be stored; nothing registered"})
			return
		}
		if err := p.refreshLocked(ctx); err != nil {
			s.log().Warn("a passkey was registered but the copy in the passkeys file could not be written", "error", err)
		}
		writeJSON(w, http.StatusOK, map[string]any{"registered": id, "approver": sess.name})
		return
	}
	next := p.reg
	next.Passkeys = append(append([]channel.RegisteredPasskey(nil), p.reg.Passkeys...), k)
	if p.file != "" {
		if err := next.Save(p.file); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "the passkey could not be stored; nothing registered"})
			return
		}
	}
	p.reg, p.flags[id] = next, flags
	writeJSON(w, http.StatusOK, map[string]any{"registered": id, "approver": sess.name})
}

// loginKey names an approval ceremony: approver and request (neither
// holds a space).
func loginKey(name, id string) string { return name + " " + id }

func (s *Service) pkApproveBegin(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	ctx, cancel := storeCtx()
	rec, err := s.st.get(ctx, id)
	cancel()
	req := rec.Req
	if err != nil && !errors.Is(err, errNotFound) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	if err != nil || rec.Status != channel.StatusPending {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "no pending request " + prompt.Visible(wire.Clip(id))})
		return
	}
	if identity.Same(sess.name, req.Principal) {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "you asked for this call; another approver must approve it"})
		return
	}
	p := s.pk
	p.mu.Lock()
	defer p.mu.Unlock()
	rctx, rcancel := storeCtx()
	defer rcancel()
	if err := p.refreshLocked(rctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	u := p.userLocked(sess.name)
	if len(u.WebAuthnCredentials()) == 0 {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "register a passkey first"})
		return
	}
	challenge := channel.PasskeyChallenge(req.ID, req.Tool, req.ArgsDigest, channel.TargetsDigest(req.Targets), req.ExpiresAt, req.Audience)
	opts, sd, err := p.wa.BeginLogin(u, webauthn.WithChallenge(challenge), webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "passkey approval: " + wire.PasskeyError(err)})
		return
	}
	if err := p.putCeremony(flowPasskeyApprove, loginKey(sess.name, id), sd); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable"})
		return
	}
	writeJSON(w, http.StatusOK, opts)
}

func (s *Service) pkApproveFinish(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "reading the assertion: " + err.Error()})
		return
	}
	p := s.pk
	sd, ok, err := p.takeCeremony(flowPasskeyApprove, loginKey(sess.name, id))
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable; start again"})
		return
	}
	p.mu.Lock()
	rctx, rcancel := storeCtx()
	err = p.refreshLocked(rctx)
	rcancel()
	u := p.userLocked(sess.name)
	p.mu.Unlock()
	if err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": "store unavailable; start again"})
		return
	}
	if !ok {
		writeJSON(w, http.StatusConflict, map[string]any{"error": "no passkey approval in progress for this request; start again"})
		return
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(raw)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "passkey refused: " + wire.PasskeyError(err)})
		return
	}
	// The challenge was derived from the request when the ceremony began;
	// ValidateLogin compares it, the origin, the RP ID, user presence and
	// (VerificationRequired) user verification, and the signature.
	cred, err := p.wa.ValidateLogin(u, sd, parsed)
	if err != nil {
		writeJSON(w, http.StatusForbidden, map[string]any{"error": "passkey refused: " + wire.PasskeyError(err)})
		return
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "passkey refused: not JSON"})
		return
	}
	proof := &channel.PasskeyProof{Approver: sess.name, CredentialID: base64.RawURLEncoding.EncodeToString(cred.ID), Assertion: compact.Bytes()}
	rec, herr := s.decideVote(id, vote{By: sess.name, Passkey: proof}, true, "")
	if herr != nil {
		writeJSON(w, herr.code, map[string]any{"error": herr.msg})
		return
	}
	writeJSON(w, http.StatusOK, itemOf(rec, sess.name))
}
