package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/canon"
	"github.com/mcpsafe/mcpsafe/internal/frame"
	"github.com/mcpsafe/mcpsafe/internal/seal"
	"github.com/mcpsafe/mcpsafe/ledger"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A gated call whose upstream asks for input on the 2026-07-28 protocol
// (an input_required result) is continued by the client's retry. That
// retry must not go through the gate again (the approval was spent when
// the call ran) and the gate's sealed state must never reach upstream, nor
// the upstream's reach the gate. So the proxy hands the client a
// continuation: the upstream's requestState sealed by the proxy, bound to
// the tool, the canonical arguments and the principal, single use, short
// lived. Only a retry carrying a genuine, unspent continuation for the
// exact same call skips the gate, and it reaches upstream with the
// upstream's own state, untouched.

const (
	contPrefix   = "mcpsafe-relay."
	contAudience = "mcpsafe-proxy-continuation"
	contTTL      = 10 * time.Minute
)

type continuations struct {
	ring   *seal.Keyring
	ledger ledger.Ledger
	now    func() time.Time
}

type continuation struct {
	V         int    `json:"v"`
	Tool      string `json:"tool"`
	Digest    string `json:"digest"`
	Principal string `json:"principal"`
	State     string `json:"state"`
	Nonce     string `json:"nonce"`
	Expires   int64  `json:"expires"` // Unix ms, exclusive
}

func isContinuation(state string) bool { return strings.HasPrefix(state, contPrefix) }

// init uses the gate's ledger, so that a continuation is spent once across
// replicas, and a key of this process only: a continuation does not
// survive a restart (the client starts the call again, through the gate).
func (c *continuations) init(l ledger.Ledger) error {
	ring, err := seal.RandomKeyring()
	if err != nil {
		return err
	}
	if l == nil {
		l = ledger.NewMemory(0)
	}
	c.ring, c.ledger, c.now = ring, l, time.Now
	return nil
}

func (c *continuations) seal(ctx context.Context, tool, digest, principal, state string) (string, error) {
	k := continuation{V: 1, Tool: tool, Digest: digest, Principal: principal, State: state,
		Nonce: rand.Text(), Expires: c.now().Add(contTTL).UnixMilli()}
	if err := c.ledger.Issue(ctx, k.Nonce, time.UnixMilli(k.Expires)); err != nil {
		return "", fmt.Errorf("ledger: %w", err)
	}
	plain, err := json.Marshal(k)
	if err != nil {
		return "", err
	}
	sealed, err := c.ring.Seal(contAudience, plain)
	if err != nil {
		return "", err
	}
	return contPrefix + sealed, nil
}

