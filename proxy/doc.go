// Package proxy puts the mcpsafe gate in front of an existing MCP server.
//
// It connects to the upstream server as an SDK client and re-exposes every
// upstream tool with the same schema and annotations. Tools that upstream
// does not mark read-only are registered behind the gate (with an
// approval_token argument added); read-only tools, resources, resource
// templates, prompts, completions, progress and cancellation pass through
// unchanged. A policy file can only make this stricter per tool, or mark a
// named tool reversible or auto-approved.
package proxy
