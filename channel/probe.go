package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mcpsafe/mcpsafe/internal/frame"
)

// WireProbe is the body of a start-up probe: POSTed to the webhook URL
// and signed like a request, it asks the service to check the signature
// and answer, and nothing else. The service creates no request from it,
// and its answer is never an approval.
type WireProbe struct {
	Version int    `json:"version"`
	Type    string `json:"type"` // always "probe"
	Nonce   string `json:"nonce"`
}

// Probe checks the channel before any call needs it: it sends a signed
// probe and reads the status. It returns nil when the service took the
// signature; an error wrapping ErrMisconfigured when the service refused
// it for a reason only the operator can fix (wrong secret, wrong URL,
// host not served: every call would fail so); and another error
// (ErrUnavailable, ErrTimeout) when the service could not be asked now.
// A service that does not know probes but took the signature (HTTP 400)
// counts as reachable.
func (w *Webhook) Probe(ctx context.Context) error {
	resp, err := w.postSigned(ctx, WireProbe{Version: 1, Type: "probe", Nonce: newNonce()})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299, resp.StatusCode == http.StatusBadRequest:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxResponseBytes))
		return nil
	}
	return statusError(resp, "start-up probe")
}

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
	var m WireProbe
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
	if len(body) > maxRequestBytes {
		s.refuse(w, r, "probe", fail(http.StatusRequestEntityTooLarge, "probe too large"))
		return
	}
	if err := VerifySignature(r.Header.Get(SignatureHeader), body, s.opts.Secret, time.Now(), s.opts.Tolerance); err != nil {
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

// postSigned sends v as a signed JSON POST to the webhook URL (a probe or a
// withdrawal: messages that ask for no decision). Its errors are already
// the package's (ErrRequest, ErrUnavailable, ErrTimeout); the caller closes
// the body.
func (w *Webhook) postSigned(ctx context.Context, v any) (*http.Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRequest, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRequest, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(SignatureHeader, Sign(w.secret, body, w.now()))
	resp, err := w.client.Do(req)
	if err != nil {
		return nil, w.transportError(ctx, err)
	}
	return resp, nil
}
