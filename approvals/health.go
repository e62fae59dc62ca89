package approvals

import (
	"net/http"
)

// Health and draining: what a load balancer and an orchestrator ask.
//
// /healthz answers 200 while the process serves (liveness); /readyz
// answers 200 only when the store answers and the replica is not
// draining (readiness): a replica whose database is down, or that is
// stopping, gets no new traffic.

// probePaths answer whatever the Host header says: an orchestrator's
// probe names the pod's address, and the answers reveal nothing.
var probePaths = map[string]bool{"/healthz": true, "/readyz": true}

func (s *Service) healthRoutes(m *http.ServeMux) {
	m.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "alive"})
	})
	m.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.isDraining() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "draining"})
			return
		}
		ctx, cancel := storeCtx()
		defer cancel()
		if err := s.st.ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "store unavailable"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
	})
}

// Drain makes the replica stop holding gates: /readyz fails (the load
// balancer sends it no new traffic), and every long poll it holds, or
// that still arrives, is answered 202 pending at once, letting go of its
// request: the gate keeps an approval_pending handle and its retry
// re-attaches to the request on another replica (the store is shared). A
// decision made meanwhile goes out as usual. approvals serve calls it on
// SIGTERM with a shared store.
func (s *Service) Drain() {
	s.drainOne.Do(func() { close(s.draining) })
}

func (s *Service) isDraining() bool {
	select {
	case <-s.draining:
		return true
	default:
		return false
	}
}

// Shared reports whether the service's store is shared with other
// replicas (PostgreSQL).
func (s *Service) Shared() bool { return s.st.shared() }
