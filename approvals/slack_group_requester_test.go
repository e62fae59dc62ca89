package approvals

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/channel"
)

// TestSlackGroupMemberCannotApproveOwnRequest: a member known only by the
// user group decides as slack-<ID>, a name no principal compares with, so
// before their approval counts the service matches the requester to a
// Slack account: through the approvers file (the principal's approver has
// a slack id) or through the account's email (the principal is an email,
// as from single sign-on). The requester is refused; so is anyone when the
// requester cannot be matched. Controls: another member approves a
// matched request, and a deny needs no match.
func TestSlackGroupMemberCannotApproveOwnRequest(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{Group: slackTestGroup})
	const erin = "U0ERIN"
	e.slack.setGroup(slackTestGroup, slackDave, erin, "U0GINA") // gina: no email given
	e.slack.setEmail(slackDave, "Dave@Example.com")
	e.slack.setEmail(erin, "erin@example.com")

	// The principal is an SSO email: dave is the requester.
	req := testRequest("g-dave")
	req.Principal = "user:dave@example.com"
	ch := e.ask(req)
	e.slack.posted("g-dave")
	e.click(slackDave, slackActApprove, "g-dave")
	e.slack.told(slackDave, "You asked for this call and cannot approve it")
	e.nothingRecorded("g-dave")
	e.click(erin, slackActApprove, "g-dave") // control: another member
	if r := wait(t, ch); !r.d.Approved || strings.Join(r.d.Approvers, ",") != "slack-U0ERIN" {
		t.Fatalf("erin's approval: %+v %v", r.d, r.err)
	}

	// The principal is an approver with a Slack id (ci-bot is U0CIBOT):
	// a member who is another account approves.
	ch = e.ask(testRequest("g-mapped"))
	e.slack.posted("g-mapped")
	e.click(slackDave, slackActApprove, "g-mapped")
	if r := wait(t, ch); !r.d.Approved || strings.Join(r.d.Approvers, ",") != "slack-U0DAVE" {
		t.Fatalf("dave's approval of ci-bot's request: %+v %v", r.d, r.err)
	}

	// The principal is neither: nobody in the group can be told apart
	// from the requester; a deny still counts.
	req = testRequest("g-unmatched")
	req.Principal = "deploy-bot"
	ch = e.ask(req)
	e.slack.posted("g-unmatched")
	e.click(erin, slackActApprove, "g-unmatched")
	e.slack.told(erin, "not matched to a Slack account")
	e.nothingRecorded("g-unmatched")
	e.click(erin, slackActDeny, "g-unmatched")
	if r := wait(t, ch); r.d.Approved || !errors.Is(r.err, channel.ErrDenied) {
		t.Fatalf("erin's deny: %+v %v", r.d, r.err)
	}

	// An email principal, and Slack gives no email for the clicker (the
	// app lacks users:read.email): refused.
	req = testRequest("g-noemail")
	req.Principal = "user:frank@example.com"
	e.ask(req)
	e.slack.posted("g-noemail")
	e.click("U0GINA", slackActApprove, "g-noemail")
	e.slack.told("U0GINA", "not matched to a Slack account")
	e.nothingRecorded("g-noemail")
}
