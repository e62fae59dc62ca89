package approvals

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/internal/frame"
)

// isProbe reports whether body is a probe: its "type" is exactly
// "probe" (a request never has "type"; a withdrawal says "withdraw").
func isProbe(body []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return false
	}
	return string(m["type"]) == `"probe"`
}

func decodeProbe(body []byte) error {
	var m channel.WireProbe
	if err := frame.Decode(body, &m); err != nil {
		return fmt.Errorf("probe body: %v", err)
	}
	if m.Version != 1 {
		return fmt.Errorf("probe version %d not supported (want 1)", m.Version)
	}
	return nil
}

// handleProbe answers a gate's start-up probe: the signature is checked
// like a request's, and nothing is kept: no request, no replay entry (a
// replayed probe learns only that the service is up, which its answer to
// anyone says too). The answer is never an approval.
func (s *Service) handleProbe(w http.ResponseWriter, r *http.Request, body []byte) {
	if len(body) > channel.MaxRequestBytes {
		s.refuse(w, r, "probe", fail(http.StatusRequestEntityTooLarge, "probe too large"))
		return
	}
	if err := channel.VerifySignature(r.Header.Get(channel.SignatureHeader), body, s.opts.Secret, time.Now(), s.opts.Tolerance); err != nil {
		s.refuse(w, r, "probe", fail(http.StatusUnauthorized, "%v", err))
		return
	}
	if err := decodeProbe(body); err != nil {
		s.refuse(w, r, "probe", fail(http.StatusBadRequest, "%v", err))
		return
	}
	s.log().Info("a gate checked the channel: signature accepted", "remote", r.RemoteAddr)
	writeJSON(w, http.StatusOK, map[string]any{"approved": false, "probe": "ok"})
}
