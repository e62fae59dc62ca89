package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/mcpsafe/mcpsafe/serverconf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Version is reported to clients and to the upstream server.
var Version = "dev"

// Config is everything `mcpsafe proxy` takes.
type Config struct {
	// Upstream is the transport to the protected server (a command over
	// stdio, streamable HTTP, or in-memory in tests). Required.
	Upstream mcp.Transport
	// Policy is the parsed policy file; nil is the default policy.
	Policy *Policy
	// Gate configures keys, ledger, journal and channel. Its Mode and
	// AllowTokenFor must be empty: they come from the policy file, so that
	// one file says everything about what is gated and how.
	Gate   serverconf.Config
	Logger *slog.Logger
}

// Server is a running proxy: a downstream MCP server connected to one
// upstream session.
type Server struct {
	MCP         *mcp.Server
	Gate        *mcpsafe.Gate
	Upstream    *mcp.ClientSession
	JournalPath string

	policy *Policy
	conf   *serverconf.Gate
	log    *slog.Logger

	syncMu     sync.Mutex // serializes tool-list syncs
	registered map[string]registered
	syncReq    chan struct{}
	stop       chan struct{}
	stopOnce   sync.Once
	syncDone   chan struct{}

	progress   sync.Map // upstream progress token -> progressTarget
	progressID atomic.Uint64
}

type registered struct {
	gated bool
	def   string // the upstream definition, to notice changes
}

// progressGrace is how long progress from upstream is still relayed after
// its call returned.
const progressGrace = 5 * time.Second

type progressTarget struct {
	session *mcp.ServerSession
	token   any
}

// NewServer connects upstream, checks the policy against the upstream's
// tools and builds the downstream server. Anything doubtful is a startup
// error: a policy naming a tool upstream lacks, a resolver that is not a
// read-only upstream tool, an opt-in for a tool that is not gated and
// irreversible.
func NewServer(ctx context.Context, cfg Config) (_ *Server, err error) {
	if cfg.Upstream == nil {
		return nil, errors.New("proxy: no upstream transport")
	}
	if cfg.Gate.Mode != "" || len(cfg.Gate.AllowTokenFor) > 0 {
		return nil, errors.New("proxy: mode and token opt-ins belong in the policy file (mode, allow_token_for)")
	}
	pol := cfg.Policy
	if pol == nil {
		pol = &Policy{Source: "default policy"}
	}
	s := &Server{
		policy: pol, log: cfg.Logger, registered: map[string]registered{},
		syncReq: make(chan struct{}, 1), stop: make(chan struct{}), syncDone: make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	gc := cfg.Gate
	gc.Mode, gc.AllowTokenFor = pol.Mode, pol.AllowTokenFor
	if gc.Audience == "" {
		gc.Audience = "mcpsafe-proxy"
	}
	if gc.Logger == nil {
		gc.Logger = s.log
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.conf, err = serverconf.Build(ctx, gc); err != nil {
		return nil, err
	}
	s.JournalPath = s.conf.JournalPath
	if s.Gate, err = mcpsafe.New(s.conf.Options); err != nil {
		return nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpsafe-proxy", Version: Version}, &mcp.ClientOptions{
		// No roots, sampling or elicitation: the upstream gets nothing
		// from the downstream client that could widen what it may touch.
		Capabilities:                &mcp.ClientCapabilities{},
		ToolListChangedHandler:      func(context.Context, *mcp.ToolListChangedRequest) { s.requestSync() },
		ProgressNotificationHandler: s.onProgress,
		Logger:                      s.log,
	})
	if s.Upstream, err = client.Connect(ctx, cfg.Upstream, nil); err != nil {
		return nil, fmt.Errorf("proxy: connecting upstream: %w", err)
	}
	init := s.Upstream.InitializeResult()
	if init == nil {
		return nil, errors.New("proxy: upstream sent no initialize result")
	}
	s.MCP = mcp.NewServer(&mcp.Implementation{Name: "mcpsafe-proxy", Version: Version}, &mcp.ServerOptions{
		Instructions: instructions(init.Instructions),
		Capabilities: downstreamCaps(init.Capabilities),
		Logger:       s.log,
	})
	s.MCP.AddReceivingMiddleware(s.middleware)

	tools, err := s.listUpstream(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkPolicy(pol, tools); err != nil {
		return nil, err
	}
	if err := s.apply(tools); err != nil {
		return nil, err
	}
	if err := s.Gate.CheckOptIns(); err != nil {
		return nil, fmt.Errorf("%s: allow_token_for: %w", pol.Source, err)
	}
	go s.syncLoop()
	return s, nil
}

func instructions(upstream string) string {
	note := "This server is behind mcpsafe: tools that change something need the user's approval of a plan first; show the plan to the user as given."
	if upstream == "" {
		return note
	}
	return upstream + "\n\n" + note
}

// downstreamCaps advertises what upstream offers. List-change and
// subscription notifications for resources and prompts are not relayed,
// so they are not advertised.
func downstreamCaps(up *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	if up == nil {
		return caps
	}
	if up.Resources != nil {
		caps.Resources = &mcp.ResourceCapabilities{}
	}
	if up.Prompts != nil {
		caps.Prompts = &mcp.PromptCapabilities{}
	}
	if up.Completions != nil {
		caps.Completions = &mcp.CompletionCapabilities{}
	}
	return caps
}

// Close disconnects upstream and releases the journal and ledger.
func (s *Server) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	var errs []error
	if s.Upstream != nil {
		if err := s.Upstream.Close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	if s.conf != nil {
		errs = append(errs, s.conf.Close())
	}
	return errors.Join(errs...)
}

// HTTPHandler serves the proxy over streamable HTTP (see files.Server's
// HTTPHandler for stateless versus stateful).
func (s *Server) HTTPHandler(stateless bool) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.MCP },
		// A client that drops the request has left: a channel call waiting
		// for a human then withdraws it (clients on protocol 2026-07-28 and
		// later; older ones cancel with a notification, which reaches the
		// call only in stateful mode).
		&mcp.StreamableHTTPOptions{Stateless: stateless, PropagateRequestCancellation: true})
}

