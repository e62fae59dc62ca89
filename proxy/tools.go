// The upstream's tools: listing them, checking the policy against them,
// and registering each on the downstream server, gated or passing through;
// re-listed on every tools/list_changed.
package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/toolschema"
	"github.com/mcpsafe/mcpsafe/proxy/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func (s *Server) listUpstream(ctx context.Context) (map[string]*mcp.Tool, error) {
	tools := map[string]*mcp.Tool{}
	withheld := map[string]bool{}
	for t, err := range s.Upstream.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("proxy: listing upstream tools: %w", err)
		}
		if _, dup := tools[t.Name]; dup {
			return nil, fmt.Errorf("proxy: upstream lists tool %q twice", t.Name)
		}
		screened, err := screenTool(t)
		if err == nil {
			err = reservedName(t.Name, s.down(t.Name))
		}
		if err != nil {
			s.log.Error(err.Error())
			withheld[t.Name] = true
			continue
		}
		tools[t.Name] = screened
	}
	s.syncMu.Lock()
	s.withheld = withheld
	s.syncMu.Unlock()
	return tools, nil
}

// readOnly reports whether upstream claims t changes nothing. Only an
// explicit readOnlyHint: true counts.
func readOnly(t *mcp.Tool) bool { return t.Annotations != nil && t.Annotations.ReadOnlyHint }

// irreversible is the default: destructive unless upstream explicitly
// says destructiveHint: false.
func irreversible(t *mcp.Tool, tp *policy.Tool) bool {
	if tp != nil && tp.Irreversible != nil {
		return *tp.Irreversible
	}
	a := t.Annotations
	return a == nil || a.DestructiveHint == nil || *a.DestructiveHint
}

func (s *Server) gated(t *mcp.Tool) bool {
	tp := s.pol().Tools[t.Name]
	// A policy entry with settings gates the tool even if upstream later
	// starts calling it read-only: the policy only ever adds strictness.
	return (!readOnly(t) && !s.pol().TrustsUpstreamGate(t)) || (tp != nil && tp.HasSettings())
}

// checkPolicy refuses a policy that names tools upstream does not have, or
// that asks a read-only tool for gate settings without gate: true.
func checkPolicy(p *policy.Policy, tools map[string]*mcp.Tool) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.Tools)) {
		tp := p.Tools[name]
		t, ok := tools[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s:%d: tools.%s: upstream has no tool %q (it has: %s)", p.Source, tp.Line, name, name, strings.Join(slices.Sorted(maps.Keys(tools)), ", ")))
			continue
		}
		if readOnly(t) && !tp.Gate && tp.HasSettings() {
			errs = append(errs, fmt.Errorf("%s:%d: tools.%s: upstream marks it read-only, so it passes through ungated; add gate: true to gate it", p.Source, tp.Line, name))
		}
		errs = append(errs, p.CheckArgumentNames(tp, t.InputSchema), p.CheckTokenMode(tp, irreversible(t, tp)))
		if r := tp.Resolver; r != nil {
			rt, ok := tools[r.Tool]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s:%d: tools.%s.resolver: upstream has no tool %q", p.Source, r.Line, name, r.Tool))
			case !readOnly(rt):
				errs = append(errs, fmt.Errorf("%s:%d: tools.%s.resolver: %q is not marked read-only upstream; a resolver must change nothing", p.Source, r.Line, name, r.Tool))
			case p.Tools[r.Tool] != nil && p.Tools[r.Tool].HasSettings():
				errs = append(errs, fmt.Errorf("%s:%d: tools.%s.resolver: %q is gated by this policy and cannot resolve", p.Source, r.Line, name, r.Tool))
			}
		}
	}
	if p.TrustUpstreamGate && !slices.ContainsFunc(slices.Collect(maps.Values(tools)), p.TrustsUpstreamGate) {
		errs = append(errs, fmt.Errorf("%s:%d: trust_upstream_gate: no upstream tool declares its own %s argument, so the upstream does not gate itself as mcpsafe does (is it mcpsafe files or an mcpsafe proxy?); remove the key to gate its tools here", p.Source, p.TrustLine, mcpsafe.TokenField))
	}
	return errors.Join(errs...)
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
		gated := s.member.sticky.gate(name, s.gated(t))
		owns := toolschema.HasProperty(t.InputSchema, mcpsafe.TokenField)
		want[name] = registered{gated: gated, selfGated: !gated && !readOnly(t), ownsToken: owns, def: string(def), pol: s.pol().Tools[name]}
	}
	for name, r := range s.registered {
		if w, ok := want[name]; !ok || w != r {
			s.unregister(name) // deleting while ranging is allowed
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		if _, ok := s.registered[name]; ok {
			continue
		}
		w := want[name]
		if err := s.member.claim(s.down(name)); err != nil {
			errs = append(errs, err) // withheld, never shadowing another server's tool
			continue
		}
		if err := s.register(tools[name], w); err != nil {
			s.member.release(s.down(name))
			// The tool stays off rather than ungated.
			errs = append(errs, err)
			continue
		}
		s.registered[name] = w
	}
	return errors.Join(errs...)
}

