package proxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// healthCheck asks leg's upstream for an answer, for the gateway's check.
// Protocol 2026-07-28 has no ping (an upstream on it answers "method not
// found", and the SDK client's ping lacks the _meta every 2026-07-28
// request carries, which a stateless HTTP upstream refuses with 400):
// without another request every member on such an upstream would be torn
// down and restarted at each health check, its calls refused meanwhile.
// There it lists the upstream's tools, a request every server answers.
func healthCheck(ctx context.Context, leg *mcp.ClientSession) error {
	if init := leg.InitializeResult(); init != nil && init.ProtocolVersion >= modernProtocol {
		_, err := leg.ListTools(ctx, nil)
		return err
	}
	return leg.Ping(ctx, nil)
}
