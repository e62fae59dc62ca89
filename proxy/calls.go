// The SDK path's calls: the middleware that relays what is not a gated
// tool call, and every call upstream (a pass-through, an approved call).
package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/tracemeta"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolError returns the upstream's JSON-RPC error itself when err
// carries one, so that the client gets its code, message and data.
func protocolError(err error) error {
	if jerr, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return jerr
	}
	return err
}

// middleware serves what the gateway's middleware routes to this server:
// tool calls go on to the gate or the pass-through handler (a continuation
// straight upstream), prompts, resources and completions are relayed to
// upstream unchanged. The requests in flight are tracked so that what
// upstream sends back mid-call can be routed to them.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call", "prompts/get", "resources/read":
			// The requests during which the upstream may ask or tell the
			// client something (long-lived ones such as subscriptions/listen
			// would make every routing ambiguous).
			ss, _ := req.GetSession().(*mcp.ServerSession)
			defer s.track(ctx, ss)()
		}
		if r, ok := req.(*mcp.CallToolRequest); ok {
			if r.Params != nil && isContinuation(r.Params.RequestState) {
				return s.continueCall(ctx, r)
			}
			return next(ctx, method, req)
		}
		leg, err := s.legFor(ctx, req)
		if err != nil {
			return nil, err
		}
		defer s.ownProgress(ctx, req)()
		switch r := req.(type) {
		case *mcp.ListResourcesRequest:
			return relayResult(leg.ListResources(ctx, r.Params))
		case *mcp.ListResourceTemplatesRequest:
			return relayResult(leg.ListResourceTemplates(ctx, r.Params))
		case *mcp.ReadResourceRequest:
			defer s.inOrder(ctx, leg)
			return relayResult(leg.ReadResource(ctx, withCaps(s, leg, r.Session, r.Params)))
		case *mcp.ListPromptsRequest:
			return relayResult(leg.ListPrompts(ctx, r.Params))
		case *mcp.GetPromptRequest:
			defer s.inOrder(ctx, leg)
			return relayResult(leg.GetPrompt(ctx, withCaps(s, leg, r.Session, r.Params)))
		case *mcp.CompleteRequest:
			return relayResult(leg.Complete(ctx, r.Params))
		}
		return next(ctx, method, req)
	}
}

// relayResult returns an upstream result as is, or its error; a typed nil
// must not become a non-nil Result.
func relayResult[R mcp.Result](res R, err error) (mcp.Result, error) {
	if err != nil {
		return nil, protocolError(err)
	}
	return res, nil
}

// withCaps keeps the downstream client's own _meta. On a 2026-07-28 leg
// that includes its identity and capabilities, which the upstream reads
// per request and must read from the client, not the proxy, less the
// capabilities the policy refuses to relay; the protocol version is the
// leg's own. A 2025-11-25 leg gets none of those keys.
func withCaps[P interface {
	GetMeta() map[string]any
	SetMeta(map[string]any)
}](s *Server, leg *mcp.ClientSession, down *mcp.ServerSession, p P) P {
	m := p.GetMeta()
	modern := leg.InitializeResult().ProtocolVersion >= modernProtocol
	level, hasLevel := s.levels().of(down)
	_, ownLevel := m[mcp.MetaKeyLogLevel]
	addLevel := modern && hasLevel && !ownLevel
	if m == nil && !addLevel {
		return p
	}
	out := map[string]any{}
	maps.Copy(out, m)
	delete(out, mcp.MetaKeyProtocolVersion)
	if !modern {
		delete(out, mcp.MetaKeyClientInfo)
		delete(out, mcp.MetaKeyClientCapabilities)
	} else if caps, ok := out[mcp.MetaKeyClientCapabilities].(map[string]any); ok {
		kept := maps.Clone(caps)
		for k := range policy.RequestKinds {
			if !s.pol().UpstreamRequests.Allows(k) {
				delete(kept, string(k))
			}
		}
		if el, ok := kept[string(policy.KindElicitation)].(map[string]any); ok && el["url"] != nil && !s.pol().UpstreamRequests.Allows(policy.KindURLElicitation) {
			// Form only; an empty elicitation object would declare form.
			if el["form"] == nil {
				delete(kept, string(policy.KindElicitation))
			} else {
				el = maps.Clone(el)
				delete(el, "url")
				kept[string(policy.KindElicitation)] = el
			}
		}
		out[mcp.MetaKeyClientCapabilities] = kept
	}
	if addLevel {
		// A client of the 2025-11-25 generation set its level for the
		// session; the 2026-07-28 upstream reads it from each request.
		out[mcp.MetaKeyLogLevel] = level
	}
	p.SetMeta(out)
	return p
}

