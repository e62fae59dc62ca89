package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/mcpsafe/mcpsafe/internal/canon"
	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Methods the proxy does not know (future methods, vendor extensions, the
// tasks extension's tasks/*): the SDK server in front answers them "method
// not found". Relaying them is what a transparent gateway does, but such a
// method may run a tool by another name (a vendor's "x-acme/run {tool,
// arguments}", a request wrapping a tools/call) and so go around the gate.
// Hence:
//
//   - A client's unknown requests and notifications reach the upstream only
//     where the policy says `unknown_methods: relay`; the default refuses a
//     method whose effect nobody here can read.
//   - Even then, refuseUnknown refuses a message that does not read alike
//     to every parser (frame.Read), a method in the tools/ namespace or
//     equal to a known one up to case, a method that names a tool that does
//     not pass through (methodNamesTool), and a message with any key or
//     string that names one or is "tools/call" (namesTool). That catches the
//     shapes a wrapper takes, not an extension that computes a tool's name:
//     hence relaying stays opt-in.
//   - The upstream's unknown notifications reach the client: they cannot
//     run anything upstream.
//
// The relay is raw, and for a single upstream only: on the stdio lane
// (lane_stdio.go) the client's line and the upstream's answer pass as they
// were; on the HTTP lane (http_fastlane.go), for stateless 2026-07-28
// requests, a request that declares a client capability the policy does
// not relay is refused too. Elsewhere (a gateway from a configuration file,
// which cannot tell whose method it is and refuses the key at startup; HTTP
// clients before 2026-07-28; --http-stateful) unknown methods are refused.

// knownClientMethods are the methods the SDK server in front handles; any
// other method a client sends is unknown to the proxy.
var knownClientMethods = map[string]bool{
	"initialize": true, "ping": true, "server/discover": true, "subscriptions/listen": true,
	"tools/list": true, "tools/call": true,
	"prompts/list": true, "prompts/get": true,
	"resources/list": true, "resources/templates/list": true, "resources/read": true,
	"resources/subscribe": true, "resources/unsubscribe": true,
	"completion/complete": true, "logging/setLevel": true,
	"notifications/cancelled": true, "notifications/initialized": true,
	"notifications/roots/list_changed": true, "notifications/progress": true,
}

// knownUpstreamMethods are the methods the proxy's SDK client handles; the
// upstream's other notifications are relayed raw.
var knownUpstreamMethods = map[string]bool{
	"ping": true, "roots/list": true, "sampling/createMessage": true, "elicitation/create": true, "completion/complete": true,
	"notifications/cancelled": true, "notifications/progress": true, "notifications/message": true,
	"notifications/tools/list_changed": true, "notifications/prompts/list_changed": true,
	"notifications/resources/list_changed": true, "notifications/resources/updated": true,
	"notifications/elicitation/complete": true, "notifications/subscriptions/acknowledged": true,
}

// isUnknown: f, as frame.Read read it, is a single JSON-RPC request or
// notification of a method the proxy does not know, with a plain id. Such
// a frame is relayed only when it is Alike, and refused otherwise;
// anything else (a response, a batch, a frame whose top level does not
// read strictly) goes the SDK path.
func isUnknown(f frame.Frame) bool {
	if (f.Kind != frame.Request && f.Kind != frame.Notification) || knownClientMethods[f.Method] {
		return false
	}
	return f.ID == "" || (frame.PlainID(f.ID) && !strings.HasPrefix(f.ID, `"`+sdkIDPrefix))
}

// unknownMethod is the one decision of both relays, stdio and HTTP, on a
// client's message f: ok false when it is not one of an unknown method
// (the caller passes it on as before); otherwise why it may not reach the
// upstream, "" when it may. ownCaps: the message declares its own client
// capabilities (a stateless 2026-07-28 request), which must all be ones
// the policy relays: raw bytes cannot be filtered.
func (s *Server) unknownMethod(f frame.Frame, ownCaps bool) (why string, ok bool) {
	if !isUnknown(f) {
		return "", false
	}
	why = s.refuseUnknown(f)
	if why == "" && ownCaps {
		why = s.declaresRefused(f.Params)
	}
	if why != "" {
		s.log.Info("proxy: unknown method refused", "method", f.Method, "why", why)
	}
	return why, true
}

// refuseUnknown says why an unknown message may not reach the upstream,
// or "" when it may.
func (s *Server) refuseUnknown(f frame.Frame) string {
	if !s.pol().RelayUnknownMethods {
		return fmt.Sprintf("mcpsafe proxy: %q is not a method the proxy knows, and the policy does not relay unknown methods (unknown_methods: relay)", f.Method)
	}
	m := strings.ToLower(strings.TrimSpace(f.Method))
	if strings.HasPrefix(m, "tools/") {
		return fmt.Sprintf("mcpsafe proxy: %q is in the tools/ namespace; tools run only through tools/call, behind the gate", f.Method)
	}
	for k := range knownClientMethods {
		if strings.EqualFold(k, m) {
			return fmt.Sprintf("mcpsafe proxy: %q differs from the method %q only in case or spacing", f.Method, k)
		}
	}
	if !f.Alike {
		// An upstream that matches member names under case folding (any
		// server built on encoding/json) reads "Params" or "paramſ" as
		// the params: what is relayed is only what every parser reads
		// alike, and the scan below read.
		return fmt.Sprintf("mcpsafe proxy: %q cannot be read the same way by every JSON parser (%s); an upstream may read it otherwise", f.Method, f.Why)
	}
	blocked := s.blockedNames()
	if name, ok := methodNamesTool(f.Method, blocked); ok {
		return fmt.Sprintf("mcpsafe proxy: the method %q names the tool %q; a tool that does not pass through runs only through tools/call, behind the gate", f.Method, name)
	}
	for _, k := range slices.Sorted(maps.Keys(f.Top)) {
		if name, ok := namesTool(f.Top[k], blocked); ok {
			return fmt.Sprintf("mcpsafe proxy: the %s of %q names %q; a tool that does not pass through runs only through tools/call, behind the gate", k, f.Method, name)
		}
	}
	return ""
}

// declaresRefused says why params may not go upstream as they are: its
// _meta declares a client capability the policy does not relay (the SDK
// path strips those; raw bytes cannot be). params come from an Alike frame:
// read strictly at every depth, _meta spelt exactly.
func (s *Server) declaresRefused(params map[string]json.RawMessage) string {
	meta, ok := frame.Members(params["_meta"])
	if !ok {
		return ""
	}
	for mk, mv := range meta {
		if !strings.EqualFold(mk, mcp.MetaKeyClientCapabilities) {
			continue
		}
		caps, ok := frame.Members(mv)
		if !ok {
			return "mcpsafe proxy: the declared client capabilities cannot be read unambiguously"
		}
		if k := s.refusedCapability(caps); k != "" {
			return fmt.Sprintf("mcpsafe proxy: the request declares the client capability %q, which the policy does not relay to the upstream", k)
		}
	}
	return ""
}

// methodNamesTool reports a tool of blocked (names under case folding, as
// blockedNames gives them) that method names: the method split at '/',
// ':' and '.' holds the tool's name, split the same way, as a run of
// parts ("x-acme/fs.delete" names "fs.delete" as well as "delete"). A
// name with no parts (all separators) is looked for as a substring. Both
// relays, stdio and HTTP, judge methods by it.
func methodNamesTool(method string, blocked map[string]bool) (string, bool) {
	parts := methodParts(method)
	for name := range blocked {
		np := methodParts(name)
		if name == "" {
			continue
		}
		if len(np) == 0 {
			if strings.Contains(canon.FoldKey(method), name) {
				return name, true
			}
			continue
		}
		for i := 0; i+len(np) <= len(parts); i++ {
			if slices.Equal(parts[i:i+len(np)], np) {
				return name, true
			}
		}
	}
	return "", false
}

// methodParts splits a method or tool name at '/', ':' and '.', each part
// trimmed and folded.
func methodParts(s string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == ':' || r == '.' }) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, canon.FoldKey(p))
		}
	}
	return out
}

