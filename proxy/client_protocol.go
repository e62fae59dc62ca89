package proxy

import (
	"bufio"
	"bytes"

	"github.com/mcpsafe/mcpsafe/internal/frame"
)

// ReadClientProtocol reads, without consuming it, the first line a client
// sends a proxy served over stdio and returns its protocol generation, for
// Config.ClientProtocol and GatewayOptions.ClientProtocol: "2025-11-25"
// when it is an initialize request (the handshake of 2025-11-25 and the
// versions before it, which an SDK server answers with one of them), else
// "2026-07-28" (a client of that generation starts with server/discover or
// a request that carries its version); "" when the input ends before a
// line. It blocks until the client writes its first line. Serve the proxy
// on r afterwards (ServeStdio), which then reads that line again.
func ReadClientProtocol(r *bufio.Reader) string {
	var line []byte
	for {
		b, _ := r.Peek(r.Buffered())
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line = b[:i+1]
			break
		}
		if _, err := r.Peek(len(b) + 1); err != nil {
			// The input ended, or the line is longer than r's buffer.
			if line, _ = r.Peek(r.Buffered()); len(line) == 0 {
				return ""
			}
			break
		}
	}
	if f := frame.Read(line); f.Kind == frame.Request && f.Method == "initialize" {
		return legacyProtocol
	}
	return modernProtocol
}
