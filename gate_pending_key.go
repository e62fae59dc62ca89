package mcpsafe

// pendingKey names the bucket that MaxPendingPerPrincipal counts a request
// in. An authenticated caller, or one on stdio, is its principal. Every
// unauthenticated HTTP caller has the same principal, so one client could
// otherwise take the whole per-principal allowance from all the others: such
// a caller is split further by its network address (from the trusted
// ClientAddrHeader) or, failing that, by its session, which the server
// issued and so the client cannot multiply at will beyond the session cap.
// The principal bound into the approval is unchanged; only the counting is
// finer.
func (g *Gate) pendingKey(k *call) string {
	req := k.req
	if req == nil || req.Extra == nil {
		return k.c.Principal
	}
	if ti := req.Extra.TokenInfo; ti != nil && ti.UserID != "" {
		return k.c.Principal
	}
	if h := g.opts.ClientAddrHeader; h != "" && req.Extra.Header != nil {
		if addr := req.Extra.Header.Get(h); addr != "" {
			return k.c.Principal + "\x00addr " + addr
		}
	}
	if k.c.Session != "" {
		return k.c.Principal + "\x00session " + k.c.Session
	}
	return k.c.Principal
}
