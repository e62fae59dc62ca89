package proxy

import (
	"fmt"
	"regexp"
	"sync"

	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream server may re-announce its tools at any time
// (tools/list_changed). What it says then is a claim from a party the
// proxy does not trust, so it can only make the gate stricter: a tool that
// was gated stays gated, and one that was irreversible stays irreversible,
// for the life of the proxy, whatever annotations come later. Only the
// policy file (read at startup) can relax either. A changed definition of
// a gated tool (title, description, schema, annotations) is part of the
// gate's policy hash, so its outstanding approvals are void.

// stickiness remembers, per upstream tool name, the strictest treatment
// the tool ever had. A single proxy has one for its life; a gateway keeps
// one per server name for its life, which every Server that runs that
// server shares: one restarted after a crash, after a reload that changed
// its command, environment, URL or settings, or after a reload that removed
// it and a later one that added it back. A new upstream under an old name
// can only be held stricter than it asks, never looser.
type stickiness struct {
	mu           sync.Mutex
	gated        map[string]bool // both made by Gateway.newSlot
	irreversible map[string]bool
}

// gate reports whether name stays gated: it is now, or it ever was.
func (k *stickiness) gate(name string, now bool) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if now {
		k.gated[name] = true
	}
	return k.gated[name]
}

// irreversibleNow reports whether name stays irreversible. An explicit
// policy setting decides alone; otherwise once irreversible, always.
func (k *stickiness) irreversibleNow(name string, fromPolicy bool, now bool) bool {
	if fromPolicy {
		return now
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if now {
		k.irreversible[name] = true
	}
	return k.irreversible[name]
}

// screenTool makes an upstream tool fit to be shown to people: a name
// outside the MCP tool-name rule (ASCII letters, digits, '_', '-', '.', at
// most 128) could carry invisible or reordering characters into every
// approval prompt, so such a tool is withheld; titles and descriptions are
// rendered with prompt.Text, which makes hidden characters visible. The
// upstream's own *mcp.Tool is not modified.
func screenTool(t *mcp.Tool) (*mcp.Tool, error) {
	if !validToolName(t.Name) {
		return nil, fmt.Errorf("proxy: upstream tool %s withheld: a tool name must be 1 to 128 ASCII letters, digits, '_', '-' or '.'", prompt.Quote(t.Name))
	}
	c := *t
	c.Title = prompt.Text(t.Title)
	c.Description = prompt.Text(t.Description)
	if t.Annotations != nil {
		a := *t.Annotations
		a.Title = prompt.Text(a.Title)
		c.Annotations = &a
	}
	return &c, nil
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

func validToolName(name string) bool { return toolNameRE.MatchString(name) }
