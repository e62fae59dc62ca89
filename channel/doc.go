// Package channel is the gate's side of out-of-band approval, away from
// the model and the MCP client: the gate asks a person through a signed
// webhook, and the answer comes back signed. It is the contract every gate
// needs, and nothing of the approval service:
//
//   - the wire types ([WireRequest], [WireWithdrawal], [WireProbe]), their
//     limits ([MaxRequestBytes] and the others) and the status words of an
//     answer ([StatusPending] and the others);
//   - the webhook client ([NewWebhook], an approver.Approver that can also
//     resume, withdraw and probe);
//   - request signatures ([Sign], [VerifySignature], [VerifySignatureKey]);
//   - Ed25519 decision attestations ([SignStatement], [VerifyAttestation])
//     and passkey assertions bound to one call ([PasskeyRegistry]);
//   - the journal checks that re-verify them ([CheckJournal],
//     [CheckJournalRecord]).
//
// The approval service behind `mcpsafe approvals serve` (pages, API, login,
// OIDC, passkey ceremonies, its store) is package approvals, which speaks
// this contract from the other end.
//
// Every failure on the way (a bad signature, an unknown answer, a timeout,
// a service that cannot be reached) means not approved.
package channel