func (s *Server) listUpstream(ctx context.Context) (map[string]*mcp.Tool, error) {
	tools := map[string]*mcp.Tool{}
	for t, err := range s.Upstream.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("proxy: listing upstream tools: %w", err)
		}
		if _, dup := tools[t.Name]; dup {
			return nil, fmt.Errorf("proxy: upstream lists tool %q twice", t.Name)
		}
		tools[t.Name] = t
	}
	return tools, nil
}

// readOnly reports whether upstream claims t changes nothing. Only an
// explicit readOnlyHint: true counts.
func readOnly(t *mcp.Tool) bool { return t.Annotations != nil && t.Annotations.ReadOnlyHint }

// irreversible is the default: destructive unless upstream explicitly
// says destructiveHint: false.
func irreversible(t *mcp.Tool, tp *ToolPolicy) bool {
	if tp != nil && tp.Irreversible != nil {
		return *tp.Irreversible
	}
	a := t.Annotations
	return a == nil || a.DestructiveHint == nil || *a.DestructiveHint
}

func (s *Server) gated(t *mcp.Tool) bool {
	tp := s.policy.Tools[t.Name]
	// A policy entry with settings gates the tool even if upstream later
	// starts calling it read-only: the policy only ever adds strictness.
	return !readOnly(t) || (tp != nil && tp.hasSettings())
}

// checkPolicy refuses a policy that names tools upstream does not have, or
// that asks a read-only tool for gate settings without gate: true.
func checkPolicy(p *Policy, tools map[string]*mcp.Tool) error {
	var errs []error
	names := make([]string, 0, len(p.Tools))
	for n := range p.Tools {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		tp := p.Tools[name]
		t, ok := tools[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s:%d: tools.%s: upstream has no tool %q (it has: %s)", p.Source, tp.Line, name, name, strings.Join(sortedNames(tools), ", ")))
			continue
		}
		if readOnly(t) && !tp.Gate && tp.hasSettings() {
			errs = append(errs, fmt.Errorf("%s:%d: tools.%s: upstream marks it read-only, so it passes through ungated; add gate: true to gate it", p.Source, tp.Line, name))
		}
		if r := tp.Resolver; r != nil {
			rt, ok := tools[r.Tool]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s:%d: tools.%s.resolver: upstream has no tool %q", p.Source, r.Line, name, r.Tool))
			case !readOnly(rt):
				errs = append(errs, fmt.Errorf("%s:%d: tools.%s.resolver: %q is not marked read-only upstream; a resolver must change nothing", p.Source, r.Line, name, r.Tool))
			case p.Tools[r.Tool] != nil && p.Tools[r.Tool].hasSettings():
				errs = append(errs, fmt.Errorf("%s:%d: tools.%s.resolver: %q is gated by this policy and cannot resolve", p.Source, r.Line, name, r.Tool))
			}
		}
	}
	return errors.Join(errs...)
}

