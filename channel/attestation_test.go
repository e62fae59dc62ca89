package channel

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func newKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	return pub, priv
}

// Whoever holds the shared HMAC secret (every gated server does) can
// answer in the service's place. Without the signing key it cannot make an
// approval the gate accepts, and it cannot reuse one made for another call.
func TestForgedAttestationsRefused(t *testing.T) {
	pub, priv := newKey(t)
	_, otherPriv := newKey(t)
	req := testRequest("forge-1")
	good := Statement{Version: 1, ID: req.ID, Tool: req.Tool, ArgsDigest: req.ArgsDigest, Principal: req.Principal,
		Audience: req.Audience, ExpiresAt: req.ExpiresAt.UTC(), Approved: true, Approvers: []string{"alice"},
		Assurance: "channel", DecidedAt: time.Now().UTC()}
	sign := func(k ed25519.PrivateKey, mod func(*Statement)) Attestation {
		st := good
		st.Approvers = append([]string(nil), good.Approvers...)
		if mod != nil {
			mod(&st)
		}
		a, err := SignStatement(k, st)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	answer := func(a any, approvers ...string) string {
		if len(approvers) == 0 {
			approvers = []string{"alice"}
		}
		b, _ := json.Marshal(map[string]any{"id": req.ID, "approved": true, "approvers": approvers, "attestation": a})
		return string(b)
	}
	withGrant := func(a any, grant string) string {
		b, _ := json.Marshal(map[string]any{"id": req.ID, "approved": true, "approvers": []string{"alice"}, "attestation": a, "grant": grant})
		return string(b)
	}
	altered := sign(priv, nil)
	altered.Statement = bytes.Replace(altered.Statement, []byte(req.ArgsDigest), []byte(strings.Repeat("0", 64)), 1)
	unknownField := sign(priv, nil)
	cases := []struct {
		name string
		body string
		want string // "" = approved
	}{
		{"control: signed statement for this call", answer(sign(priv, nil)), ""},
		{"no attestation", `{"id":"forge-1","approved":true,"approvers":["alice"]}`, "no signed statement"},
		{"answer adds a standing grant", withGrant(sign(priv, nil), "tmp-15m"), "chooses grant"},
		{"answer swaps the signed grant", withGrant(sign(priv, func(s *Statement) { s.Grant = "tmp-15m" }), "all-forever"), "chooses grant"},
		{"control: the signed grant", withGrant(sign(priv, func(s *Statement) { s.Grant = "tmp-15m" }), "tmp-15m"), ""},
		{"control: once is this call alone", withGrant(sign(priv, nil), "once"), ""},
		{"signed by another key", answer(sign(otherPriv, nil)), "does not match the service's public key"},
		{"statement altered after signing", answer(altered), "does not match the service's public key"},
		{"signed for another request", answer(sign(priv, func(s *Statement) { s.ID = "forge-0" })), "signed for request"},
		{"signed for other arguments", answer(sign(priv, func(s *Statement) { s.ArgsDigest = strings.Repeat("1", 64) })), "other arguments"},
		{"signed for another tool", answer(sign(priv, func(s *Statement) { s.Tool = "read_file" })), "signed for tool"},
		{"signed for another audience", answer(sign(priv, func(s *Statement) { s.Audience = "other@host" })), "signed for audience"},
		{"signed for another principal", answer(sign(priv, func(s *Statement) { s.Principal = "eve" })), "signed for principal"},
		{"signed for another expiry", answer(sign(priv, func(s *Statement) { s.ExpiresAt = s.ExpiresAt.Add(time.Hour) })), "another expiry"},
		{"decided after expiry", answer(sign(priv, func(s *Statement) { s.DecidedAt = req.ExpiresAt })), "not before the request expired"},
		{"signed denial", answer(sign(priv, func(s *Statement) { s.Approved = false })), "does not approve"},
		{"answer adds an approver", answer(sign(priv, nil), "alice", "bob"), "differ from the answer"},
		{"signed approver swapped", answer(sign(priv, func(s *Statement) { s.Approvers = []string{"bob"} })), "differ from the answer"},
		{"bad signature encoding", answer(map[string]any{"statement": json.RawMessage(unknownField.Statement), "signature": "!!"}), "not base64"},
		{"extra field in the envelope", answer(map[string]any{"statement": json.RawMessage(unknownField.Statement), "signature": unknownField.Signature, "x": 1}), "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(answering(t, 200, tc.body))
			defer srv.Close()
			d, err := newHook(t, srv.URL, WithServiceKey(pub)).Approve(context.Background(), req)
			if tc.want == "" {
				if err != nil || !d.Approved || len(d.Evidence) == 0 {
					t.Fatalf("control refused: %+v, %v", d, err)
				}
				return
			}
			if err == nil || d.Approved || !errors.Is(err, ErrAttestation) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %+v, %v; want a refusal naming %q", d, err, tc.want)
			}
		})
	}
}