// unregister takes name off the downstream server. Callers hold syncMu.
func (s *Server) unregister(name string) {
	if s.registered[name].gated {
		s.Gate.Remove(s.MCP, s.down(name))
	} else {
		s.MCP.RemoveTools(s.down(name))
	}
	delete(s.registered, name)
	s.member.release(s.down(name))
}

// withdrawAll takes every tool of this server off the shared downstream
// server (the SDK tells clients the list changed).
func (s *Server) withdrawAll() {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for name := range s.registered {
		s.unregister(name)
	}
}

func (s *Server) register(t *mcp.Tool, r registered) error {
	if !r.gated {
		copied := *t
		copied.Name = s.down(t.Name)
		s.MCP.AddTool(&copied, s.forward)
		return nil
	}
	tp := r.pol
	mode := s.pol().Mode
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
		Name:         s.down(t.Name),
		Title:        t.Title,
		Description:  t.Description,
		InputSchema:  t.InputSchema,
		OutputSchema: outSchema,
		Annotations:  t.Annotations,
		Irreversible: s.member.sticky.irreversibleNow(t.Name, tp != nil && tp.Irreversible != nil, irreversible(t, tp)),
		Preview:      s.previewFor(t.Name, tp),
		Execute:      s.execute,
		// An upstream behind its own mcpsafe gate (mcpsafe files, say)
		// already takes approval_token: it stays the upstream's argument,
		// and this gate approves the call without a token path of its own.
		OwnsTokenField: r.ownsToken,
	}
	if tp != nil {
		gt.Mode, gt.MinAssurance = tp.Mode, tp.MinAssurance
		gt.Deny, gt.Allow, gt.AutoApprove = tp.Deny, tp.Allow, tp.AutoApprove
		gt.SecretFields = tp.SecretFields
		gt.Grants = tp.Grants
		if tp.Resolver != nil {
			gt.Resolve = s.resolverFor(tp.Resolver)
		}
	}
	if err := s.Gate.Register(s.MCP, gt); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	return nil
}

// ownsToken reports whether approval_token is the upstream tool name's own
// argument, which the gate then keeps in the call's arguments.
func (s *Server) ownsToken(name string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	return s.registered[name].ownsToken
}

// passesThrough reports whether name is currently an ungated, read-only
// upstream tool.
func (s *Server) passesThrough(name string) bool {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	r, ok := s.registered[name]
	return ok && !r.gated && !r.selfGated
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
	for {
		select {
		case <-s.stopped.Done():
			return
		case <-s.syncReq:
		}
		tools, err := s.listUpstream(s.stopped)
		if err == nil {
			err = s.apply(tools)
		}
		if err != nil {
			s.log.Error("proxy: tool list sync failed; affected tools are withdrawn or unchanged", "err", err)
		}
	}
}
