package channel

import (
	"fmt"
	"net/url"

	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/internal/loopback"
)

// ServiceLink returns the link to a request on an `mcpsafe approvals
// serve` at origin (its ServiceOptions.Origin): the service's page, at
// the request's card. A gate sends it to clients that declare URL-mode
// elicitation (mcpsafe.Options.ApproverLink). The link names the request
// and approves nothing: the page asks the approver to log in, and the
// decision comes back signed through the webhook as always.
func ServiceLink(origin string) (func(approver.Request) (string, error), error) {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("channel: the approval service's page %q is not an origin like https://approvals.example.com", origin)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && loopback.Host(u.Hostname())) {
		return nil, fmt.Errorf("channel: the approval service's page %q must be https (or http on loopback): the person logs in there", origin)
	}
	base := u.Scheme + "://" + u.Host + "/#req-"
	return func(r approver.Request) (string, error) {
		if r.ID == "" {
			return "", fmt.Errorf("%w: request id is required", ErrRequest)
		}
		return base + url.PathEscape(r.ID), nil
	}, nil
}