func sortedNames(tools map[string]*mcp.Tool) []string {
	out := make([]string, 0, len(tools))
	for n := range tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// apply makes the downstream tool set match tools: removed and changed
// tools come off, new and changed ones go on. The SDK notifies downstream
// clients of the change.
func (s *Server) apply(tools map[string]*mcp.Tool) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	want := map[string]registered{}
	for name, t := range tools {
		def, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("proxy: tool %q: %w", name, err)
		}
		want[name] = registered{gated: s.gated(t), def: string(def)}
	}
	var drop []string
	for name, r := range s.registered {
		if w, ok := want[name]; !ok || w != r {
			drop = append(drop, name)
		}
	}
	for _, name := range drop {
		if s.registered[name].gated {
			s.Gate.Remove(s.MCP, name)
		} else {
			s.MCP.RemoveTools(name)
		}
		delete(s.registered, name)
	}
	var errs []error
	for _, name := range sortedNames(tools) {
		if _, ok := s.registered[name]; ok {
			continue
		}
		w := want[name]
		if err := s.register(tools[name], w.gated); err != nil {
			// The tool stays off rather than ungated.
			errs = append(errs, err)
			continue
		}
		s.registered[name] = w
	}
	return errors.Join(errs...)
}

func (s *Server) register(t *mcp.Tool, gated bool) error {
	if !gated {
		copied := *t
		s.MCP.AddTool(&copied, s.forward)
		return nil
	}
	tp := s.policy.Tools[t.Name]
	mode := s.policy.Mode
	if tp != nil && tp.Mode != "" {
		mode = tp.Mode
	}
	outSchema := t.OutputSchema
	if mode != mcpsafe.ModeElicit && mode != mcpsafe.ModeChannel {
		// An approval_required result cannot match the upstream's output
		// schema, and clients that validate structured content (the
		// TypeScript SDK does) reject it, breaking the token flow. Only the
		// modes that never return one keep the schema.
		outSchema = nil
	}
	gt := mcpsafe.Tool{
		Name:         t.Name,
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: outSchema,
		Annotations:  t.Annotations,
		Irreversible: irreversible(t, tp),
		Preview:      s.previewFor(t.Name, tp),
		Execute:      s.execute,
	}
	if tp != nil {
		gt.Mode = tp.Mode
		gt.Deny, gt.Allow, gt.AutoApprove = tp.Deny, tp.Allow, tp.AutoApprove
		gt.SecretFields = tp.SecretFields
		if tp.Resolver != nil {
			gt.Resolve = s.resolverFor(tp.Resolver)
		}
	}
	if err := s.Gate.Register(s.MCP, gt); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}

// passesThrough reports whether name is currently an ungated, read-only
// upstream tool.
func (s *Server) passesThrough(name string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	r, ok := s.registered[name]
	return ok && !r.gated
}

func (s *Server) requestSync() {
	select {
	case s.syncReq <- struct{}{}:
	default: // a sync is already due; it will see this change too
	}
}

// syncLoop re-lists upstream tools after each tools/list_changed. It runs
// apart from the notification handler, which must not wait on a request
// over the same connection.
func (s *Server) syncLoop() {
	defer close(s.syncDone)
	for {
		select {
		case <-s.stop:
			return
		case <-s.syncReq:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		tools, err := s.listUpstream(ctx)
		if err == nil {
			err = s.apply(tools)
		}
		cancel()
		if err != nil {
			s.log.Error("proxy: tool list sync failed; affected tools are withdrawn or unchanged", "err", err)
		}
	}
}

type callKey struct{}

// middleware relays what is not a tool call to upstream unchanged, and
// remembers each tools/call request so that progress can be routed back.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch r := req.(type) {
		case *mcp.CallToolRequest:
			return next(context.WithValue(ctx, callKey{}, r), method, req)
		case *mcp.ListResourcesRequest:
			return s.Upstream.ListResources(ctx, r.Params)
		case *mcp.ListResourceTemplatesRequest:
			return s.Upstream.ListResourceTemplates(ctx, r.Params)
		case *mcp.ReadResourceRequest:
			return s.Upstream.ReadResource(ctx, r.Params)
		case *mcp.ListPromptsRequest:
			return s.Upstream.ListPrompts(ctx, r.Params)
		case *mcp.GetPromptRequest:
			return s.Upstream.GetPrompt(ctx, r.Params)
		case *mcp.CompleteRequest:
			return s.Upstream.Complete(ctx, r.Params)
		}
		return next(ctx, method, req)
	}
}

// forward passes a read-only tool call through: same arguments, and the
// upstream's result or protocol error as is.
func (s *Server) forward(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	return s.callUpstream(ctx, req.Params.Name, args, req)
}

// execute runs an approved call upstream with exactly the arguments the
// gate bound into the approval (canonical, without approval_token).
func (s *Server) execute(ctx context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
	req, _ := ctx.Value(callKey{}).(*mcp.CallToolRequest)
	return s.callUpstream(ctx, c.Tool, c.Arguments, req)
}

