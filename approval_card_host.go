package mcpsafe

import (
	"context"
	"runtime"
	"slices"
	"sync"
	"weak"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The approval card belongs to an MCP server, not to a gate: a server may
// carry the tools of several gates (a gateway, `mcpsafe proxy --config`,
// has one gate per member, each with its own audience), and a server has
// one tool of a name. So each server gets one cardHost, on the first
// gated tool registered with a card: the card's resource (listed once),
// one decision tool (approver.CardDecisionTool) and one view of
// tools/list. The decision tool hands each decision to the one gate that
// opens its capability:
//
//   - A capability is a grant sealed with the AEAD associated data holding
//     the issuing gate's audience (internal/seal). Each attached gate tries
//     to open it with its own audience and key: authentication comes
//     first, and nothing of the value is parsed unless it authenticated.
//     A failed open tells a gate nothing and changes nothing, so trying
//     every gate cannot confuse one.
//   - The gate that opens it must also hold the capability's tool. With
//     distinct audiences (a gateway derives or requires one per member)
//     exactly one gate opens it. Two that both do (two gates given the
//     same audience and key) make the decision ambiguous: it is refused
//     (token_invalid) and nothing runs, rather than one member's
//     capability being decided by another member's gate.
//   - The chosen gate then checks everything as before (tool, argument
//     digest, target, principal, audience, policy, expiry, single use),
//     so a capability decided with another call's arguments is refused.
//
// A gate leaves the host when its last tool is removed (a gateway member
// that went down or was reloaded); hosts go with their server (a weak
// key).
type cardHost struct {
	mu    sync.Mutex
	gates []cardGate // attached, in the order they came
}

// cardGate is an attached gate and its card's resource.
type cardGate struct {
	g         *Gate
	uri, html string
}

var (
	cardHostsMu sync.Mutex
	cardHosts   = map[weak.Pointer[mcp.Server]]*cardHost{}
)

// cardHostOf returns server's card host, installing it (the decision
// tool, the middleware) the first time when create is set; nil when there
// is none and create is not set.
func cardHostOf(server *mcp.Server, create bool) *cardHost {
	key := weak.Make(server)
	cardHostsMu.Lock()
	defer cardHostsMu.Unlock()
	if h := cardHosts[key]; h != nil || !create {
		return h
	}
	h := &cardHost{}
	cardHosts[key] = h
	runtime.AddCleanup(server, func(k weak.Pointer[mcp.Server]) {
		cardHostsMu.Lock()
		delete(cardHosts, k)
		cardHostsMu.Unlock()
	}, key)
	// (The tool and the middleware hold h, never server: the host goes
	// when the server does.)
	server.AddTool(&mcp.Tool{
		Name:        approver.CardDecisionTool,
		Description: "The approval card's decision (app-only: the card calls it when the user clicks Approve or Deny).",
		InputSchema: cardDecisionSchema,
		Meta:        mcp.Meta{"ui": map[string]any{"visibility": []string{"app"}}},
	}, h.decide)
	server.AddReceivingMiddleware(h.middleware)
	return h
}

// attachCard puts g on server's card host (once).
func (g *Gate) attachCard(server *mcp.Server) {
	if g.opts.Card == nil {
		return
	}
	h := cardHostOf(server, true)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.gates {
		if a.g == g {
			return
		}
	}
	uri, html := g.opts.Card.Resource()
	h.gates = append(h.gates, cardGate{g: g, uri: uri, html: html})
}

// detachCard takes g off server's card host when it holds no tool any
// more: it decides nothing there, and a gate of the same audience that
// replaces it (a restarted gateway member) must be the only one to open
// that audience's capabilities.
func (g *Gate) detachCard(server *mcp.Server) {
	h := cardHostOf(server, false)
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	g.mu.Lock()
	empty := len(g.tools) == 0
	g.mu.Unlock()
	if empty {
		// (A copy: a list attached() handed out stays as it was.)
		h.gates = slices.DeleteFunc(slices.Clone(h.gates), func(a cardGate) bool { return a.g == g })
	}
}

func (h *cardHost) attached() []cardGate {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gates
}

// holds reports whether name is one of g's gated tools.
func (g *Gate) holds(name string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tools[name] != nil
}

// cardOwners are the gates that open decision, for their own audience, as
// an approval card's decision capability for one of their tools.
func cardOwners(gates []cardGate, decision string) []*Gate {
	var out []*Gate
	for _, a := range gates {
		gr, err := openGrant(a.g.ring, a.g.opts.Audience, decision)
		if err == nil && gr.Mode == grantCardDecision && a.g.holds(gr.Tool) {
			out = append(out, a.g)
		}
	}
	return out
}

// decide is the decision tool's handler: the decision goes to the one
// gate that opens its capability (see cardHost). Anything else is refused
// by the first gate, which says why and journals it, as one gate alone
// would.
func (h *cardHost) decide(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	gates := h.attached()
	if len(gates) == 0 {
		return shuttingDown("no gated tool of this server takes approval card decisions now").Result(), nil
	}
	var in cardDecision
	if frame.Decode(req.Params.Arguments, &in) != nil || in.Decision == "" {
		return gates[0].g.decideCard(ctx, req) // refused: the arguments
	}
	switch owners := cardOwners(gates, in.Decision); len(owners) {
	case 1:
		return owners[0].decideCard(ctx, req)
	case 0:
		return gates[0].g.decideCard(ctx, req) // refused: token_invalid
	}
	r := refusal(ReasonTokenInvalid, "more than one gate of this server opens that approval card's decision (they share an audience and a key), so it decides nothing; nothing ran. Give each gate its own audience")
	gates[0].g.journalRefusal(ctx, nil, approver.CardDecisionTool, r)
	return r.Result(), nil
}

// middleware serves the card's resource (read by its URI; listed first,
// once, to MCP Apps clients) and the view of tools/list that declares the
// card to MCP Apps clients only. The resource is served here, not
// registered: a registered one would make every server (a proxy too)
// declare resources to every client.
func (h *cardHost) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if rr, ok := req.(*mcp.ReadResourceRequest); ok && method == "resources/read" && rr.Params != nil {
			for _, a := range h.attached() {
				if a.uri == rr.Params.URI {
					return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: a.uri, MIMEType: appsMIMEType, Text: a.html, Meta: cardCSP()}}}, nil
				}
			}
		}
		res, err := next(ctx, method, req)
		switch r := req.(type) {
		case *mcp.ListToolsRequest:
			if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				res = h.toolList(list, r.ClientCapabilities())
			}
		case *mcp.ListResourcesRequest:
			if list, ok := res.(*mcp.ListResourcesResult); ok && err == nil && clientTakesCard(r.ClientCapabilities()) && (r.Params == nil || r.Params.Cursor == "") {
				out := *list
				out.Resources = append(h.resources(), list.Resources...)
				res = &out
			}
		}
		return res, err
	}
}