// open verifies a continuation before reading it, checks that it belongs
// to this exact call, and spends it.
func (c *continuations) open(ctx context.Context, state, tool, digest, principal string) (string, *mcpsafe.Refusal) {
	refuse := func(reason, format string, args ...any) (string, *mcpsafe.Refusal) {
		return "", &mcpsafe.Refusal{Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	plain, err := c.ring.Open(contAudience, strings.TrimPrefix(state, contPrefix))
	if err != nil {
		return refuse(mcpsafe.ReasonTokenInvalid, "the request state is not one this proxy issued")
	}
	var k continuation
	if err := frame.Decode(plain, &k); err != nil || k.V != 1 {
		return refuse(mcpsafe.ReasonTokenInvalid, "the request state is malformed")
	}
	switch {
	case k.Tool != tool:
		return refuse(mcpsafe.ReasonArgumentsChanged, "the request state belongs to another tool")
	case k.Digest != digest:
		return refuse(mcpsafe.ReasonArgumentsChanged, "the arguments changed since the call was approved; call the tool again")
	case k.Principal != principal:
		return refuse(mcpsafe.ReasonTokenInvalid, "the request state belongs to another caller")
	case !c.now().Before(time.UnixMilli(k.Expires)):
		return refuse(mcpsafe.ReasonTokenExpired, "the request state expired; call the tool again")
	}
	ok, err := c.ledger.Redeem(ctx, k.Nonce)
	if err != nil {
		return refuse(mcpsafe.ReasonLedgerUnavailable, "%v", err)
	}
	if !ok {
		return refuse(mcpsafe.ReasonTokenSpent, "the request state was already used")
	}
	return k.State, nil
}

// callDigest is the gate's view of a call's arguments (Call.Arguments and
// Call.ArgsDigest): canonical, without approval_token unless the tool owns
// that field.
func callDigest(args json.RawMessage, ownsToken bool) (canonical json.RawMessage, digest string, err error) {
	rest, _, err := canon.SplitMember(args, mcpsafe.TokenField)
	if err != nil {
		return nil, "", err
	}
	if ownsToken {
		rest = args
	}
	if canonical, err = canon.Canonical(rest); err != nil {
		return nil, "", err
	}
	digest, err = canon.Digest(canonical)
	return canonical, digest, err
}

func (s *Server) principal(req *mcp.CallToolRequest) string {
	if f := s.opts.Principal; f != nil {
		return f(req)
	}
	if req.Extra == nil {
		return "stdio"
	}
	if req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
		return "user:" + req.Extra.TokenInfo.UserID
	}
	return "anonymous"
}

// continueCall is a client's retry of a gated call whose upstream asked
// for input: it goes upstream only with a genuine continuation for the
// same tool, arguments and caller.
func (s *Server) continueCall(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	// A bad continuation is a protocol error, as a server's own tampered
	// or stale request state is.
	args, digest, err := callDigest(req.Params.Arguments, s.ownsToken(s.up(req.Params.Name)))
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Refused (arguments_invalid): " + err.Error()}
	}
	state, r := s.cont.open(ctx, req.Params.RequestState, s.up(req.Params.Name), digest, s.principal(req))
	if r != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("Refused (%s): %s", r.Reason, r.Message)}
	}
	params := &mcp.CallToolParams{Name: s.up(req.Params.Name), Arguments: args, InputResponses: req.Params.InputResponses, RequestState: state}
	res, err := s.callUpstream(ctx, params, req)
	if err != nil {
		return nil, protocolError(err)
	}
	return s.afterGated(ctx, req, params, digest, s.principal(req), res)
}

// afterGated handles an upstream's input request in a gated call, which
// has already been approved and run: clients of the 2025-11-25 generation
// are asked in-call and the call is retried upstream; newer clients get
// the input requests with a continuation in place of the upstream's state.
func (s *Server) afterGated(ctx context.Context, down *mcp.CallToolRequest, params *mcp.CallToolParams, digest, principal string, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	for round := 0; res != nil && res.NeedsInput(); round++ {
		asks, err := s.screenAsks(res.InputRequests)
		if err != nil {
			return nil, err
		}
		if down == nil || down.Session == nil {
			return nil, errors.New("mcpsafe proxy: the upstream asked for input, and there is no client to ask")
		}
		if down.ProtocolVersion() >= modernProtocol {
			sealed, err := s.cont.seal(ctx, params.Name, digest, principal, res.RequestState)
			if err != nil {
				return nil, fmt.Errorf("mcpsafe proxy: %w", err)
			}
			out := *res
			out.RequestState, out.InputRequests = sealed, asks
			return &out, nil
		}
		if round >= maxInputRounds {
			return nil, fmt.Errorf("mcpsafe proxy: the upstream asked for input more than %d times", maxInputRounds)
		}
		answers, err := fulfill(ctx, s.pol().UpstreamRequests, down, asks)
		if err != nil {
			return nil, err
		}
		next := *params
		next.InputResponses, next.RequestState = answers, res.RequestState
		params = &next
		if res, err = s.callUpstream(ctx, params, down); err != nil {
			return nil, err
		}
	}
	return res, nil
}

const maxInputRounds = 10
