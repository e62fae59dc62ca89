package approvals

import (
	"cmp"

	"github.com/mcpsafe/mcpsafe/channel"
)

// attestation is the signed statement of an approval (the service has a
// signing key; deliver keeps it with the decision). Denials and other
// outcomes are not signed: they never let anything run.
func (s *Service) attestation(r *record) (channel.Attestation, error) {
	names := []string{}
	var proofs []channel.PasskeyProof
	var via []string // only when a vote came by another path than the service's own
	for i, v := range r.Approvals {
		if v.Via != "" && via == nil {
			via = make([]string, len(r.Approvals))
			for j := range i {
				via[j] = "web"
			}
		}
		if via != nil {
			via[i] = cmp.Or(v.Via, "web")
		}
		names = append(names, v.By)
		if v.Passkey != nil {
			proofs = append(proofs, *v.Passkey)
		}
	}
	assurance := "channel"
	if len(proofs) > 0 && len(proofs) == len(r.Approvals) {
		assurance = channel.AssurancePasskeyName
	}
	a, err := channel.SignStatement(s.opts.SigningKey, channel.Statement{
		Version: 1, ID: r.Req.ID, Tool: r.Req.Tool, ArgsDigest: r.Req.ArgsDigest,
		Principal: r.Req.Principal, Audience: r.Req.Audience, ExpiresAt: r.Req.ExpiresAt.UTC(),
		Approved: true, Approvers: names, Assurance: assurance, DecidedAt: r.DecidedAt.UTC(),
		TargetsDigest: channel.TargetsDigest(r.Req.Targets), Passkeys: proofs, Grant: r.Grant, Via: via,
	})
	return a, err
}
