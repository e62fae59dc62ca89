package mcpsafe

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cardOutcomes keeps what a card decided, for the model's handle to pick
// up until the grant expires. It keeps them in the ledger's outcomes
// (ledger.OutcomeStore) when the ledger has them, as every store of this
// module does: with a shared ledger the handle finds the outcome on any
// replica, and with a durable one after a restart. A ledger without
// outcomes leaves them in this process (the map).
type cardOutcomes struct {
	store ledger.OutcomeStore
	mu    sync.Mutex
	m     map[string]cardOutcome
}

type cardOutcome struct {
	res     *mcp.CallToolResult
	r       *Refusal
	expires time.Time // the map's only
}

// storedCard is an outcome as the ledger keeps it.
type storedCard struct {
	Result  *mcp.CallToolResult `json:"result,omitempty"`
	Refusal *Refusal            `json:"refusal,omitempty"`
}

// put keeps o until expires. A failure to keep it is logged: the call was
// decided (and journaled) already, and the handle then keeps answering
// that the card has not decided, which runs nothing.
func (c *cardOutcomes) put(ctx context.Context, g *Gate, tool, nonce string, o cardOutcome, expires time.Time) {
	if c.store == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.m == nil {
			c.m = map[string]cardOutcome{}
		}
		now := g.opts.Clock()
		for n, old := range c.m {
			if !now.Before(old.expires) {
				delete(c.m, n)
			}
		}
		o.expires = expires
		c.m[nonce] = o
		return
	}
	data, err := json.Marshal(storedCard{Result: o.res, Refusal: o.r})
	if err == nil && len(data) > ledger.MaxOutcomeData {
		// Too large to keep: the handle learns that it ran and where the
		// result is, never a cut result that reads as whole.
		text := fmt.Sprintf("%s ran after the user approved it in the approval card; its result was too large to keep for this handle, and the card showed it.", tool)
		data, err = json.Marshal(storedCard{Result: &mcp.CallToolResult{IsError: o.res.IsError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}})
	}
	if err == nil {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalGrace)
		defer cancel()
		err = c.store.PutOutcome(pctx, nonce, data, expires)
	}
	if err != nil {
		g.opts.Logger.Warn("approval card: the outcome could not be kept for the model's handle; the handle will say the card has not decided", "tool", tool, "call", nonce, "err", err)
	}
}

// get returns what the card decided on nonce, ok false when it has not
// (or it expired); an error when the store cannot tell.
func (c *cardOutcomes) get(ctx context.Context, nonce string) (cardOutcome, bool, error) {
	if c.store == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		o, ok := c.m[nonce]
		return o, ok, nil
	}
	data, ok, err := c.store.Outcome(ctx, nonce)
	if err != nil || !ok {
		return cardOutcome{}, false, err
	}
	var s storedCard
	if err := json.Unmarshal(data, &s); err != nil || s.Result == nil && s.Refusal == nil {
		return cardOutcome{}, false, fmt.Errorf("the outcome kept for %s is not one this gate wrote: %v", nonce, err)
	}
	return cardOutcome{res: s.Result, r: s.Refusal}, true, nil
}
