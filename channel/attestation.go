package channel

import (
	"bufio"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/journal"
)

// An attestation is the approval service's signed statement of a decision:
// Ed25519 over a fixed context string and the statement's JSON. The HMAC on
// the transport says "someone holding the shared secret sent this"; every
// gated server holds that secret too. The signature says "the approval
// service decided this", and anyone with the public key (a gate, an
// auditor with the journal) can check it later without any secret.
const attestationContext = "mcpsafe decision v1\n"

// ErrAttestation is wrapped by every attestation check failure.
var ErrAttestation = errors.New("channel: decision attestation rejected")

// Statement is what the service signs about one decision.
type Statement struct {
	Version    int       `json:"v"`
	ID         string    `json:"id"`
	Tool       string    `json:"tool"`
	ArgsDigest string    `json:"args_digest"`
	Principal  string    `json:"principal"`
	Audience   string    `json:"audience"`
	ExpiresAt  time.Time `json:"expires_at"`
	Approved   bool      `json:"approved"`
	Approvers  []string  `json:"approvers"`
	// Assurance names what the approvers proved: "channel" (logged in to
	// the service).
	Assurance string    `json:"assurance"`
	DecidedAt time.Time `json:"decided_at"`
	// TargetsDigest (TargetsDigest) and Passkeys let an auditor re-derive
	// each passkey challenge and re-check the assertions.
	TargetsDigest string         `json:"targets_digest,omitempty"`
	Passkeys      []PasskeyProof `json:"passkeys,omitempty"`
	// Grant is the standing grant the approvers chose; empty: this call
	// alone.
	Grant string `json:"grant,omitempty"`
	// Via, when present, names the path each approver decided by, in the
	// order of Approvers: "web" (the service's page or API) or "slack" (a
	// button in Slack). Absent when every approval came by the web.
	Via []string `json:"via,omitempty"`
}

// Attestation travels in the service's answer ("attestation") and in the
// journal record ("evidence"): the statement exactly as signed, and the
// signature over it.
type Attestation struct {
	Statement json.RawMessage `json:"statement"`
	Signature string          `json:"signature"` // base64 (standard) Ed25519
}

// SignStatement signs st with the approval service's key; VerifyAttestation
// checks it with the public key.
func SignStatement(key ed25519.PrivateKey, st Statement) (Attestation, error) {
	body, err := json.Marshal(st)
	if err != nil {
		return Attestation{}, err
	}
	sig := ed25519.Sign(key, append([]byte(attestationContext), body...))
	return Attestation{Statement: body, Signature: base64.StdEncoding.EncodeToString(sig)}, nil
}

