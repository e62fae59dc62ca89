package approvals

import (
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/mcpsafe/mcpsafe/prompt"
)

// A request as a Slack message (Block Kit).
//
// Everything the agent wrote (tool name, plan, targets, arguments, the
// requester) is shown in plain_text objects, which Slack does not parse
// for mentions, links or formatting. Only code blocks are mrkdwn: there &,
// < and > are escaped as Slack documents (&amp; &lt; &gt;), so "<!channel>"
// or "<http://evil|click>" show as typed, and a backtick becomes "ˋ" so the
// text cannot close the block and format what follows. The service's own
// links are the only markup.

// Action ids of the message's buttons.
const (
	slackActApprove = "mcpsafe_approve"
	slackActDeny    = "mcpsafe_deny"
	slackActPasskey = "mcpsafe_approve_passkey" // a link: Slack sends it, nothing is decided
	slackActOpen    = "mcpsafe_open"
)

// Slack's limits, with room to spare.
const (
	slackHeaderMax  = 150
	slackTextMax    = 2900
	slackCodeLines  = 30
	slackCodeChars  = 2400
	slackPartsShown = 5
)

// slackPlain is a plain_text object: shown literally, emoji codes too.
func slackPlain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, clipRunes(s, slackTextMax), false, false)
}

// slackMrkdwnEscape escapes text for a mrkdwn object, as Slack documents:
// &, < and > become entities; nothing else has to be.
func slackMrkdwnEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// slackCode is lines as a mrkdwn code block: escaped, backticks replaced,
// cut at slackCodeLines lines or slackCodeChars characters. It returns how
// many lines were left out.
func slackCode(lines []string) (string, int) {
	var b strings.Builder
	b.WriteString("```\n")
	n := 0
	for _, l := range lines {
		l = strings.ReplaceAll(slackMrkdwnEscape(prompt.Visible(l)), "`", "ˋ")
		if n == slackCodeLines || b.Len()+len(l) > slackCodeChars {
			break
		}
		b.WriteString(l + "\n")
		n++
	}
	b.WriteString("```")
	return b.String(), len(lines) - n
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// message is the whole message for r as it stands: blocks and the
// notification text.
func (b *slackBridge) message(r *record) []slack.MsgOption {
	return []slack.MsgOption{
		slack.MsgOptionText(slackMrkdwnEscape(clipRunes("Approval requested: "+prompt.Visible(r.Req.Tool), 200)), false),
		slack.MsgOptionBlocks(slackBlocks(r, b.s.needsPasskey(r), b.requestLink(r.Req.ID), time.Now())...),
	}
}

// slackBlocks renders r: what it asks, then its outcome or the buttons.
func slackBlocks(r *record, passkey bool, link string, now time.Time) []slack.Block {
	q := r.Req
	vis := prompt.Visible
	head := "Approve " + vis(q.Tool) + "?"
	if r.Status != channel.StatusPending {
		head = vis(q.Tool) + ": " + r.Status
	}
	blocks := []slack.Block{slack.NewHeaderBlock(slack.NewTextBlockObject(slack.PlainTextType, clipRunes(head, slackHeaderMax), false, false))}

	fields := []*slack.TextBlockObject{
		slackPlain("Tool: " + vis(q.Tool)),
		slackPlain("Server: " + vis(q.Audience)),
		slackPlain("Requested by: " + vis(q.Principal)),
		slackPlain(fmt.Sprintf("Needs %d approval(s); %d so far", r.Required, len(r.Approvals))),
	}
	if q.Irreversible {
		fields = append(fields, slackPlain("⚠ Irreversible: there is no undo"))
	}
	if r.Status == channel.StatusPending {
		fields = append(fields, slackPlain(fmt.Sprintf("Time left: %s (until %s)", duration(max(0, r.Deadline.Sub(now))), r.Deadline.UTC().Format("15:04:05 UTC"))))
	}
	blocks = append(blocks, slack.NewSectionBlock(slackPlain(vis(q.Summary)), fields, nil))

	if len(q.Details) > 0 {
		shown := q.Details
		more := ""
		if len(shown) > cardDetails {
			shown, more = shown[:cardDetails], fmt.Sprintf("\n(%d more plan lines on the service)", len(q.Details)-cardDetails)
		}
		var lines []string
		for _, d := range shown {
			lines = append(lines, "• "+vis(d))
		}
		blocks = append(blocks, slack.NewSectionBlock(slackPlain(strings.Join(lines, "\n")+more), nil, nil))
	}
	if len(q.Targets) > 0 {
		lines := []string{"Will touch:"}
		for i, t := range q.Targets {
			if i == cardDetails {
				lines = append(lines, fmt.Sprintf("(%d more on the service)", len(q.Targets)-i))
				break
			}
			lines = append(lines, "• "+vis(t.Name)+": "+vis(t.State))
		}
		blocks = append(blocks, slack.NewSectionBlock(slackPlain(strings.Join(lines, "\n")), nil, nil))
	}
	for i, p := range q.Parts {
		if i == slackPartsShown {
			blocks = append(blocks, slackLeftOut(fmt.Sprintf("%d more plan parts not shown here.", len(q.Parts)-i), link))
			break
		}
		blocks = append(blocks, slackPart(p.Kind, p.Title, p.Path, partLines(p.Kind, p.Lines, p.Columns, p.Rows), link)...)
	}
	if rows := argRows(q.Arguments); len(rows) > 0 {
		// As the page's card lists them: a string as it is, in quotes;
		// anything else as compact JSON.
		var lines []string
		for _, a := range rows {
			v := a.Value
			if a.String {
				v = `"` + v + `"`
			}
			lines = append(lines, a.Key+": "+v)
		}
		blocks = append(blocks, slackPart("arguments", fmt.Sprintf("Arguments (%d)", len(rows)), "", lines, link)...)
	}
	if len(q.Grants) > 0 && r.Status == channel.StatusPending {
		blocks = append(blocks, slack.NewContextBlock("", slackPlain("Standing grants are offered; a click here approves this call alone. Choose a grant on the service.")))
	}
	if r.Status != channel.StatusPending {
		return append(blocks, slack.NewSectionBlock(slackPlain(slackOutcome(r)), nil, nil))
	}
	if len(r.Approvals) > 0 {
		blocks = append(blocks, slack.NewContextBlock("", slackPlain("Approved so far by "+slackVoters(r.Approvals)+".")))
	}
	return append(blocks, slackButtons(r.Req.ID, passkey, link))
}

// slackButtons: Approve (or, where each approver's passkey is required,
// a link to the request's page), Deny, and a link to the page.
func slackButtons(id string, passkey bool, link string) *slack.ActionBlock {
	var approve *slack.ButtonBlockElement
	if passkey {
		approve = slack.NewButtonBlockElement(slackActPasskey, id, slackPlain("Approve with passkey")).WithURL(link)
	} else {
		approve = slack.NewButtonBlockElement(slackActApprove, id, slackPlain("Approve")).WithStyle(slack.StylePrimary)
	}
	deny := slack.NewButtonBlockElement(slackActDeny, id, slackPlain("Deny")).WithStyle(slack.StyleDanger)
	open := slack.NewButtonBlockElement(slackActOpen, id, slackPlain("Open on the service")).WithURL(link)
	return slack.NewActionBlock("mcpsafe_actions", approve, deny, open)
}

// partLines is a plan part as lines: a diff's lines with their marks, a
// table's rows with " | " between cells.
func partLines(kind string, lines []plan.DiffLine, cols []string, rows [][]string) []string {
	var out []string
	if kind == "table" {
		out = append(out, strings.Join(cols, " | "))
		for _, r := range rows {
			out = append(out, strings.Join(r, " | "))
		}
		return out
	}
	for _, l := range lines {
		if l.Op == plan.OpHunk {
			out = append(out, "@@ "+l.Text+" @@")
			continue
		}
		out = append(out, l.Op+l.Text)
	}
	return out
}

// slackPart is one part as a titled code block, and what was left out with
// a link to the whole plan.
func slackPart(kind, title, path string, lines []string, link string) []slack.Block {
	name := title
	if path != "" {
		name = strings.TrimSpace(name + " " + path)
	}
	if name == "" {
		name = kind
	}
	code, left := slackCode(lines)
	out := []slack.Block{
		slack.NewContextBlock("", slackPlain(prompt.Visible(name))),
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, code, false, true), nil, nil),
	}
	if left > 0 {
		out = append(out, slackLeftOut(fmt.Sprintf("%d more lines of %d not shown here.", left, len(lines)), link))
	}
	return out
}

