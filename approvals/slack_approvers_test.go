package approvals

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/channel"
)

const slackDave = "U0DAVE" // in no approvers-file line: an approver only by the group

// TestSlackGroupMemberApproves: a member of the configured user group
// approves as slack-<id>; membership is read from usergroups.users.list
// at the click, not at the post.
func TestSlackGroupMemberApproves(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{Group: slackTestGroup})
	e.slack.setGroup(slackTestGroup, slackDave)
	ch := e.ask(testRequest("g-ok"))
	e.slack.posted("g-ok")
	if n := len(e.slack.recorded("usergroups.users.list")); n != 0 {
		t.Fatalf("the group was read %d times before any click", n)
	}
	e.click(slackDave, slackActApprove, "g-ok")
	r := wait(t, ch)
	if !r.d.Approved || strings.Join(r.d.Approvers, ",") != "slack-U0DAVE" {
		t.Fatalf("dave's approval: %+v %v", r.d, r.err)
	}
	if calls := e.slack.recorded("usergroups.users.list"); len(calls) != 1 || calls[0].Group != slackTestGroup {
		t.Fatalf("group reads: %+v", calls)
	}
}

// TestSlackGroupRemovalApplies: a person removed from the group between
// the post and the click is refused; and one removed after a click was
// allowed is refused once the cached list is a minute old (the cache's
// clock is moved, nothing sleeps).
func TestSlackGroupRemovalApplies(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{Require: map[string]int{"delete_file": 2}}, SlackOptions{Group: slackTestGroup})
	var skew atomic.Int64
	e.svc.slack.now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }

	e.slack.setGroup(slackTestGroup, slackDave, "U0ERIN")
	e.ask(testRequest("g-rm"))
	e.slack.posted("g-rm")
	e.slack.setGroup(slackTestGroup, "U0ERIN") // dave leaves before clicking
	e.click(slackDave, slackActApprove, "g-rm")
	e.slack.told(slackDave, "not an approver")
	e.nothingRecorded("g-rm")

	e.click("U0ERIN", slackActApprove, "g-rm") // control: still a member
	e.slack.told("U0ERIN", "You approved")
	if st, names := e.status("g-rm"); st != channel.StatusPending || strings.Join(names, ",") != "slack-U0ERIN" {
		t.Fatalf("erin's approval: %s %v", st, names)
	}
	reads := len(e.slack.recorded("usergroups.users.list"))
	e.slack.setGroup(slackTestGroup) // erin leaves too
	skew.Store(int64(61 * time.Second))
	e.click("U0ERIN", slackActDeny, "g-rm")
	e.slack.told("U0ERIN", "not an approver")
	if n := len(e.slack.recorded("usergroups.users.list")); n != reads+1 {
		t.Fatalf("the group was read %d more times, want 1 (the cache is a minute old)", n-reads)
	}
	if st, _ := e.status("g-rm"); st != channel.StatusPending {
		t.Fatalf("status %s", st)
	}
}

// TestSlackGroupUnreadableRefuses: when Slack does not answer the group
// read, nobody is taken on trust: the click is refused, a mapped approver
// (control) still decides.
func TestSlackGroupUnreadableRefuses(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{Group: slackTestGroup})
	e.slack.setGroup(slackTestGroup, slackDave)
	e.slack.setFault(func(m string) (int, int) {
		if m == "usergroups.users.list" {
			return 503, 0
		}
		return 0, 0
	})
	ch := e.ask(testRequest("g-down"))
	e.slack.posted("g-down")
	e.click(slackDave, slackActApprove, "g-down")
	e.slack.told(slackDave, "could not be checked")
	e.nothingRecorded("g-down")
	e.click(slackAlice, slackActApprove, "g-down")
	if r := wait(t, ch); !r.d.Approved || strings.Join(r.d.Approvers, ",") != "alice" {
		t.Fatalf("alice's approval: %+v %v", r.d, r.err)
	}
}

