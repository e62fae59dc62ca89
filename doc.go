// Package mcpsafe puts a human approval step, enforced in code, in front of
// destructive MCP tools.
//
// A dangerous tool is registered as two functions instead of one handler:
// Preview describes what would happen and changes nothing; Execute runs only
// after the call was approved. An approval is bound to the exact call (tool,
// canonical argument digest, resolved target and state, principal, audience,
// policy, expiry), is single use, and anything that travels through the
// client is sealed with AES-256-GCM and verified before it is parsed.
//
//	gate, err := mcpsafe.New(mcpsafe.Options{Audience: "files@host", Journal: j})
//	...
//	err = mcpsafe.Register(gate, server, mcpsafe.ToolFor[deleteArgs, fileState]{
//		Tool:    mcpsafe.Tool{Name: "delete_file", Irreversible: true},
//		Resolve: resolveFile, // (ctx, call, deleteArgs) -> fileState, bound into the approval
//		Preview: previewDelete,
//		Execute: deleteFile, // gets the fileState resolved again right before it
//	})
//
// [Register] infers the input schema from the arguments' type, as the SDK's
// [mcp.AddTool] does; [Gate.Register] takes the untyped [Tool] beneath it.
// Every failure refuses the call: nothing runs on an error, a timeout, an
// unknown answer or a missing capability.
//
// # Choosing an approval path
//
// [Options.Mode] (or [Tool.Mode] per tool) chooses how a person is asked:
//
//   - [ModeElicit]: the client asks its user (MCP elicitation), in the call
//     or, with 2026-07-28 clients, across round trips with a sealed request
//     state. Proves only what the client relays.
//   - [ModePage]: a page on the user's machine ([Options.Page], package
//     approvalpage); the person clicks Approve in a browser. For local
//     servers whose client cannot elicit.
//   - [ModeChannel]: someone elsewhere decides ([Options.Approver]: a
//     webhook, or `mcpsafe approvals serve` through package channel); the
//     strongest path, and the one for remote and team deployments. A
//     client that cannot wait gets an approval_pending handle to call
//     again with.
//   - [ModeCard]: the MCP Apps approval card ([Options.Card], package
//     appcard) in hosts that render it.
//   - [ModeToken]: the plan and a one-time token the assistant passes back;
//     for reversible tools, or ones named in [Options.AllowTokenFor].
//   - [ModeAuto], the default: the strongest of these that is configured
//     and open to the client.
//
// [Tool.AutoApprove] rules and standing grants are looked at first. A tool
// may require more proof than a path gives ([Tool.MinAssurance]); the
// approval then fails with assurance_too_low. The examples show elicitation
// (the package example), a token (the Register example), the channel and
// standing grants.
//
// # Keys and replicas
//
// Grants are sealed with [Options.Keys] and spent in [Options.Ledger]. The
// zero values (a random key, an in-memory ledger) serve one process. For
// replicas, or a server whose pending approvals must outlive a restart,
// give every process the same key file ([LoadKeys]) and a shared ledger
// (ledger/redis or ledger/postgres; ledger/sqlite for the processes of one
// host): an approval is then redeemed once across all of them, an
// approval_pending handle runs on any replica, and a decision made while
// a process was down still runs the call once. The gate links no store:
// import the one you use.
//
// # The journal
//
// [Options.Journal] receives the audit trail (package journal keeps a
// hash-chained, fsync'd file). Records are written under two rules. What a
// call needs before it may run is written durably first, or the call is
// refused and nothing runs: the redemption of an approval, the approval
// itself (its words never overclaim: client-accepted, not "the user
// approved"), a standing grant's creation. What reports is best effort,
// with its own bounded time even when the caller left: refusals, the
// outcome (executed, failed, or ambiguous when the caller cancelled while
// it ran), a grant's end. A process killed between approval and outcome
// leaves the call ambiguous at the journal's next open; killed while it
// spent an approval, the journal says the approval may be spent and nothing
// ran.
//
// # Standing grants
//
// A tool with [Tool.Grants] lets the approver approve more than one call:
// "this exact call for an hour", or a scope written in CEL
// ([Options.GrantCEL], package grants/celscope). Each use is one atomic
// step in the ledger, bound to the tool's policy and the principal;
// irreversible tools offer grants only when named in
// [Options.AllowGrantsFor]. Package grants lists and revokes them.
//
// # Refusals
//
// A refused call answers isError with structuredContent
// {"status":"refused","reason":CODE,"message":...}; the codes (ReasonDeclined,
// ReasonTimeout, ReasonTargetChanged...) are a stable contract with the
// model. A tool refuses with its own code by returning [Refuse] from
// Resolve, Preview or Execute.
//
// # Around the root
//
// Package plan (a plan's diffs and tables, Plan.Parts), journal (the audit
// trail) and ledger (single use across replicas); approver, with channel and
// approvalpage (asking a person elsewhere); grants and grants/celscope;
// tracing/oteltracing and metrics ([Options.Tracer], [Options.Observer]).
package mcpsafe
