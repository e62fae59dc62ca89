package mutants

// slackMutants break Slack approvals (approvals/slack*.go): the click's
// signature and replay checks, who a click decides as, the group check,
// stale buttons, markup escaping and delivery.
var slackMutants = []Mutant{
	{
		Name:     "slack-signature-unchecked",
		Packages: []string{"./approvals"},
		Run:      "TestSlackSignatureRefused",
		Why:      "a click is taken whatever its X-Slack-Signature says",
		Edits: []Edit{{
			File: "approvals/slack_interactions.go",
			Old:  "\t\terr = sv.Ensure()\n",
			New:  "\t\t_ = sv.Ensure()\n",
		}},
	},
	{
		Name:     "slack-replay-taken",
		Packages: []string{"./approvals"},
		Run:      "TestSlackSignatureRefused|TestGateSlackApproval",
		Why:      "a click's signature seen before is taken again (replay)",
		Edits: []Edit{{
			File: "approvals/slack_interactions.go",
			Old:  "\tcase !fresh:\n",
			New:  "\tcase false && !fresh:\n",
		}},
	},
	{
		Name:     "slack-unmapped-approves",
		Packages: []string{"./approvals"},
		Run:      "TestSlackUnmappedUserRefused",
		Why:      "a Slack user in no approvers-file line and no group decides as slack-<id>",
		Edits: []Edit{{
			File: "approvals/slack.go",
			Old:  "\tif b.opts.Group == \"\" {\n\t\treturn \"\", errNotApprover\n\t}",
			New:  "\tif b.opts.Group == \"\" {\n\t\treturn slackGroupPrefix + user, nil\n\t}",
		}},
	},
	{
		Name:     "slack-decides-as-slack-id",
		Packages: []string{"./approvals"},
		Run:      "TestSlackSelfApprovalRefused",
		Why:      "a mapped click decides as the Slack user id, not the approver it is mapped to, so separation of duties cannot see the requester",
		Edits: []Edit{{
			File: "approvals/slack_interactions.go",
			Old:  "b.s.decideVote(id, vote{By: name, Via: \"slack\"}, approve, \"\")",
			New:  "b.s.decideVote(id, vote{By: slackGroupPrefix + user, Via: \"slack\"}, approve, \"\")",
		}},
	},
	{
		Name:     "slack-group-membership-unchecked",
		Packages: []string{"./approvals"},
		Run:      "TestSlackGroupRemovalApplies",
		Why:      "anyone in the workspace approves once a user group is configured",
		Edits: []Edit{{
			File: "approvals/slack.go",
			Old:  "\tif !slices.Contains(members, user) {",
			New:  "\tif false && !slices.Contains(members, user) {",
		}},
	},
	{
		Name:     "slack-group-cached-forever",
		Packages: []string{"./approvals"},
		Run:      "TestSlackGroupRemovalApplies",
		Why:      "the user group is read once and never again: someone removed keeps approving",
		Edits: []Edit{{
			File: "approvals/slack.go",
			Old:  "if b.group != nil && b.now().Sub(b.groupAt) < b.opts.GroupCacheTTL {",
			New:  "if b.group != nil {",
		}},
	},
	{
		Name:     "slack-group-unreadable-trusted",
		Packages: []string{"./approvals"},
		Run:      "TestSlackGroupUnreadableRefuses",
		Why:      "when usergroups.users.list fails, the clicker is taken as a member",
		Edits: []Edit{{
			File: "approvals/slack.go",
			Old:  "\tmembers, err := b.groupMembers(ctx)\n\tif err != nil {\n\t\treturn \"\", err\n\t}",
			New:  "\tmembers, err := b.groupMembers(ctx)\n\tif err != nil {\n\t\treturn slackGroupPrefix + user, nil\n\t}",
		}},
	},
	{
		Name:     "slack-decided-keeps-buttons",
		Packages: []string{"./approvals"},
		Run:      "TestSlackStaleClicks|TestSlackClickApproves",
		Why:      "a decided request's message keeps its Approve and Deny buttons",
		Edits: []Edit{{
			File: "approvals/slack_blocks.go",
			Old:  "\t\treturn append(blocks, slack.NewSectionBlock(slackPlain(slackOutcome(r)), nil, nil))",
			New:  "\t\treturn append(blocks, slack.NewSectionBlock(slackPlain(slackOutcome(r)), nil, nil), slackButtons(r.Req.ID, passkey, link))",
		}},
	},
	{
		Name:     "slack-decided-message-rewritten",
		Packages: []string{"./approvals"},
		Run:      "TestSlackDecidedMessageFinal",
		Why:      "a message that shows an outcome is written again whenever its record changes later",
		Edits: []Edit{{
			File: "approvals/slack_delivery.go",
			Old:  "case ref.TS != \"\" && (ref.Shown == state || !slackNewer(ref.Shown, state)):",
			New:  "case ref.TS != \"\" && ref.Shown == state:",
		}},
	},
	{
		Name:     "slack-claim-ignored",
		Packages: []string{"./approvals"},
		Run:      "TestSlackReplicasOneMessage",
		Why:      "a replica posts a request's message while another replica's post of it is under way: two messages",
		Edits: []Edit{{
			File: "approvals/slack_delivery.go",
			Old:  "\tcase ref.Claim != \"\" && now.Before(ref.ClaimUntil):\n\t\treturn \"\", ref.ClaimUntil.Sub(now)\n",
			New:  "",
		}},
	},
	{
		Name:     "slack-deaf-to-other-replicas",
		Packages: []string{"./approvals"},
		Run:      "TestSlackReplicaHearsChangeElsewhere",
		Why:      "the Slack side ignores changes heard from other replicas: a request taken or decided there waits for the next sweep",
		Edits: []Edit{{
			File: "approvals/service.go",
			Old:  "\t\ts.slack.notice(id, slackTakeOver)\n",
			New:  "",
		}},
	},
	{
		Name:     "slack-stale-claim-recorded",
		Packages: []string{"./approvals"},
		Run:      "TestSlackLapsedClaimNotRecorded",
		Why:      "a replica whose claim ran out records its post or update over the claim holder's",
		Edits: []Edit{{
			File: "approvals/slack_delivery.go",
			Old:  "if cur.Slack == nil || cur.Slack.Claim != token {",
			New:  "if cur.Slack == nil {",
		}},
	},
	{
		Name:     "slack-markup-unescaped",
		Packages: []string{"./approvals"},
		Run:      "TestSlackMarkupShowsAsText",
		Why:      "agent text in a code block is not escaped: <!channel> pings everyone, <http://evil|click> is a link",
		Edits: []Edit{{
			File: "approvals/slack_blocks.go",
			Old:  "strings.NewReplacer(\"&\", \"&amp;\", \"<\", \"&lt;\", \">\", \"&gt;\").Replace(s)",
			New:  "s",
		}},
	},
	{
		Name:     "slack-passkey-tool-gets-approve",
		Packages: []string{"./approvals"},
		Run:      "TestSlackPasskeyToolLinks",
		Why:      "a tool that needs each approver's passkey shows a plain Approve button in Slack",
		Edits: []Edit{{
			File: "approvals/slack_blocks.go",
			Old:  "\tif passkey {\n",
			New:  "\tif false {\n",
		}},
	},
	{
		Name:     "slack-retry-after-ignored",
		Packages: []string{"./approvals"},
		Run:      "TestSlackRetryAfterHonoured",
		Why:      "a 429's Retry-After is ignored: the service hammers a rate-limited Slack",
		Edits: []Edit{{
			File: "approvals/slack_delivery.go",
			Old:  "if errors.As(err, &rl) && rl.RetryAfter > wait {",
			New:  "if false && errors.As(err, &rl) && rl.RetryAfter > wait {",
		}},
	},
	{
		Name:     "slack-group-requester-unchecked",
		Packages: []string{"./approvals"},
		Run:      "TestSlackGroupMemberCannotApproveOwnRequest",
		Why:      "a member known only by the user group approves their own request (slack-<ID> compares with no principal)",
		Edits: []Edit{{
			File: "approvals/slack_interactions.go",
			Old:  "if _, mapped := b.users[user]; approve && !mapped {",
			New:  "if _, mapped := b.users[user]; false && approve && !mapped {",
		}},
	},
	{
		Name:     "slack-group-unmatched-trusted",
		Packages: []string{"./approvals"},
		Run:      "TestSlackGroupMemberCannotApproveOwnRequest",
		Why:      "a group member approves a request whose requester is matched to no Slack account (it may be theirs)",
		Edits: []Edit{{
			File: "approvals/slack.go",
			Old:  "\tif !strings.Contains(pk, \"@\") {\n\t\treturn errUnmatchable\n\t}",
			New:  "\tif !strings.Contains(pk, \"@\") {\n\t\treturn nil\n\t}",
		}},
	},
	{
		Name:     "slack-group-no-email-trusted",
		Packages: []string{"./approvals"},
		Run:      "TestSlackGroupMemberCannotApproveOwnRequest",
		Why:      "a group member whose account email Slack does not give approves an email principal's request",
		Edits: []Edit{{
			File: "approvals/slack.go",
			Old:  "\t\treturn errUnmatchable // no email without users:read.email",
			New:  "\t\treturn nil",
		}},
	},
}