// TestSlackSetupRefused: Slack options that could not work, or that would
// let a name pass for a group member, are refused at start.
func TestSlackSetupRefused(t *testing.T) {
	base := func() ServiceOptions {
		return ServiceOptions{Secret: testSecret, Approvers: slackApprovers(), Origin: "https://approvals.example.com"}
	}
	good := SlackOptions{BotToken: "xoxb-1", SigningSecret: "s", Channel: "C0APPROVE"}
	for _, c := range []struct {
		name string
		edit func(*ServiceOptions, *SlackOptions)
		want string
	}{
		{"no token", func(_ *ServiceOptions, s *SlackOptions) { s.BotToken = "" }, "bot token"},
		{"no signing secret", func(_ *ServiceOptions, s *SlackOptions) { s.SigningSecret = "" }, "signing secret"},
		{"channel name", func(_ *ServiceOptions, s *SlackOptions) { s.Channel = "#approvals" }, "channel's id"},
		{"no origin", func(o *ServiceOptions, _ *SlackOptions) { o.Origin = "" }, "--origin"},
		{"plain http API", func(_ *ServiceOptions, s *SlackOptions) { s.APIURL = "http://slack.example.com/api/" }, "plain http only on loopback"},
		{"bad group", func(_ *ServiceOptions, s *SlackOptions) { s.Group = "oncall" }, "group's id"},
		{"nobody", func(o *ServiceOptions, _ *SlackOptions) { o.Approvers = testApprovers }, "no approvers"},
		{"group-looking name", func(o *ServiceOptions, s *SlackOptions) {
			s.Group = slackTestGroup
			o.Approvers = append(slackApprovers(), Approver{Name: "slack-U0DAVE", Token: "dave-token-0123456789"})
		}, "rename it"},
	} {
		o, s := base(), good
		c.edit(&o, &s)
		o.Slack = &s
		svc, err := NewService(o)
		if err == nil {
			svc.Close()
			t.Errorf("%s: accepted", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	o, s := base(), good
	o.Slack = &s
	svc, err := NewService(o)
	if err != nil {
		t.Fatalf("control: %v", err)
	}
	svc.Close()
}

// TestApproversFileSlackIDs: an approvers-file line may end in
// slack=USERID; a malformed or shared id refuses the file; setting a
// password or converting a plain one keeps the id and never hashes it.
func TestApproversFileSlackIDs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "approvers")
	if err := SetPassword(path, "alice", "alice-password-0123"); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	line := strings.TrimSpace(string(data))
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(line + " slack=U0ALICE\n")
	list, err := LoadApproversFile(path)
	if err != nil || len(list) != 1 || list[0].Slack != "U0ALICE" {
		t.Fatalf("control: %+v %v", list, err)
	}
	if err := SetPassword(path, "alice", "another-password-0123"); err != nil {
		t.Fatal(err)
	}
	if list, err := LoadApproversFile(path); err != nil || list[0].Slack != "U0ALICE" {
		t.Fatalf("after passwd: %+v %v", list, err)
	}
	write("bob:plain-password-0123456 slack=U0BOB\n")
	if _, err := ConvertApproversFile(path); err != nil {
		t.Fatal(err)
	}
	list, err = LoadApproversFile(path)
	if err != nil || list[0].Slack != "U0BOB" {
		t.Fatalf("after convert: %+v %v", list, err)
	}
	if _, ok := newAuthenticator(list, time.Hour, newMemSessions()).byToken("bob", "plain-password-0123456"); !ok {
		t.Fatal("convert hashed the slack id into the password")
	}
	for _, bad := range []string{
		line + " slack=alice\n",
		line + " slack=U0X\n" + strings.Replace(line, "alice:", "bob:", 1) + " slack=U0X\n",
	} {
		write(bad)
		if _, err := LoadApproversFile(path); err == nil || !strings.Contains(err.Error(), "Slack user") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
