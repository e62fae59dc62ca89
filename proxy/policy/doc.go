// Package policy reads the files that configure mcpsafe's proxy: a
// policy file (which upstream tools are gated and how: rules, previews,
// resolvers, effects, grants, the upstream's requests of the client) and a
// gateway file (the upstream servers of a gateway, each with its policy).
// Both are strict YAML, one document, every key known; every mistake is an
// error that names its file and line and, for a misspelt key, the key it
// was probably meant to be.
//
// Rules, resolver arguments and effects are CEL, compiled in mcpsafe's one
// CEL environment under its one cost limit, the same grant scopes compile
// in (package grants/celscope): an expression sees tool, principal, args,
// args_digest and resolved.
//
//	pol, err := policy.Load("policy.yaml")
//	srv, err := proxy.NewServer(ctx, proxy.Config{Upstream: up, Policy: pol, Gate: opts})
package policy
