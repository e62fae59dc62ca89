package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/mcpsafe/mcpsafe/proxy/policy"
)

// Reload applies a new configuration, or refuses it whole and leaves the
// running one as it was. The new file must parse and compile (LoadGateway
// does that), and each changed policy must fit its upstream's tools as
// they are now. Then:
//
//   - a server whose policy changed only in its tools section keeps its
//     upstream session; its tools are registered again under the new
//     policy. The gate binds every approval to a hash of its tool's policy,
//     so approvals and tokens of the tools whose entry changed are void,
//     and those of every other tool stay good;
//   - a server whose upstream, audience, mode, token or grant opt-ins,
//     prefix or upstream_requests changed is restarted (a new audience or
//     mode voids all of its approvals), a removed one is stopped, an added
//     one started. Each keeps its name's rug-pull memory (see stickiness):
//     a tool its server ever gated stays gated, whatever the new upstream
//     session announces.
//
// A restarted or added server that fails to start is reported and retried
// with backoff, as after a crash; the others run on.
func (g *Gateway) Reload(ctx context.Context, file *policy.GatewayFile) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	g.mu.Lock()
	old, closed := maps.Clone(g.slots), g.closed
	g.mu.Unlock()
	if closed {
		return errors.New("proxy: gateway closed")
	}

	type inPlace struct {
		srv *Server
		sp  *policy.ServerSpec
	}
	var retool []inPlace
	var restart, add []*policy.ServerSpec
	keep := map[string]bool{}
	errs := []error{file.CheckAudiences(g.opts.SharedLedger)}
	for _, sp := range file.Servers {
		keep[sp.Name] = true
		sl := old[sp.Name]
		switch {
		case sl == nil:
			add = append(add, sp)
		case connKey(sl.spec) != connKey(sp):
			restart = append(restart, sp)
		case sl.spec.PolicyText != sp.PolicyText:
			srv := g.Server(sp.Name)
			if srv == nil {
				restart = append(restart, sp) // down: it starts with the new policy
				continue
			}
			tools, err := srv.listUpstream(ctx)
			if err == nil {
				err = checkPolicy(sp.Policy, tools)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("server %s: %w", sp.Name, err))
			}
			retool = append(retool, inPlace{srv, sp})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("proxy: %s refused, the running configuration stays: %w", file.Source, err)
	}
	for _, r := range retool {
		if err := r.srv.setPolicy(ctx, r.sp.Policy); err != nil {
			errs = append(errs, fmt.Errorf("server %s: %w", r.sp.Name, err))
		}
		g.mu.Lock()
		if sl := g.slots[r.sp.Name]; sl != nil {
			sl.spec = r.sp
		}
		g.mu.Unlock()
	}
	for name, sl := range old {
		if !keep[name] {
			g.stopSlot(sl)
		}
	}
	for _, sp := range restart {
		g.stopSlot(old[sp.Name])
		add = append(add, sp)
	}
	for _, sp := range add {
		sl := g.newSlot(sp)
		srv, err := g.start(ctx, sl)
		if err != nil {
			errs = append(errs, fmt.Errorf("server %s (retrying): %w", sp.Label(), err))
			g.mu.Lock()
			sl.down = "it failed to start: " + err.Error()
			gen := sl.gen
			g.mu.Unlock()
			g.wg.Go(func() { g.retry(sl, gen) })
			continue
		}
		g.up(sl, srv)
	}
	return errors.Join(errs...)
}

// stopSlot stops a server and forgets it.
func (g *Gateway) stopSlot(sl *slot) {
	g.mu.Lock()
	sl.gen++
	srv := sl.srv
	sl.srv = nil
	if g.slots[sl.spec.Name] == sl {
		delete(g.slots, sl.spec.Name)
	}
	g.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// setPolicy re-registers every tool under pol, which fits the upstream's
// tools (checked by the caller).
func (s *Server) setPolicy(ctx context.Context, pol *policy.Policy) error {
	tools, err := s.listUpstream(ctx)
	if err != nil {
		return err
	}
	if err := checkPolicy(pol, tools); err != nil {
		return err
	}
	if old := s.policyP.Load(); old != nil && old.RequireUserInteraction != pol.RequireUserInteraction {
		return errors.New("require_user_interaction changes only with a restart of the server (the gate reads it at start)")
	}
	s.policyP.Store(pol)
	return s.apply(tools)
}

// WatchFile calls changed each time the content of the file at path
// differs from what it was at the previous look, looking every interval
// until ctx ends. It compares content, not times: an editor that rewrites
// the same bytes changes nothing, and a change within the same second is
// still seen. A file that cannot be read is skipped until it can.
func WatchFile(ctx context.Context, path string, every time.Duration, changed func()) {
	last, _ := fileDigest(path)
	watchFrom(ctx, path, every, last, changed)
}

func fileDigest(path string) ([32]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}, false
	}
	return sha256.Sum256(b), true
}

// watchFrom is WatchFile from a first look already taken (last).
func watchFrom(ctx context.Context, path string, every time.Duration, last [32]byte, changed func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		d, ok := fileDigest(path)
		if !ok || d == last {
			continue
		}
		last = d
		changed()
	}
}

// connKey is everything about a server that needs a new upstream session
// (and a new gate) when it changes: the gate's mode and opt-ins
// (allow_token_for, allow_grants_for) are fixed when it is built. A change
// in the policy's tools alone is applied in place.
func connKey(sp *policy.ServerSpec) string {
	p := sp.Policy
	b, _ := json.Marshal(struct {
		Command  []string
		Env      map[string]string
		Dir, URL string
		Audience string
		Bare     bool
		Mode     string
		OptIns   any
		Grants   []string
		UR       policy.UpstreamRequests
	}{sp.Command, sp.Env, sp.Dir, sp.URL, sp.Audience, sp.Bare, string(p.Mode), p.AllowTokenFor, p.AllowGrantsFor, p.UpstreamRequests})
	return string(b)
}