// cardCSP is the card's resource _meta: no domains at all, a border.
func cardCSP() mcp.Meta {
	return mcp.Meta{"ui": map[string]any{"csp": map[string]any{"connectDomains": []string{}, "resourceDomains": []string{}}, "prefersBorder": true}}
}

// resources lists each card resource of the attached gates once.
func (h *cardHost) resources() []*mcp.Resource {
	var out []*mcp.Resource
	seen := map[string]bool{}
	for _, a := range h.attached() {
		if !seen[a.uri] {
			seen[a.uri] = true
			out = append(out, &mcp.Resource{URI: a.uri, Name: "mcpsafe approval card", MIMEType: appsMIMEType, Meta: cardCSP()})
		}
	}
	return out
}

// toolList is tools/list as a client sees it: without the decision tool
// unless it declared MCP Apps; with it, the gated tools name their gate's
// card and say in their description that it will appear. The SDK's tools
// are shared, so changed ones are copies.
func (h *cardHost) toolList(list *mcp.ListToolsResult, caps *mcp.ClientCapabilities) *mcp.ListToolsResult {
	apps := clientTakesCard(caps)
	gates := h.attached()
	out := *list
	out.Tools = make([]*mcp.Tool, 0, len(list.Tools))
	for _, t := range list.Tools {
		if t.Name == approver.CardDecisionTool && !apps {
			continue
		}
		for _, a := range gates {
			a.g.mu.Lock()
			gt := a.g.tools[t.Name]
			a.g.mu.Unlock()
			if gt == nil {
				continue
			}
			if a.g.cardChosen(gt, caps) {
				c := *t
				c.Meta = mcp.Meta{}
				for k, v := range t.Meta {
					c.Meta[k] = v
				}
				c.Meta["ui"] = map[string]any{"resourceUri": a.uri}
				c.Description += cardSentence
				t = &c
			}
			break
		}
		out.Tools = append(out.Tools, t)
	}
	return &out
}
