package channel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/internal/identity"
	"github.com/mcpsafe/mcpsafe/internal/wire"
	"github.com/mcpsafe/mcpsafe/journal"
)

// PageProof is the local approval page's evidence of a passkey approval,
// journaled with the page-approved record: the assertion, and what its
// challenge was derived from that the record does not carry itself. An
// auditor with the page's passkeys file re-checks it (CheckPageRecord);
// the record's call, tool and argument digest come from the record, so
// the evidence cannot be moved to another record.
type PageProof struct {
	Approver      string          `json:"approver"`
	CredentialID  string          `json:"credential_id"`
	Assertion     json.RawMessage `json:"assertion"`
	TargetsDigest string          `json:"targets_digest"`
	ExpiresAt     time.Time       `json:"expires_at"`
	Audience      string          `json:"audience"`
	Origin        string          `json:"origin"` // the page's, which the browser signed
}

// CheckPageRecord re-checks a page-approved record at passkey level: its
// evidence is a PageProof by a passkey of reg (the page's passkeys file),
// by the approver the record names, signed from a page on reg's relying
// party, over the challenge of the record's own call.
func (reg *PasskeyRegistry) CheckPageRecord(rec journal.Record) error {
	if rec.Decision != journal.PageApproved || rec.Assurance != AssurancePasskeyName {
		return fmt.Errorf("%w: not a passkey approval of the approval page", ErrPasskey)
	}
	var ev PageProof
	if err := frame.Decode(rec.Evidence, &ev); err != nil {
		return fmt.Errorf("%w: the evidence is not the page's proof: %v", ErrPasskey, err)
	}
	if u, err := url.Parse(ev.Origin); err != nil || u.Scheme != "http" || u.Hostname() != reg.RPID || u.Path != "" {
		return fmt.Errorf("%w: signed on %q, not an approval page of %s", ErrPasskey, wire.Clip(ev.Origin), reg.RPID)
	}
	if !identity.Same(ev.Approver, rec.By) || rec.By == "" {
		return fmt.Errorf("%w: the proof is by %q, the record names %q", ErrPasskey, wire.Clip(ev.Approver), wire.Clip(rec.By))
	}
	r := *reg
	r.Origin = ev.Origin
	challenge := PasskeyChallenge(rec.Call, rec.Tool, rec.ArgsDigest, ev.TargetsDigest, ev.ExpiresAt, ev.Audience)
	return r.VerifyProof(PasskeyProof{Approver: ev.Approver, CredentialID: ev.CredentialID, Assertion: ev.Assertion}, challenge)
}

// CheckPageJournal re-checks every passkey approval of the approval page
// in a journal's lines (CheckPageRecord) and returns how many there were.
func CheckPageJournal(r io.Reader, reg *PasskeyRegistry) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), journal.MaxLineBytes+1)
	line, n := 0, 0
	for sc.Scan() {
		line++
		var rec journal.Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return n, fmt.Errorf("journal line %d: %v", line, err)
		}
		if rec.Decision != journal.PageApproved || rec.Assurance != AssurancePasskeyName {
			continue
		}
		if err := reg.CheckPageRecord(rec); err != nil {
			return n, fmt.Errorf("journal line %d (call %s): %w", line, wire.Clip(rec.Call), err)
		}
		n++
	}
	return n, sc.Err()
}
