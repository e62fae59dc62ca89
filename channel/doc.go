// Package channel carries approvals out of band, away from the model and
// the MCP client: the gate asks a person through a signed webhook, and the
// answer comes back signed.
//
// It holds two things (a later split will make them two packages):
//
//   - The contract every gate needs: the wire types ([WireRequest],
//     [WireWithdrawal]), the webhook client ([NewWebhook], an
//     mcpsafe.Approver), request signatures ([Sign], [VerifySignature]),
//     Ed25519 decision attestations ([VerifyAttestation]) and passkey
//     assertions bound to one call, and the journal checks that re-verify
//     them ([CheckJournal], [CheckJournalRecord]).
//   - The approval service behind `mcpsafe approvals serve` ([NewService]):
//     the approvers' pages and API, login (passwords, OIDC, passkeys),
//     N-of-M decisions, standing-grant offers and the overview.
//
// Every failure on the way (a bad signature, an unknown answer, a timeout,
// a service that cannot be reached) means not approved.
package channel
