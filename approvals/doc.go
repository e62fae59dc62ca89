// Package approvals is the approval service behind `mcpsafe approvals
// serve`: it receives a gate's signed webhook requests (the contract of
// package channel), shows them to approvers, and answers each with a
// decision, signed when it holds a signing key.
//
// It owns the approvers' pages and JSON API, login (argon2id passwords,
// OIDC, passkeys), N-of-M decisions and separation of duties, standing-grant
// offers and revocation, the overview of the gates' journals, and its store
// (memory, or an SQLite file so that pending requests survive a restart).
// [NewService] builds it from [ServiceOptions]; it is an http.Handler.
//
// A gate links none of this: it imports package channel only.
package approvals
