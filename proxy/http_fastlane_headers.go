package proxy

import (
	"mime"
	"net"
	"net/http"
	"strings"

	"github.com/mcpsafe/mcpsafe/internal/loopback"
)

// What the HTTP fast lane asks of a request's headers before it reads the
// body (http_fastlane.go).

// fastHTTPHeaders: a POST that the SDK's stateless handler would take as
// a 2026-07-28 request of the streamable transport, with no session.
func fastHTTPHeaders(r *http.Request) bool {
	if r.Method != http.MethodPost || len(r.Header.Values("Mcp-Session-Id")) > 0 {
		return false
	}
	return laneHeaders(r, modernProtocol)
}

// laneHeaders: r's headers are those of a message of protocol version,
// as the SDK handler takes it (for a session, the caller checked its one
// session id), that the lanes may take: JSON, from a client that accepts
// JSON and an event stream, past the DNS rebinding protection.
func laneHeaders(r *http.Request, version string) bool {
	if v := r.Header.Values("Mcp-Protocol-Version"); len(v) != 1 || v[0] != version {
		return false
	}
	if mt, err := mediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	return acceptsBoth(r.Header.Values("Accept")) && loopbackSafe(r)
}

// mediaType is mime.ParseMediaType's media type and error for ct, without
// its parameters (and, for the bare types the SDK sends, without its
// allocations).
func mediaType(ct string) (string, error) {
	switch ct {
	case "application/json", "text/event-stream":
		return ct, nil
	}
	mt, _, err := mime.ParseMediaType(ct)
	return mt, err
}

// acceptsBoth: the client accepts JSON and an event stream, named exactly
// (wildcards go to the SDK, which judges them itself).
func acceptsBoth(values []string) bool {
	var json, stream bool
	for _, v := range values {
		for tok := range strings.SplitSeq(v, ",") {
			base, _, _ := strings.Cut(tok, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				json = true
			case "text/event-stream":
				stream = true
			}
		}
	}
	return json && stream
}

// loopbackSafe mirrors the SDK's DNS rebinding protection: on a loopback
// listener only a request naming a loopback host is taken here.
func loopbackSafe(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	if !loopback.HostPort(local.String()) {
		return true
	}
	return loopback.HostPort(r.Host)
}
