package proxy

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The upstream's requests to the person speak in the upstream's voice,
// never the gate's: every relayed elicitation (in-call, or an input
// request of a multi round-trip result) starts with the server's name as
// the operator gave it, `Server "files" asks: …`, its text sanitized
// (package prompt), and one whose elicitation id has the gate's prefix
// (mcpsafe.ElicitationIDPrefix) is refused: the gate's URL elicitations
// carry it, and a client correlates completions by it.

// askerName is the name the person is told an upstream's request comes
// from: the policy's name, the gateway's name for the server, or the label
// of the command or URL the operator gave, never what the upstream calls
// itself.
func (s *Server) askerName() string {
	return cmp.Or(s.pol().Name, s.member.name, s.upLabel, "upstream")
}

// askAs is p as the person is shown it: an elicitation marked as the
// upstream's; an error when it takes the gate's id.
func (s *Server) askAs(p mcp.InputRequest) (mcp.InputRequest, error) {
	ep, ok := p.(*mcp.ElicitParams)
	if !ok || ep == nil {
		return p, nil
	}
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(ep.ElicitationID)), mcpsafe.ElicitationIDPrefix) {
		return nil, fmt.Errorf("mcpsafe proxy: the upstream's elicitation id %s starts with %q, which only mcpsafe's own requests carry; refused", prompt.Quote(ep.ElicitationID), mcpsafe.ElicitationIDPrefix)
	}
	c := *ep
	c.Message = fmt.Sprintf("Server %s asks: %s", prompt.Quote(s.askerName()), prompt.Text(ep.Message))
	return &c, nil
}

// screenAsks is an upstream's input requests as the client gets them:
// refused whole when one asks for a kind the policy refuses or takes the
// gate's id, each elicitation marked (askAs) otherwise.
func (s *Server) screenAsks(asks mcp.InputRequestMap) (mcp.InputRequestMap, error) {
	ur := s.pol().UpstreamRequests
	out := make(mcp.InputRequestMap, len(asks))
	for id, a := range asks {
		if kind := inputKind(a); !ur.Allows(kind) {
			return nil, fmt.Errorf("mcpsafe proxy: the upstream asked for %s input, which the policy refuses", kind)
		}
		m, err := s.askAs(a)
		if err != nil {
			return nil, err
		}
		out[id] = m
	}
	return out, nil
}