// VerifyAttestation checks the signature with the service's public key,
// then reads the statement strictly (one object, no unknown fields). It
// verifies before it parses: an unsigned statement is never looked at.
func VerifyAttestation(pub ed25519.PublicKey, raw []byte) (Statement, error) {
	var st Statement
	if len(pub) != ed25519.PublicKeySize {
		return st, fmt.Errorf("%w: no valid service public key configured", ErrAttestation)
	}
	var a Attestation
	if err := frame.Decode(raw, &a); err != nil {
		return st, fmt.Errorf("%w: %v", ErrAttestation, err)
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(a.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return st, fmt.Errorf("%w: signature is not base64 of %d bytes", ErrAttestation, ed25519.SignatureSize)
	}
	if !ed25519.Verify(pub, append([]byte(attestationContext), a.Statement...), sig) {
		return st, fmt.Errorf("%w: signature does not match the service's public key", ErrAttestation)
	}
	if err := frame.Decode(a.Statement, &st); err != nil {
		return st, fmt.Errorf("%w: statement: %v", ErrAttestation, err)
	}
	if st.Version != 1 {
		return st, fmt.Errorf("%w: statement version %d", ErrAttestation, st.Version)
	}
	return st, nil
}

// checkApproval compares a verified statement with the call the gate asked
// about and the approvers the answer names: each field must match exactly.
func (st Statement) checkApproval(r approver.Request, approvers []string) error {
	switch {
	case !st.Approved:
		return fmt.Errorf("%w: the signed statement does not approve", ErrAttestation)
	case st.ID != r.ID:
		return fmt.Errorf("%w: signed for request %q, not %q", ErrAttestation, wire.Clip(st.ID), wire.Clip(r.ID))
	case st.Tool != r.Tool:
		return fmt.Errorf("%w: signed for tool %q, not %q", ErrAttestation, wire.Clip(st.Tool), wire.Clip(r.Tool))
	case st.ArgsDigest != r.ArgsDigest:
		return fmt.Errorf("%w: signed for other arguments", ErrAttestation)
	case st.Principal != r.Principal:
		return fmt.Errorf("%w: signed for principal %q, not %q", ErrAttestation, wire.Clip(st.Principal), wire.Clip(r.Principal))
	case st.Audience != r.Audience:
		return fmt.Errorf("%w: signed for audience %q, not %q", ErrAttestation, wire.Clip(st.Audience), wire.Clip(r.Audience))
	case !st.ExpiresAt.Equal(r.ExpiresAt):
		return fmt.Errorf("%w: signed for another expiry", ErrAttestation)
	case st.DecidedAt.IsZero() || !st.DecidedAt.Before(r.ExpiresAt):
		return fmt.Errorf("%w: decided at %s, not before the request expired", ErrAttestation, st.DecidedAt.UTC().Format(time.RFC3339))
	case !sameNames(st.Approvers, approvers):
		return fmt.Errorf("%w: signed approvers %q differ from the answer's %q", ErrAttestation, st.Approvers, approvers)
	}
	return nil
}

// sameNames compares two approver lists as sets of identities.
func sameNames(a, b []string) bool {
	key := func(list []string) string {
		var ks []string
		for _, n := range list {
			k, err := identity.Key(n)
			if err != nil {
				k = "\x00" + n
			}
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return strings.Join(ks, "\n")
	}
	return len(a) == len(b) && key(a) == key(b)
}

// CheckJournalRecord re-checks the evidence of a journaled channel approval
// with the service's public key: the signature, and that the statement is
// about this record's tool, arguments and principal, naming its approvers.
// A record without evidence is an error: the caller decides whether that
// record needed one.
func CheckJournalRecord(pub ed25519.PublicKey, rec journal.Record) (Statement, error) {
	if len(rec.Evidence) == 0 {
		return Statement{}, fmt.Errorf("%w: the record carries no evidence", ErrAttestation)
	}
	st, err := VerifyAttestation(pub, rec.Evidence)
	if err != nil {
		return st, err
	}
	var by []string
	if rec.By != "" {
		by = strings.Split(rec.By, ",")
	}
	switch {
	case !st.Approved:
		return st, fmt.Errorf("%w: the signed statement does not approve", ErrAttestation)
	case st.ID != rec.Call:
		return st, fmt.Errorf("%w: signed for request %q, the record is call %q", ErrAttestation, wire.Clip(st.ID), wire.Clip(rec.Call))
	case st.Tool != rec.Tool || st.ArgsDigest != rec.ArgsDigest || st.Principal != rec.Principal:
		return st, fmt.Errorf("%w: signed for another tool, arguments or principal than the record's", ErrAttestation)
	case !sameNames(st.Approvers, by):
		return st, fmt.Errorf("%w: signed approvers %q, the record names %q", ErrAttestation, st.Approvers, by)
	case rec.Assurance != "" && rec.Assurance != st.Assurance:
		return st, fmt.Errorf("%w: the record claims assurance %q, the statement %q", ErrAttestation, rec.Assurance, st.Assurance)
	}
	return st, nil
}

// ParsePublicKey reads a service public key: standard base64 of 32 bytes.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("channel: service public key must be base64 of %d bytes", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// EncodePublicKey is the text form ParsePublicKey reads.
func EncodePublicKey(pub ed25519.PublicKey) string {
	return base64.StdEncoding.EncodeToString(pub)
}

// LoadSigningKeyFile reads the service's Ed25519 signing key: one line of
// standard base64 holding the 32-byte seed, mode 0600 (as a secret file).
func LoadSigningKeyFile(path string) (ed25519.PrivateKey, error) {
	seed, err := LoadSecretFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w (signing key)", err)
	}
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("channel: signing key in %s is %d bytes, want a %d-byte Ed25519 seed", path, len(seed), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// WithServiceKey makes the webhook demand the approval service's signature
// on every approval, checked with pub (EncodePublicKey of the service's
// key; `mcpsafe approvals keygen` prints it) and compared field by field
// with the call. It comes on top of the HMAC: an approval without a valid
// attestation is refused even when its HMAC is right.
func WithServiceKey(pub ed25519.PublicKey) WebhookOption {
	return func(w *Webhook) error {
		if len(pub) != ed25519.PublicKeySize {
			return fmt.Errorf("channel: service public key is %d bytes, want %d", len(pub), ed25519.PublicKeySize)
		}
		w.serviceKey = pub
		return nil
	}
}

// checkAttestation returns the evidence to journal: the attestation as
// received. Without a configured key an attestation is passed on unchecked
// (an auditor can check it later) and its absence is no error.
func (w *Webhook) checkAttestation(r approver.Request, ans answer) (json.RawMessage, error) {
	if w.serviceKey == nil {
		return ans.Attestation, nil
	}
	if len(ans.Attestation) == 0 {
		return nil, fmt.Errorf("%w: %w: the approval carries no signed statement", ErrBadResponse, ErrAttestation)
	}
	st, err := VerifyAttestation(w.serviceKey, ans.Attestation)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	if err := st.checkApproval(r, ans.Approvers); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	if g := ans.Grant; g != st.Grant && !(g == approver.Once && st.Grant == "") {
		return nil, fmt.Errorf("%w: %w: the answer chooses grant %q, the signed statement %q", ErrBadResponse, ErrAttestation, wire.Clip(g), wire.Clip(st.Grant))
	}
	return ans.Attestation, nil
}

// GenerateSigningKeyFile writes a fresh Ed25519 seed to path (which must
// not exist yet, so a key is never overwritten by mistake), mode 0600, and
// returns the public key.
func GenerateSigningKeyFile(path string) (ed25519.PublicKey, error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, fmt.Errorf("channel: generating a key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("channel: signing key file: %w", err)
	}
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(priv.Seed()) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("channel: signing key file: %w", err)
	}
	return pub, nil
}

// CheckJournal re-checks every channel approval in a journal (JSON lines)
// with the service's public key and reports how many it checked. With a
// passkey registry (nil: none) it also re-checks the passkey assertions of
// every record that claims the passkey level. The first
// record that fails (no evidence, a bad signature, a statement about
// another call) is the error, naming its line. The hash chain is
// journal.Verify's job; run it too.
func CheckJournal(r io.Reader, pub ed25519.PublicKey, passkeys *PasskeyRegistry) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), journal.MaxLineBytes+1)
	line, n := 0, 0
	for sc.Scan() {
		line++
		var rec journal.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return n, fmt.Errorf("journal line %d: %v", line, err)
		}
		if rec.Decision != journal.ChannelApproved {
			continue
		}
		st, err := CheckJournalRecord(pub, rec)
		if err != nil {
			return n, fmt.Errorf("journal line %d (call %s): %w", line, wire.Clip(rec.Call), err)
		}
		if rec.Assurance == AssurancePasskeyName || st.Assurance == AssurancePasskeyName {
			if passkeys == nil {
				return n, fmt.Errorf("journal line %d (call %s): a passkey approval, and no passkeys file to re-check it with", line, wire.Clip(rec.Call))
			}
			if err := passkeys.CheckStatementPasskeys(st, 1); err != nil {
				return n, fmt.Errorf("journal line %d (call %s): %w", line, wire.Clip(rec.Call), err)
			}
		}
		n++
	}
	return n, sc.Err()
}
