package proxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// middleware sends each downstream request to the server it is for: tool
// calls and prompts by name, resources by the server that listed the URI.
// From there the server's own proxy middleware relays it. Lists are the
// union over the servers that are up, with prompt names prefixed as tool
// names are; the only server of a gateway, serving its names as they are,
// relays its own pages, cursors and all.
func (g *Gateway) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if srv := g.only(); srv != nil {
			switch req.(type) {
			case *mcp.ListPromptsRequest, *mcp.ListResourcesRequest, *mcp.ListResourceTemplatesRequest:
				return srv.middleware(next)(ctx, method, req)
			}
		}
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			if r.Params == nil {
				return next(ctx, method, req)
			}
			sl, srv := g.route(r.Params.Name)
			switch {
			case sl == nil:
				return next(ctx, method, req) // the SDK reports an unknown tool
			case srv == nil:
				return g.unavailable(sl, r.Params.Name), nil
			}
			return srv.middleware(next)(ctx, method, req)
		case *mcp.ListPromptsRequest:
			return relayResult(g.listPrompts(ctx, r))
		case *mcp.GetPromptRequest:
			srv, name, err := g.promptServer(ctx, req, r.Params.Name)
			if err != nil {
				return nil, err
			}
			c, p := *r, *r.Params
			p.Name, c.Params = name, &p
			return srv.middleware(next)(ctx, method, &c)
		case *mcp.ListResourcesRequest:
			return g.listResources(ctx, r)
		case *mcp.ListResourceTemplatesRequest:
			return g.listTemplates(ctx, r)
		case *mcp.ReadResourceRequest:
			srv, err := g.resourceServer(r.Params.URI)
			if err != nil {
				return nil, err
			}
			return srv.middleware(next)(ctx, method, req)
		case *mcp.CompleteRequest:
			if r.Params == nil || r.Params.Ref == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: no ref"}
			}
			c, p, ref := *r, *r.Params, *r.Params.Ref
			var srv *Server
			var err error
			if ref.Type == "ref/prompt" {
				srv, ref.Name, err = g.promptServer(ctx, req, ref.Name)
			} else {
				srv, err = g.resourceServer(ref.URI)
			}
			if err != nil {
				return nil, err
			}
			p.Ref, c.Params = &ref, &p
			return srv.middleware(next)(ctx, method, &c)
		}
		if method == "logging/setLevel" {
			// Every upstream first, then the SDK records the level to filter
			// relayed messages by. A 2026-07-28 upstream has no session
			// level: the proxy keeps it and puts it on each request (withCaps).
			p, _ := req.GetParams().(*mcp.SetLoggingLevelParams)
			for _, srv := range g.running() {
				if c := srv.Upstream.InitializeResult().Capabilities; c == nil || c.Logging == nil {
					continue
				}
				leg, err := srv.legFor(ctx, req)
				if err != nil {
					return nil, err
				}
				if leg.InitializeResult().ProtocolVersion >= modernProtocol {
					continue
				}
				if err := leg.SetLoggingLevel(ctx, p); err != nil {
					return nil, err
				}
			}
			g.levels().set(req.GetSession(), p)
		}
		return next(ctx, method, req)
	}
}