// callUpstream calls upstream once; it never retries, since a call that
// failed midway may have run. Cancelling ctx cancels the upstream call.
func (s *Server) callUpstream(ctx context.Context, name string, args json.RawMessage, down *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: name, Arguments: args}
	if down != nil && down.Params != nil && down.Session != nil {
		if tok := down.Params.GetProgressToken(); tok != nil {
			up := fmt.Sprintf("mcpsafe-%d", s.progressID.Add(1))
			s.progress.Store(up, progressTarget{session: down.Session, token: tok})
			// Notifications are dispatched apart from responses and may be
			// handled after the call returned: keep the route a while.
			defer time.AfterFunc(progressGrace, func() { s.progress.Delete(up) })
			params.SetProgressToken(up)
		}
	}
	return s.Upstream.CallTool(ctx, params)
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
	if err := t.session.NotifyProgress(ctx, &p); err != nil {
		s.log.Debug("proxy: progress not relayed", "err", err)
	}
}

// resolverFor calls a read-only upstream tool for the current state of
// what a call points at. An upstream error, an error result or an empty
// result refuses the call (the gate makes any error a refusal).
func (s *Server) resolverFor(r *Resolver) func(context.Context, mcpsafe.Call) (mcpsafe.Resolved, error) {
	return func(ctx context.Context, c mcpsafe.Call) (mcpsafe.Resolved, error) {
		// Checked at startup, and again on every call: upstream may since
		// have dropped the tool's readOnlyHint, and a resolver must never
		// run a tool that changes something without approval.
		if !s.passesThrough(r.Tool) {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s is no longer a read-only upstream tool", r.Tool)
		}
		args, err := r.arguments(ctx, c)
		if err != nil {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "%v", err)
		}
		res, err := s.Upstream.CallTool(ctx, &mcp.CallToolParams{Name: r.Tool, Arguments: args})
		if err != nil {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s failed: %v", r.Tool, err)
		}
		text := resultText(res)
		if res.IsError {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s reported an error: %s", r.Tool, prompt.Quote(text))
		}
		out := mcpsafe.Resolved{}
		if strings.TrimSpace(text) != "" {
			out["text"] = text
		}
		if res.StructuredContent != nil {
			// Round-trip so that the value is plain JSON data for CEL and
			// for the digest.
			b, err := json.Marshal(res.StructuredContent)
			if err != nil {
				return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s: %v", r.Tool, err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s: %v", r.Tool, err)
			}
			if v != nil {
				out["structured"] = v
			}
		}
		if len(out) == 0 {
			return nil, mcpsafe.Refuse(mcpsafe.ReasonResolverFailed, "resolver %s returned nothing", r.Tool)
		}
		out["tool"] = r.Tool
		return out, nil
	}
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// previewFor describes a call: the policy's template when there is one,
// and always every argument, each rendered with prompt.Quote so that the
// human reads exactly what will be sent.
func (s *Server) previewFor(name string, tp *ToolPolicy) func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
	return func(_ context.Context, c mcpsafe.Call, r mcpsafe.Resolved) (mcpsafe.Plan, error) {
		var args map[string]json.RawMessage
		if err := json.Unmarshal(c.Arguments, &args); err != nil {
			return mcpsafe.Plan{}, fmt.Errorf("arguments: %w", err)
		}
		quoted := make(map[string]string, len(args))
		keys := make([]string, 0, len(args))
		for k, v := range args {
			quoted[k] = quoteJSON(v)
			keys = append(keys, k)
		}
		slices.Sort(keys)
		plan := mcpsafe.Plan{Summary: fmt.Sprintf("Call %s on the upstream server", prompt.Quote(name))}
		if tp != nil && tp.Preview != nil {
			var b strings.Builder
			if err := tp.Preview.Execute(&b, quoted); err != nil {
				return mcpsafe.Plan{}, mcpsafe.Refuse(mcpsafe.ReasonPreviewFailed, "the policy's preview template failed: %v", err)
			}
			plan.Summary = oneLine(b.String())
		}
		for _, k := range keys {
			plan.Details = append(plan.Details, prompt.Quote(k)+" = "+quoted[k])
		}
		if r != nil {
			text, _ := r["text"].(string)
			tool, _ := r["tool"].(string)
			if text != "" {
				plan.Details = append(plan.Details, "current state (from "+prompt.Quote(tool)+"): "+prompt.Quote(text))
			}
		}
		return plan, nil
	}
}

// quoteJSON renders a string argument as its quoted value and anything
// else as its quoted compact JSON.
func quoteJSON(v json.RawMessage) string {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return prompt.Quote(s)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, v); err != nil {
		return prompt.Quote(string(v))
	}
	return prompt.Quote(b.String())
}

// oneLine keeps an operator's multi-line template on one line. Argument
// values are already escaped by prompt.Quote and hold no raw line breaks,
// and their spaces are left alone.
func oneLine(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}