// forward passes a read-only tool call through: same arguments, the
// client's input responses and the upstream's own request state, and the
// upstream's result or protocol error as is.
func (s *Server) forward(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := s.callUpstream(ctx, &mcp.CallToolParams{
		Name: s.up(req.Params.Name), Arguments: args,
		InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState,
	}, req)
	if err == nil && res.NeedsInput() {
		var asks mcp.InputRequestMap
		if asks, err = s.screenAsks(res.InputRequests); err == nil {
			out := *res
			out.InputRequests = asks
			res = &out
		}
	}
	if err != nil {
		return nil, protocolError(err)
	}
	return res, nil
}

// execute runs an approved call upstream with exactly the arguments the
// gate bound into the approval (canonical, without approval_token). The
// client's request state is the gate's and stays here.
func (s *Server) execute(ctx context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: s.up(c.Tool), Arguments: c.Arguments}
	res, err := s.callUpstream(ctx, params, c.Request)
	if err != nil {
		// The gate relays an upstream JSON-RPC error as it is; the
		// journal records the failure.
		return nil, err
	}
	res, err = s.afterGated(ctx, c.Request, params, c.ArgsDigest, c.Principal, res)
	if _, ok := errors.AsType[*jsonrpc.Error](err); ok {
		// Only the upstream's first answer is relayed as a protocol
		// error: what fails after it (asking the client, a retry) is the
		// tool's failure, reported as one.
		err = errors.New(err.Error())
	}
	return res, err
}

// callUpstream calls upstream once; it never retries, since a call that
// failed midway may have run. Cancelling ctx cancels the upstream call.
func (s *Server) callUpstream(ctx context.Context, params *mcp.CallToolParams, down *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	leg := s.Upstream
	if down != nil && down.Params != nil && down.Session != nil {
		var err error
		if leg, err = s.legFor(ctx, down); err != nil {
			return nil, err
		}
		params.Meta = maps.Clone(down.Params.Meta)
		delete(params.Meta, "progressToken")
		params = withCaps(s, leg, down.Session, params)
		if tok := down.Params.GetProgressToken(); tok != nil {
			up, done := s.routeProgress(ctx, down.Session, tok)
			defer done()
			params.SetProgressToken(up)
		}
	}
	// The upstream's spans join the trace under the gate's span (for a
	// gated call, its execute step) rather than the caller's.
	params.Meta = tracemeta.Inject(ctx, params.Meta)
	start := time.Now()
	res, err := leg.CallTool(ctx, params)
	s.inOrder(ctx, leg)
	if s.metrics != nil {
		s.metrics.Upstream(time.Since(start), err)
	}
	if err != nil && s.member.suspect != nil && ctx.Err() == nil {
		// -32005 is the SDK's "rejected by transport": the request never
		// got an answer from the upstream.
		if jerr, ok := errors.AsType[*jsonrpc.Error](err); !ok || jerr.Code == -32005 {
			s.member.suspect(s) // the upstream may be gone: the gateway checks
		}
	}
	return res, err
}

func (s *Server) onProgress(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok, ok := req.Params.ProgressToken.(string)
	if !ok {
		return
	}
	v, ok := s.progress.Load(tok)
	if !ok {
		return // not ours, or the call already ended
	}
	t := v.(progressTarget)
	p := *req.Params
	p.ProgressToken = t.token
	if err := t.session.NotifyProgress(context.WithoutCancel(t.ctx), &p); err != nil {
		s.log.Debug("proxy: progress not relayed", "err", err)
	}
}

// routeProgress routes the progress the upstream sends under up, a new
// token of the proxy's, to session with the client's own token tok
// (onProgress), until done runs and a grace period after: notifications
// are dispatched apart from responses and may be handled after the
// request returned.
func (s *Server) routeProgress(ctx context.Context, session *mcp.ServerSession, tok any) (up string, done func()) {
	up = fmt.Sprintf("mcpsafe-%d", s.progressID.Add(1))
	s.progress.Store(up, progressTarget{session: session, ctx: ctx, token: tok})
	return up, func() { time.AfterFunc(progressGrace, func() { s.progress.Delete(up) }) }
}

// ownProgress puts a token of the proxy's (routeProgress) in place of the
// client's progress token on a request the middleware relays upstream, as
// callUpstream does on a tool call: the upstream session is shared by
// clients, and a token a client chose must not reach it, where it could
// name another client's route (and that client get progress the upstream
// sends for this request). The returned function ends the route.
func (s *Server) ownProgress(ctx context.Context, req mcp.Request) func() {
	p, ok := req.GetParams().(mcp.RequestParams)
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if v := reflect.ValueOf(p); !ok || ss == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return func() {}
	}
	tok := p.GetProgressToken()
	if tok == nil {
		return func() {}
	}
	p.SetMeta(maps.Clone(p.GetMeta())) // the request's own map stays the client's
	up, done := s.routeProgress(ctx, ss, tok)
	p.SetProgressToken(up)
	return done
}
