package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio lane, one for a single upstream (a gateway of one) and a
// gateway alike: each client line is read once (frame.Read), and
//   - a tools/call of a tool that passes through, on a running server whose
//     upstream is a command of the client's generation (UpstreamPipe), goes
//     to that server as the client's line, with only the tool's name
//     changed to the upstream's when the gateway prefixes it; its response
//     and progress come back as the upstream's lines (fastlane.go);
//   - a cancellation of such a call goes to its server as is;
//   - a method the proxy does not know goes to the only server of a
//     gateway of one under its policy (unknown_methods.go), and is refused
//     otherwise (the SDK answers "method not found");
//   - every other line goes through the SDK server and client, once
//     sdkLine has screened it (client_lines.go).
// The lane opens once the client has finished its handshake.

// ServeStdio serves the proxy on in/out (see the gateway's ServeStdio).
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.member.g.ServeStdio(ctx, in, out)
}

// ServeStdio serves the gateway on in/out with the stdio lane: once the
// client's handshake has ended, each client line is offered to take, and a
// line take leaves goes to the SDK server. The lane and the SDK server
// write to the client one line at a time.
func (g *Gateway) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	var omu sync.Mutex
	writeDown := func(line []byte) error {
		omu.Lock()
		defer omu.Unlock()
		_, err := out.Write(line)
		return err
	}
	g.mu.Lock()
	g.down = writeDown
	for _, sl := range g.slots {
		if sl.srv != nil && sl.srv.pipe != nil {
			sl.srv.pipe.setDown(writeDown)
		}
	}
	g.mu.Unlock()
	sdkIn, sdkFeed := io.Pipe()
	go func() {
		defer sdkFeed.Close()
		br := bufio.NewReaderSize(in, 64<<10)
		open := false
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				if !open {
					open = initializedLine(line)
				} else if g.take(line, writeDown) {
					continue
				}
				feed, answer := sdkLine(line)
				if answer != nil {
					writeDown(answer)
				}
				if feed == nil {
					continue
				}
				if _, werr := sdkFeed.Write(feed); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	noClose := func() error { return nil }
	return g.MCP.Run(ctx, &mcp.IOTransport{Reader: sdkIn, Writer: funcWriter{writeDown, noClose}, MaxLineLength: -1})
}

// take offers a client line to the lane; false sends it the SDK path.
func (g *Gateway) take(line []byte, down func([]byte) error) bool {
	f := frame.Read(line)
	switch {
	case f.Kind == frame.Request && f.Method == "tools/call":
		return f.Alike && g.fastLane(f, line)
	case f.Kind == frame.Notification && f.Method == "notifications/cancelled":
		return f.Alike && g.fastCancel(f, line)
	case f.Kind != frame.Request && f.Kind != frame.Notification:
		return false
	}
	if srv := g.only(); srv != nil && srv.laneOpen() {
		return srv.relayUnknown(f, line, down)
	}
	return false
}

// laneOpen: the stdio lane reaches s's upstream (a command, of the
// 2025-11-25 generation: a client of the other generation goes through the
// SDK on both sides).
func (s *Server) laneOpen() bool {
	return s.pipe != nil && s.Upstream.InitializeResult().ProtocolVersion < modernProtocol
}

// fastLane forwards line (read as f, Alike) when it is a call of a tool
// that passes through on a running server the lane reaches.
func (g *Gateway) fastLane(f frame.Frame, line []byte) bool {
	_, srv := g.route(f.Tool)
	if srv == nil || !srv.laneOpen() {
		return false
	}
	upName := srv.up(f.Tool)
	c, ok := srv.fastCallOf(f, upName)
	if !ok {
		return false
	}
	if upName != f.Tool {
		// Only the name's bytes change (a gateway prefix comes off).
		quoted, err := json.Marshal(upName)
		if err != nil {
			return false
		}
		if line, ok = frame.Splice(make([]byte, 0, len(line)), line, f.Params["name"], quoted); !ok {
			return false
		}
	}
	if !srv.pipe.register(c) {
		return false // its id is already in flight: the SDK path answers as it would
	}
	srv.pipe.fastCalls.Add(1)
	if srv.pipe.writeUpstream(line) != nil {
		srv.pipe.endFast(c)
		return false
	}
	return true
}

// fastCancel forwards a cancellation to the server whose fast-lane call it
// names.
func (g *Gateway) fastCancel(f frame.Frame, line []byte) bool {
	for _, srv := range g.running() {
		if srv.pipe != nil && srv.pipe.fastCancel(f, line) {
			return true
		}
	}
	return false
}
