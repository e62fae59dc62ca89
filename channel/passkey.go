package channel

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/internal/identity"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/wire"
)

// A passkey approval is a WebAuthn assertion whose challenge is derived
// from the call itself (PasskeyChallenge), made with user verification by
// a credential registered to the approver. Anyone holding the approver's
// public key (PasskeyRegistry) can re-check it: the gate does so without
// trusting the approval service, and so can an auditor with the journal.

// AssurancePasskeyName is the assurance word in statements and records.
const AssurancePasskeyName = "passkey"

// ErrPasskey is wrapped by every passkey check failure.
var ErrPasskey = errors.New("channel: passkey approval rejected")

// PasskeyProof is one approver's assertion, kept exactly as the browser
// produced it (PublicKeyCredential.toJSON of navigator.credentials.get).
type PasskeyProof struct {
	Approver     string          `json:"approver"`
	CredentialID string          `json:"credential_id"` // base64url
	Assertion    json.RawMessage `json:"assertion"`
}

// TargetsDigest is the hex SHA-256 of the targets' JSON, as the challenge
// and the signed statement name them.
func TargetsDigest(targets []mcpsafe.Target) string {
	b, _ := json.Marshal(wire.NonNil(targets)) // plain strings always encode
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// PasskeyChallenge derives the WebAuthn challenge for a call: SHA-256 over
// a context string and the call's request id, tool, argument digest,
// targets digest, expiry and audience. An assertion made for one call is
// therefore useless for any other, and the gate computes the challenge from
// its own view of the call, never from the service's.
func PasskeyChallenge(id, tool, argsDigest, targetsDigest string, expires time.Time, audience string) []byte {
	b, _ := json.Marshal([]string{"mcpsafe passkey approval v1", id, tool, argsDigest, targetsDigest,
		expires.UTC().Format(time.RFC3339Nano), audience})
	h := sha256.Sum256(b)
	return h[:]
}

func challengeFor(r approver.Request) []byte {
	return PasskeyChallenge(r.ID, r.Tool, r.ArgsDigest, TargetsDigest(r.Targets), r.ExpiresAt, r.Audience)
}

// RegisteredPasskey is one approver's credential: its id and COSE public
// key, as the approval service recorded them at registration.
type RegisteredPasskey struct {
	Approver     string `json:"approver"`
	CredentialID string `json:"credential_id"` // base64url
	PublicKey    string `json:"public_key"`    // base64url, COSE_Key
}

// PasskeyRegistry is the set of registered passkeys and the relying party
// they are bound to. The approval service keeps it in its passkeys file;
// a gate or auditor loads a copy (LoadPasskeyRegistry). Public keys are not
// secret, but whoever can add a key to a gate's copy can approve: protect
// its integrity like configuration.
type PasskeyRegistry struct {
	RPID     string              `json:"rp_id"`
	Origin   string              `json:"origin"`
	Passkeys []RegisteredPasskey `json:"passkeys"`
}

// LoadPasskeyRegistry reads a passkeys file written by the approval service.
func LoadPasskeyRegistry(path string) (*PasskeyRegistry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("channel: passkeys file: %w", err)
	}
	var reg PasskeyRegistry
	if err := frame.Decode(data, &reg); err != nil {
		return nil, fmt.Errorf("channel: passkeys file %s: %v", path, err)
	}
	if err := reg.check(); err != nil {
		return nil, fmt.Errorf("channel: passkeys file %s: %v", path, err)
	}
	return &reg, nil
}

func (reg *PasskeyRegistry) check() error {
	u, err := url.Parse(reg.Origin)
	if reg.RPID == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() != reg.RPID {
		return fmt.Errorf("rp_id %q and origin %q do not belong together", reg.RPID, reg.Origin)
	}
	seen := map[string]bool{}
	for _, p := range reg.Passkeys {
		if _, err := identity.Key(p.Approver); err != nil {
			return fmt.Errorf("passkey of %q: %v", p.Approver, err)
		}
		if _, err := base64.RawURLEncoding.DecodeString(p.PublicKey); err != nil || p.PublicKey == "" {
			return fmt.Errorf("passkey of %s: public key is not base64url", p.Approver)
		}
		if seen[p.CredentialID] || p.CredentialID == "" {
			return fmt.Errorf("credential id %q empty or listed twice", p.CredentialID)
		}
		seen[p.CredentialID] = true
	}
	return nil
}

