package channel

// attest adds the signed statement to an approval answer when the service
// has a signing key. Denials and other outcomes are not signed: they never
// let anything run.
func (s *Service) attest(r *record, ans map[string]any) error {
	if s.opts.SigningKey == nil || r.Status != StatusApproved {
		return nil
	}
	names := []string{}
	for _, v := range r.Approvals {
		names = append(names, v.By)
	}
	a, err := signStatement(s.opts.SigningKey, Statement{
		Version: 1, ID: r.Req.ID, Tool: r.Req.Tool, ArgsDigest: r.Req.ArgsDigest,
		Principal: r.Req.Principal, Audience: r.Req.Audience, ExpiresAt: r.Req.ExpiresAt.UTC(),
		Approved: true, Approvers: names, Assurance: "channel", DecidedAt: r.DecidedAt.UTC(),
	})
	if err != nil {
		return err
	}
	ans["attestation"] = a
	return nil
}