// slackLeftOut says what was left out and links to the whole plan. The
// link is the service's own (an origin and a request id of [A-Za-z0-9._:-]).
func slackLeftOut(what, link string) slack.Block {
	return slack.NewContextBlock("", slack.NewTextBlockObject(slack.MarkdownType, slackMrkdwnEscape(what)+" <"+link+"|The whole plan on the approval service>", false, true))
}

func slackVoters(vs []vote) string {
	var names []string
	for _, v := range vs {
		names = append(names, prompt.Visible(v.By)+" ("+slackPath(v.Via)+")")
	}
	return strings.Join(names, ", ")
}

func slackPath(via string) string {
	if via == "slack" {
		return "in Slack"
	}
	return "on the web"
}

// slackOutcome says what became of r, by whom, by which path, and when.
func slackOutcome(r *record) string {
	at := r.DecidedAt.UTC().Format("2006-01-02 15:04:05 UTC")
	switch r.Status {
	case channel.StatusApproved:
		return "✅ Approved by " + slackVoters(r.Approvals) + " at " + at + "."
	case channel.StatusDenied:
		if r.DeniedBy != nil {
			return "⛔ Denied by " + slackVoters([]vote{*r.DeniedBy}) + " at " + at + "."
		}
		return "⛔ Denied at " + at + "."
	case channel.StatusExpired:
		return "⌛ Expired at " + at + ": nobody decided in time."
	case channel.StatusWithdrawn:
		if n := withdrawReasons[r.Withdrawn]; n != "" {
			return "↩ Withdrawn by the gate (" + n + ") at " + at + "."
		}
		return "↩ Withdrawn by the gate at " + at + "."
	}
	return r.Status
}
