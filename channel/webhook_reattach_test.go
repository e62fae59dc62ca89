package channel

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A long poll whose connection drops (the service replica was killed, or a
// balancer found none up: 502/504) is sent again, freshly signed, and
// so re-attaches to the request on a replica that is up; the answer there
// counts. Controls: an answer about the request itself (409, 400, a denial)
// is never sent again, and a drop on every try still fails closed.
func TestWebhookReattachesAfterADrop(t *testing.T) {
	type seen struct {
		id, nonce string
	}
	server := func(first func(w http.ResponseWriter), later string) (*httptest.Server, func() []seen) {
		var mu sync.Mutex
		var got []seen
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			raw, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(raw))
			if err := VerifySignature(r.Header.Get(SignatureHeader), raw, testSecret, time.Now(), time.Minute); err != nil {
				t.Errorf("a send is not signed: %v", err)
			}
			var req WireRequest
			json.Unmarshal(raw, &req)
			mu.Lock()
			got = append(got, seen{req.ID, req.Nonce})
			n := len(got)
			mu.Unlock()
			if n == 1 || later == "" {
				first(w)
				return
			}
			answering(t, http.StatusOK, later)(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv, func() []seen {
			mu.Lock()
			defer mu.Unlock()
			return append([]seen(nil), got...)
		}
	}
	drop := func(w http.ResponseWriter) {
		c, _, _ := w.(http.Hijacker).Hijack()
		c.Close()
	}
	status := func(code int) func(http.ResponseWriter) {
		return func(w http.ResponseWriter) { w.WriteHeader(code) }
	}
	for _, tc := range []struct {
		name  string
		first func(http.ResponseWriter)
		later string
		want  error
		sends int
	}{
		{"dropped connection", drop, `{"approved":true,"approver":"alice"}`, nil, 2},
		{"502 from the balancer", status(http.StatusBadGateway), `{"approved":true,"approver":"alice"}`, nil, 2},
		{"504 from the balancer", status(http.StatusGatewayTimeout), `{"approved":true,"approver":"alice"}`, nil, 2},
		{"503 from the service", status(http.StatusServiceUnavailable), `{"approved":true,"approver":"alice"}`, ErrUnavailable, 1},
		{"drop, then a denial", drop, `{"approved":false,"approver":"bob"}`, ErrDenied, 2},
		// Controls: answers about the request are final.
		{"409 conflict", status(http.StatusConflict), `{"approved":true}`, ErrUnavailable, 1},
		{"400 bad request", status(http.StatusBadRequest), `{"approved":true}`, ErrUnavailable, 1},
		{"dropped every time", drop, "", ErrUnavailable, reattachTries},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, sent := server(tc.first, tc.later)
			d, err := newHook(t, srv.URL).Approve(context.Background(), testRequest("r-drop"))
			checkOutcome(t, d, err, tc.want, "")
			got := sent()
			if len(got) != tc.sends {
				t.Fatalf("%d sends, want %d", len(got), tc.sends)
			}
			nonces := map[string]bool{}
			for _, s := range got {
				if s.id != "r-drop" {
					t.Fatalf("a re-attach sent request %q", s.id)
				}
				nonces[s.nonce] = true
			}
			if len(nonces) != len(got) {
				t.Fatal("a re-attach reused a nonce: each send must be signed anew")
			}
		})
	}
}
