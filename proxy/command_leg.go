package proxy

import (
	"context"
	"os/exec"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CommandLeg is the LegacyUpstream of an upstream run as a command, for a
// proxy with clients of both generations (served over HTTP): a second
// process of the same command, started when the first client of the
// 2025-11-25 generation needs it, so that its upstream session is of its
// own generation (in which the upstream may ask it things mid-call), as a
// second session to an HTTP upstream is. Why a second process: a
// process's stdio carries one session, of one generation, and a proxy
// served over HTTP has clients of both, whose generations it learns only
// as they come. The two processes share no memory: an upstream that keeps
// state only in memory shows each generation of clients its own, and one
// that holds a lock (a journal, a browser profile, a device) fails to
// start twice, failing the calls of the second generation. The gate and
// the policy treat both legs alike; only the first process's tool list is
// served.
//
// A proxy served over stdio has one client and needs none: its one
// process speaks that client's generation (Config.ClientProtocol).
type CommandLeg struct {
	// Command returns a new, unstarted command for the upstream.
	Command func() *exec.Cmd

	mu    sync.Mutex
	pipe  *UpstreamPipe
	order *notifyOrder
}

// Connect starts the command and connects to it.
func (c *CommandLeg) Connect(ctx context.Context) (mcp.Connection, error) {
	pipe, err := StartUpstream(c.Command())
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.pipe = pipe
	pipe.order = c.order
	c.mu.Unlock()
	return pipe.Connect(ctx)
}

func (c *CommandLeg) close() {
	c.mu.Lock()
	pipe := c.pipe
	c.mu.Unlock()
	if pipe != nil {
		pipe.close()
	}
}
