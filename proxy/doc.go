// Package proxy puts the mcpsafe gate in front of an existing MCP server.
//
// It connects to the upstream server as an SDK client and re-exposes every
// upstream tool with the same schema and annotations. Tools that upstream
// does not mark read-only are registered behind the gate (with an
// approval_token argument added); everything else passes through
// unchanged, in both directions: read-only tools, resources and their
// subscriptions, prompts, completions, logging, progress, cancellation, and
// the upstream's elicitation, sampling and roots requests to a client that
// declared them (see relay.go and continuation.go). Over stdio, calls of
// tools that pass through take a fast lane that forwards the client's
// bytes as they are (fastlane.go); so do, over streamable HTTP, stateless
// 2026-07-28 calls (http_fastlane.go) and calls in the sessions of
// 2025-11-25 clients the upstream has nothing to ask
// (http_lane_stateful.go, with the call's id rewritten into a reserved id
// space of the shared upstream session). Every raw relay passes a frame's
// bytes only when internal/frame's reader says it reads alike to every
// parser (frame.Read, one rule). A policy file (package proxy/policy
// reads it) can only make this stricter per tool, mark a named tool
// reversible or auto-approved, and refuse kinds of upstream requests.
//
// Served over stdio, the proxy has one client, and its one upstream
// session (its one process, for a command) speaks that client's protocol
// generation (Config.ClientProtocol, which ReadClientProtocol reads from
// the client's first line). Served over HTTP, it has clients of both
// generations, and a 2025-11-25 client of an upstream that speaks
// 2026-07-28 gets a second session (Config.LegacyUpstream: over HTTP, or a
// second process of a command, CommandLeg).
//
// A Gateway (`mcpsafe proxy --config`, gateway.go) runs one such proxy per
// upstream on a single downstream server: names prefixed per server, one
// journal, ledger and channel, each server with its own policy and
// audience, restarts of servers that went away, and reload.
package proxy
