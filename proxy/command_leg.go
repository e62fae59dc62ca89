package proxy

import (
	"context"
	"os/exec"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// CommandLeg is the LegacyUpstream of an upstream run as a command: a
// second process of the same command, started when the first client of
// the 2025-11-25 generation needs it, so that its upstream session is of
// its own generation (in which the upstream may ask it things mid-call),
// as a second session to an HTTP upstream is. The two processes share no
// memory: an upstream that keeps state only in memory shows each
// generation of clients its own. The gate and the policy treat both legs
// alike; only the first process's tool list is served.
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