// Save writes the registry atomically (mode 0600).
func (reg *PasskeyRegistry) Save(path string) error {
	b, err := json.MarshalIndent(reg, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".passkeys-*")
	if err != nil {
		return fmt.Errorf("channel: passkeys file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("channel: passkeys file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("channel: passkeys file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("channel: passkeys file: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// VerifyProof checks one assertion for the call whose challenge is given:
// the credential is registered to the approver the proof names, the client
// data is a webauthn.get for this challenge from the registry's origin, the
// authenticator data is for its RP ID with user presence AND user
// verification, and the signature verifies with the registered key.
func (reg *PasskeyRegistry) VerifyProof(p PasskeyProof, challenge []byte) error {
	var key *RegisteredPasskey
	for i := range reg.Passkeys {
		if reg.Passkeys[i].CredentialID == p.CredentialID {
			key = &reg.Passkeys[i]
		}
	}
	if key == nil {
		return fmt.Errorf("%w: credential %q is not registered", ErrPasskey, wire.Clip(p.CredentialID))
	}
	if !identity.Same(key.Approver, p.Approver) {
		return fmt.Errorf("%w: credential %q belongs to %s, not %s", ErrPasskey, wire.Clip(p.CredentialID), key.Approver, wire.Clip(p.Approver))
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(p.Assertion)
	if err != nil {
		return fmt.Errorf("%w: assertion: %v", ErrPasskey, err)
	}
	if base64.RawURLEncoding.EncodeToString(parsed.RawID) != p.CredentialID {
		return fmt.Errorf("%w: the assertion is by another credential than the proof names", ErrPasskey)
	}
	pub, _ := base64.RawURLEncoding.DecodeString(key.PublicKey) // checked when loaded
	err = parsed.Verify(base64.RawURLEncoding.EncodeToString(challenge), reg.RPID, "", []string{reg.Origin}, nil, nil,
		protocol.TopOriginImplicitVerificationMode, false, true, true, pub, protocol.SignaturePolicy{})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPasskey, wire.PasskeyError(err))
	}
	return nil
}

// checkPasskeys verifies the proofs of an answer for request r: at least
// need distinct approvers, each named in the answer, each with a valid
// assertion for this call.
func (reg *PasskeyRegistry) checkPasskeys(r approver.Request, approvers []string, proofs []PasskeyProof, need int) error {
	challenge := challengeFor(r)
	named := map[string]bool{}
	for _, a := range approvers {
		k, _ := identity.Key(a) // checked by Approve
		named[k] = true
	}
	ok := map[string]bool{}
	for _, p := range proofs {
		k, err := identity.Key(p.Approver)
		if err != nil || !named[k] {
			return fmt.Errorf("%w: a proof names %q, who is not among the approvers", ErrPasskey, wire.Clip(p.Approver))
		}
		if err := reg.VerifyProof(p, challenge); err != nil {
			return fmt.Errorf("%w (approver %s)", err, p.Approver)
		}
		ok[k] = true
	}
	if len(ok) < need {
		return fmt.Errorf("%w: %d approver(s) proved this call with a passkey, %d needed", ErrPasskey, len(ok), need)
	}
	return nil
}

// WithPasskeys gives the webhook the registered passkeys to verify passkey
// approvals with. A request whose tool requires passkeys
// (MinAssurance AssurancePasskey) is approved only with valid proofs from
// at least max(1, WithMinApprovers) distinct approvers; without a
// registry it is never approved.
func WithPasskeys(reg *PasskeyRegistry) WebhookOption {
	return func(w *Webhook) error {
		if reg == nil {
			return errors.New("channel: WithPasskeys: nil registry")
		}
		if err := reg.check(); err != nil {
			return fmt.Errorf("channel: WithPasskeys: %v", err)
		}
		w.passkeys = reg
		return nil
	}
}

// CheckStatementPasskeys re-checks the passkey proofs a signed statement
// carries (verify the statement first: VerifyAttestation or
// CheckJournalRecord): each challenge is derived again from the
// statement's call, and at least need distinct approvers it names must
// have proved it.
func (reg *PasskeyRegistry) CheckStatementPasskeys(st Statement, need int) error {
	if st.TargetsDigest == "" {
		return fmt.Errorf("%w: the statement has no targets digest to derive the challenge from", ErrPasskey)
	}
	challenge := PasskeyChallenge(st.ID, st.Tool, st.ArgsDigest, st.TargetsDigest, st.ExpiresAt, st.Audience)
	named := map[string]bool{}
	for _, a := range st.Approvers {
		k, _ := identity.Key(a)
		named[k] = true
	}
	ok := map[string]bool{}
	for _, p := range st.Passkeys {
		k, err := identity.Key(p.Approver)
		if err != nil || !named[k] {
			return fmt.Errorf("%w: a proof names %q, who is not among the approvers", ErrPasskey, wire.Clip(p.Approver))
		}
		if err := reg.VerifyProof(p, challenge); err != nil {
			return err
		}
		ok[k] = true
	}
	if len(ok) < need {
		return fmt.Errorf("%w: %d approver(s) proved the call with a passkey, %d needed", ErrPasskey, len(ok), need)
	}
	return nil
}