// only is the one server of a gateway that has one, when it is up and
// serves its names as they are.
func (g *Gateway) only() *Server {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, sl := range g.slots {
		if len(g.slots) == 1 && sl.spec.Bare {
			return sl.srv
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// promptServer finds the running server of a downstream prompt name and
// the name its upstream knows it by.
func (g *Gateway) promptServer(ctx context.Context, req mcp.Request, name string) (*Server, string, error) {
	srv, up, err := g.promptOwner(name)
	if !errors.Is(err, errUnknownPrompt) {
		return srv, up, err
	}
	// A client may get a prompt it did not list through the gateway: the
	// owners of bare names are learned from a fresh list.
	if _, err := g.listPrompts(ctx, req); err != nil {
		return nil, "", err
	}
	return g.promptOwner(name)
}

var errUnknownPrompt = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt"}

func (g *Gateway) promptOwner(name string) (*Server, string, error) {
	if srv := g.only(); srv != nil {
		return srv, name, nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	owner, up := "", name
	if server, rest, ok := g.prefixed(name); ok {
		owner, up = server, rest
	} else if owner, ok = g.prompts[name]; !ok {
		return nil, "", fmt.Errorf("%w %q", errUnknownPrompt, name)
	}
	if sl := g.slots[owner]; sl != nil && sl.srv != nil {
		return sl.srv, up, nil
	}
	return nil, "", invalid("prompt %q belongs to gateway server %q, which is down", name, owner)
}

// resourceServer finds the running server that listed uri, or the only
// server that offers resources at all.
func (g *Gateway) resourceServer(uri string) (*Server, error) {
	g.mu.Lock()
	owner, ok := g.resources[uri]
	g.mu.Unlock()
	if ok {
		if srv := g.Server(owner); srv != nil {
			return srv, nil
		}
		return nil, invalid("resource %q belongs to gateway server %q, which is down", uri, owner)
	}
	var found *Server
	for _, srv := range g.running() {
		if c := srv.Upstream.InitializeResult().Capabilities; c != nil && c.Resources != nil {
			if found != nil {
				return nil, invalid("resource %q was not listed by any gateway server, and several offer resources", uri)
			}
			found = srv
		}
	}
	if found == nil {
		return nil, invalid("no gateway server offers resource %q", uri)
	}
	return found, nil
}

// collect pages through one list of every running server that offers it,
// server by server (list fetches a page, page reads it): from[i] is the
// server that listed items[i]. The cache hints are the strictest of all:
// the shortest TTL, and private when any server says so.
func collect[R, T any](ctx context.Context, g *Gateway, req mcp.Request, pick func(*mcp.ServerCapabilities) bool,
	list func(context.Context, *mcp.ClientSession, string) (R, error), page func(R) ([]T, string, mcp.Cacheable),
) (items []T, from []*Server, cache mcp.Cacheable, err error) {
	cache = mcp.Cacheable{CacheScope: "public"}
	first := true
	for _, srv := range g.running() {
		if c := srv.Upstream.InitializeResult().Capabilities; c == nil || !pick(c) {
			continue
		}
		leg, err := srv.legFor(ctx, req)
		if err != nil {
			return nil, nil, cache, err
		}
		cursor := ""
		for {
			res, err := list(ctx, leg, cursor)
			if err != nil {
				return nil, nil, cache, protocolError(err)
			}
			got, next, c := page(res)
			if first || c.TTLMs < cache.TTLMs {
				cache.TTLMs = c.TTLMs
			}
			first = false
			if c.CacheScope == "private" {
				cache.CacheScope = "private"
			}
			items = append(items, got...)
			from = append(from, slices.Repeat([]*Server{srv}, len(got))...)
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return items, from, cache, nil
}

func (g *Gateway) listPrompts(ctx context.Context, req mcp.Request) (*mcp.ListPromptsResult, error) {
	prompts, from, cache, err := collect(ctx, g, req, func(c *mcp.ServerCapabilities) bool { return c.Prompts != nil },
		func(ctx context.Context, leg *mcp.ClientSession, cursor string) (*mcp.ListPromptsResult, error) {
			return leg.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		}, func(r *mcp.ListPromptsResult) ([]*mcp.Prompt, string, mcp.Cacheable) {
			return r.Prompts, r.NextCursor, r.Cacheable
		})
	if err != nil {
		return nil, err
	}
	res := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}, Cacheable: cache}
	owners := map[string]string{}
	for i, p := range prompts {
		c, srv := *p, from[i]
		c.Name = srv.down(p.Name)
		if o, dup := owners[c.Name]; dup {
			g.log.Error("proxy: prompt withheld: two gateway servers serve the name", "prompt", c.Name, "servers", []string{o, srv.member.name})
			continue
		}
		owners[c.Name] = srv.member.name
		res.Prompts = append(res.Prompts, &c)
	}
	g.mu.Lock()
	g.prompts = owners
	g.mu.Unlock()
	return res, nil
}

func (g *Gateway) listResources(ctx context.Context, req *mcp.ListResourcesRequest) (mcp.Result, error) {
	resources, from, cache, err := collect(ctx, g, req, func(c *mcp.ServerCapabilities) bool { return c.Resources != nil },
		func(ctx context.Context, leg *mcp.ClientSession, cursor string) (*mcp.ListResourcesResult, error) {
			return leg.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		}, func(r *mcp.ListResourcesResult) ([]*mcp.Resource, string, mcp.Cacheable) {
			return r.Resources, r.NextCursor, r.Cacheable
		})
	if err != nil {
		return nil, err
	}
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}, Cacheable: cache}
	owners := map[string]string{}
	for i, r := range resources {
		if o, dup := owners[r.URI]; dup && o != from[i].member.name {
			// Reads of it could not be routed without guessing.
			g.log.Error("proxy: resource withheld: two gateway servers list the URI", "uri", r.URI, "servers", []string{o, from[i].member.name})
			owners[r.URI] = ""
			continue
		}
		owners[r.URI] = from[i].member.name
		res.Resources = append(res.Resources, r)
	}
	res.Resources = slices.DeleteFunc(res.Resources, func(r *mcp.Resource) bool { return owners[r.URI] == "" })
	maps.DeleteFunc(owners, func(_, o string) bool { return o == "" })
	g.mu.Lock()
	g.resources = owners
	g.mu.Unlock()
	return res, nil
}

func (g *Gateway) listTemplates(ctx context.Context, req *mcp.ListResourceTemplatesRequest) (mcp.Result, error) {
	templates, _, cache, err := collect(ctx, g, req, func(c *mcp.ServerCapabilities) bool { return c.Resources != nil },
		func(ctx context.Context, leg *mcp.ClientSession, cursor string) (*mcp.ListResourceTemplatesResult, error) {
			return leg.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		}, func(r *mcp.ListResourceTemplatesResult) ([]*mcp.ResourceTemplate, string, mcp.Cacheable) {
			return r.ResourceTemplates, r.NextCursor, r.Cacheable
		})
	if err != nil {
		return nil, err
	}
	return &mcp.ListResourceTemplatesResult{ResourceTemplates: append([]*mcp.ResourceTemplate{}, templates...), Cacheable: cache}, nil
}
