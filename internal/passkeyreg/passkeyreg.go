// Package passkeyreg is the one passkey registration ceremony, shared by
// the approval service (approvers register after logging in) and the local
// approval page's enrolment (`mcpsafe approval-page enroll`): user
// verification required, a resident key preferred, the person's existing
// credentials excluded, and the result as a channel.RegisteredPasskey,
// which channel's VerifyProof later checks assertions against.
package passkeyreg

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/identity"
)

// User is a person as go-webauthn sees them: their name, a user handle
// derived from the name's identity key under a context (stable, never
// shown), and the credentials registered to them.
type User struct {
	name   string
	handle []byte
	creds  []webauthn.Credential
}

// NewUser is name with the credentials reg lists for them (flags, by
// credential id, keeps what registration recorded for go-webauthn's
// backup-state checks; nil for none). context separates the user handles
// of different relying parties ("mcpsafe approver", "mcpsafe local
// approver").
func NewUser(context, name string, reg *channel.PasskeyRegistry, flags map[string]webauthn.CredentialFlags) User {
	k, _ := identity.Key(name)
	h := sha256.Sum256([]byte(context + "\n" + k))
	u := User{name: name, handle: h[:]}
	for _, r := range reg.Passkeys {
		if !identity.Same(r.Approver, name) {
			continue
		}
		id, _ := base64.RawURLEncoding.DecodeString(r.CredentialID)
		pub, _ := base64.RawURLEncoding.DecodeString(r.PublicKey)
		u.creds = append(u.creds, webauthn.Credential{ID: id, PublicKey: pub, Flags: flags[r.CredentialID]})
	}
	return u
}

func (u User) WebAuthnID() []byte                         { return u.handle }
func (u User) WebAuthnName() string                       { return u.name }
func (u User) WebAuthnDisplayName() string                { return u.name }
func (u User) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// Begin starts registering a passkey for u.
func Begin(wa *webauthn.WebAuthn, u User) (*protocol.CredentialCreation, *webauthn.SessionData, error) {
	var exclude []protocol.CredentialDescriptor
	for _, c := range u.creds {
		exclude = append(exclude, c.Descriptor())
	}
	return wa.BeginRegistration(u,
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			UserVerification: protocol.VerificationRequired, ResidentKey: protocol.ResidentKeyRequirementPreferred,
		}),
		webauthn.WithExclusions(exclude))
}

// Finish checks the browser's answer in r against the ceremony sd began
// (origin, challenge, user presence and verification, attestation) and
// returns the passkey to store, with the flags go-webauthn recorded.
func Finish(wa *webauthn.WebAuthn, u User, sd webauthn.SessionData, r *http.Request) (channel.RegisteredPasskey, webauthn.CredentialFlags, error) {
	cred, err := wa.FinishRegistration(u, sd, r)
	if err != nil {
		return channel.RegisteredPasskey{}, webauthn.CredentialFlags{}, err
	}
	return channel.RegisteredPasskey{Approver: u.name, CredentialID: base64.RawURLEncoding.EncodeToString(cred.ID),
		PublicKey: base64.RawURLEncoding.EncodeToString(cred.PublicKey)}, cred.Flags, nil
}
