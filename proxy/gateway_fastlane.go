package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"

	"github.com/mcpsafe/mcpsafe/internal/frame"
)

// ServeStdio serves the gateway on in/out with the stdio fast lane of
// every server that runs as a command: a call to a tool that passes
// through goes to its server as the client's line with only the tool's
// name changed to the upstream's, and the response comes back as the
// upstream's bytes. Every other line goes through the SDK path, as with a
// single upstream (see fastlane.go).
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	setDown := func(down func([]byte) error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.down = down
		for _, sl := range g.slots {
			if sl.srv != nil && sl.srv.pipe != nil {
				sl.srv.pipe.setDown(down)
			}
		}
	}
	take := func(line []byte, _ func([]byte) error) (bool, error) {
		return g.fastLane(line) || g.fastCancel(line), nil
	}
	return serveLines(ctx, g.MCP, in, out, setDown, initializedLine, take)
}

// fastLane forwards line when it is a call of a tool that passes through
// on a running server with a pipe of the client's generation.
func (g *Gateway) fastLane(line []byte) bool {
	f := frame.Read(line)
	if !f.Alike || f.Kind != frame.Request || f.Method != "tools/call" {
		return false
	}
	name := f.Tool
	_, srv := g.route(name)
	if srv == nil || srv.pipe == nil || srv.Upstream.InitializeResult().ProtocolVersion >= modernProtocol {
		return false
	}
	upName := srv.up(name)
	// The same checks as the single proxy's, for the upstream's name.
	c, ok := srv.fastCallOf(f, upName)
	if !ok {
		return false
	}
	if upName != name {
		quoted, err := json.Marshal(upName)
		if err != nil {
			return false
		}
		f.Params["name"] = quoted
		p, err := json.Marshal(f.Params)
		if err != nil {
			return false
		}
		f.Top["params"] = p
		if line, err = json.Marshal(f.Top); err != nil {
			return false
		}
		line = append(line, '\n')
	}
	if !srv.pipe.startFast(c) {
		return false
	}
	if srv.pipe.writeUpstream(line) != nil {
		srv.pipe.endFast(c)
		return false
	}
	return true
}

// fastCancel forwards a cancellation to the server whose fast-lane call it
// names.
func (g *Gateway) fastCancel(line []byte) bool {
	if !bytes.Contains(line, []byte(`notifications/cancelled`)) {
		return false
	}
	for _, srv := range g.running() {
		if srv.pipe != nil && srv.pipe.fastCancel(line) {
			return true
		}
	}
	return false
}
