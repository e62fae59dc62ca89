package approvals

import (
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/channel"
)

// TestSlackClickApproves is the control: a request is posted with Approve
// and Deny buttons; a mapped approver's signed click approves it, the gate
// gets the approval naming her, and the message loses its buttons.
func TestSlackClickApproves(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	ch := e.ask(testRequest("s-ok"))
	ts := e.slack.posted("s-ok")
	msg := e.slack.message(ts)
	if !hasAll(msg, slackActApprove, slackActDeny, "delete_file", "ci-bot", "files@host") {
		t.Fatalf("posted message lacks buttons or names: %s", msg)
	}
	if code := e.click(slackAlice, slackActApprove, "s-ok"); code != 200 {
		t.Fatalf("click: HTTP %d", code)
	}
	r := wait(t, ch)
	if r.err != nil || !r.d.Approved || strings.Join(r.d.Approvers, ",") != "alice" {
		t.Fatalf("decision %+v, %v", r.d, r.err)
	}
	e.slack.waitFor("the message shows the approval", func() bool {
		m := e.slack.message(ts)
		return strings.Contains(m, "Approved by alice (in Slack)") && !strings.Contains(m, slackActApprove)
	})
	if got := e.slack.waitEphemeral(slackAlice, 1); !strings.Contains(got, "it is approved") {
		t.Fatalf("alice was told %q", got)
	}
	if st, _ := e.status("s-ok"); st != channel.StatusApproved {
		t.Fatalf("status %s", st)
	}
}