// namesTool reports the first key or string in params (a member's value)
// that names tools/call or a tool of blocked (blockedNames), compared
// under case folding. A value that cannot be read whole is treated as
// naming one.
func namesTool(params json.RawMessage, blocked map[string]bool) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(params))
	for {
		t, err := dec.Token()
		if err == io.EOF {
			return "", false
		}
		if err != nil {
			return "unreadable parameters", true
		}
		str, ok := t.(string)
		if !ok {
			continue
		}
		folded := canon.FoldKey(strings.TrimSpace(str))
		if folded == canon.FoldKey("tools/call") || blocked[folded] {
			return str, true
		}
	}
}

// blockedNames are the upstream tools that do not pass through, under
// Unicode simple case folding (as encoding/json matches names, so "ſ"
// stands for "s"): the gated ones and the ones withheld from clients.
func (s *Server) blockedNames() map[string]bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	out := make(map[string]bool, len(s.registered)+len(s.withheld))
	for name, r := range s.registered {
		if r.gated || r.selfGated {
			out[canon.FoldKey(name)] = true
		}
	}
	for name := range s.withheld {
		out[canon.FoldKey(strings.TrimSpace(name))] = true
	}
	return out
}

// relayUnknown handles a client line of an unknown method on the stdio
// lane: relayed raw, or refused (a request with an error response, a
// notification dropped). It reports whether it took the line.
func (s *Server) relayUnknown(f frame.Frame, line []byte, down func([]byte) error) bool {
	why, ok := s.unknownMethod(f, false)
	if !ok {
		return false
	}
	refuse := func(why string) { down(append(errorBody(f.ID, codeMethodNotFound, why), '\n')) }
	if why != "" {
		if f.ID != "" {
			refuse(why)
		}
		return true
	}
	u := s.pipe
	if f.ID == "" {
		return u.writeUpstream(line) == nil
	}
	c := fastCall{id: f.ID}
	if !u.register(c) {
		refuse("mcpsafe proxy: a request with this id is already in flight")
		return true
	}
	if u.writeUpstream(line) != nil {
		u.endFast(c)
		return false
	}
	return true
}
