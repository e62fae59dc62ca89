package approvalpage

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/go-webauthn/webauthn/protocol"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/wire"
)

// Passkeys on the page: with Options.Passkeys, Approve takes a WebAuthn
// assertion, user verified, by a registered credential, over a challenge
// derived from the call itself (channel.PasskeyChallenge: request id, tool,
// argument digest, targets, expiry, audience). The check is the approval
// contract's own (channel.PasskeyRegistry.VerifyProof), so an assertion
// made for one call approves no other, and a click without one approves
// nothing. Credentials are registered by Enroll, run by the person from a
// terminal, never through the running page.

// LocalRPID is the WebAuthn relying party of the local page: browsers
// accept "localhost" (a secure context) and no IP address, so a page with
// passkeys is addressed as http://localhost:PORT.
const LocalRPID = "localhost"

//go:embed passkey.js
var passkeyJS []byte

// checkRegistry accepts a registry made for the local page.
func checkRegistry(reg *channel.PasskeyRegistry) error {
	if reg.RPID != LocalRPID {
		return fmt.Errorf("approval page: the passkeys file is for %q; the local page's passkeys are for %q (register them with `mcpsafe approval-page enroll`)", reg.RPID, LocalRPID)
	}
	if len(reg.Passkeys) == 0 {
		return errors.New("approval page: the passkeys file lists no passkey; register one with `mcpsafe approval-page enroll`")
	}
	return nil
}

// requestOptions are the WebAuthn request options for r's page, in the
// JSON form PublicKeyCredential.parseRequestOptionsFromJSON reads.
func (p *Page) requestOptions(r approver.Request) string {
	type cred struct {
		Type string `json:"type"`
		ID   string `json:"id"`
	}
	allow := make([]cred, 0, len(p.opts.Passkeys.Passkeys))
	for _, k := range p.opts.Passkeys.Passkeys {
		allow = append(allow, cred{Type: "public-key", ID: k.CredentialID})
	}
	b, _ := json.Marshal(map[string]any{
		"challenge":        base64.RawURLEncoding.EncodeToString(challengeOf(r)),
		"rpId":             LocalRPID,
		"allowCredentials": allow,
		"userVerification": string(protocol.VerificationRequired),
		"timeout":          120000,
	})
	return string(b)
}

func challengeOf(r approver.Request) []byte {
	return channel.PasskeyChallenge(r.ID, r.Tool, r.ArgsDigest, channel.TargetsDigest(r.Targets), r.ExpiresAt, r.Audience)
}

// verifyAssertion checks an assertion posted with Approve for r and
// returns the proof the gate journals as evidence. The page's own origin is
// the one the browser signed (the port changes between runs; the RP ID
// and the key do not).
func (p *Page) verifyAssertion(r approver.Request, assertion string) (*channel.PasskeyProof, error) {
	if assertion == "" {
		return nil, errors.New("this page requires your passkey: a click alone approves nothing")
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes([]byte(assertion))
	if err != nil {
		return nil, fmt.Errorf("the passkey's answer is not an assertion: %s", wire.PasskeyError(err))
	}
	id := base64.RawURLEncoding.EncodeToString(parsed.RawID)
	var approver string
	for _, k := range p.opts.Passkeys.Passkeys {
		if k.CredentialID == id {
			approver = k.Approver
		}
	}
	if approver == "" {
		return nil, errors.New("that passkey is not registered for this page")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(assertion)); err != nil {
		return nil, errors.New("the passkey's answer is not JSON")
	}
	proof := channel.PasskeyProof{Approver: approver, CredentialID: id, Assertion: compact.Bytes()}
	reg := *p.opts.Passkeys
	reg.Origin = p.base
	if err := reg.VerifyProof(proof, challengeOf(r)); err != nil {
		return nil, err
	}
	return &proof, nil
}

// LoadPasskeys reads the passkeys a person registered for the local page
// (Enroll writes them). Whoever can add a key to this file can approve, so
// a file that others may write is refused, like an SSH key's.
func LoadPasskeys(path string) (*channel.PasskeyRegistry, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("approval page: passkeys file: %w", err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("approval page: passkeys file %s is writable by others (mode %v); whoever can add a key there can approve: chmod 600 it", path, fi.Mode().Perm())
	}
	reg, err := channel.LoadPasskeyRegistry(path)
	if err != nil {
		return nil, err
	}
	if err := checkRegistry(reg); err != nil {
		return nil, err
	}
	return reg, nil
}
