package approvals

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/plan"
)

// hostile is agent text that tries Slack's markup: a broadcast mention, a
// disguised link, a user mention, mrkdwn formatting, entities, and a fence
// that would close the code block.
const hostile = "<!channel> <http://evil.example|click here> <@U0ALICE> *bold* _it_ ~no~ &amp; a < b > c ``` `x`"

// slackTexts walks a message's blocks and returns every text object.
func slackTexts(t *testing.T, raw json.RawMessage) []map[string]any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("blocks are not JSON: %v: %s", err, raw)
	}
	var out []map[string]any
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if typ, _ := x["type"].(string); (typ == "plain_text" || typ == "mrkdwn") && x["text"] != nil {
				out = append(out, x)
				return
			}
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		}
	}
	walk(v)
	return out
}

// TestSlackMarkupShowsAsText: plan text that tries Slack markup is in
// plain_text objects (Slack parses nothing there) or, in a code block,
// escaped as Slack documents (&amp; &lt; &gt;) with its backticks unable to
// close the block. The only markup in mrkdwn is the service's own link.
func TestSlackMarkupShowsAsText(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	req := testRequest("s-markup")
	req.Tool = "delete_file"
	req.Summary = "Delete " + hostile
	req.Details = []string{"detail " + hostile}
	req.Targets[0].State = "state " + hostile
	req.Parts = []plan.PartView{{Kind: "diff", Title: "Edit", Path: `"notes.md"`, Added: 1, Removed: 1, Lines: []plan.DiffLine{
		{Op: plan.OpHunk, Text: "-1 +1"}, {Op: plan.OpRemove, Text: "old " + hostile}, {Op: plan.OpAdd, Text: "new " + hostile},
	}}}
	req.Arguments, _ = json.Marshal(map[string]string{"path": hostile})
	e.ask(req)
	e.slack.posted("s-markup")
	post := e.slack.recorded("chat.postMessage")[0]

	ownLink := regexp.MustCompile(`<` + regexp.QuoteMeta(e.svc.opts.Origin) + `/#req-s-markup\|The whole plan on the approval service>`)
	entity := regexp.MustCompile(`&(amp|lt|gt);`)
	plainSeen, codeSeen := false, 0
	for _, o := range slackTexts(t, post.Blocks) {
		text := o["text"].(string)
		switch o["type"] {
		case "plain_text":
			if o["emoji"] == true {
				t.Errorf("plain_text with emoji on: %q", text)
			}
			if strings.Contains(text, hostile) {
				plainSeen = true
			}
		case "mrkdwn":
			if o["verbatim"] != true {
				t.Errorf("mrkdwn without verbatim: %q", text)
			}
			rest := ownLink.ReplaceAllString(text, "")
			if strings.ContainsAny(rest, "<>") {
				t.Errorf("mrkdwn with raw < or >: %q", text)
			}
			if strings.Contains(entity.ReplaceAllString(rest, ""), "&") {
				t.Errorf("mrkdwn with a raw &: %q", text)
			}
			if strings.HasPrefix(text, "```") {
				if n := strings.Count(text, "```"); n != 2 || !strings.HasSuffix(text, "```") {
					t.Errorf("code block with %d fences: %q", n, text)
				}
				if strings.Contains(text, "&lt;!channel&gt; &lt;http://evil.example|click here&gt;") && strings.Contains(text, "&amp;amp;") {
					codeSeen++
				}
			}
		}
	}
	if !plainSeen || codeSeen != 2 { // the diff and the arguments
		t.Fatalf("the hostile text is not shown as text (plain_text: %v, escaped code blocks: %d): %s", plainSeen, codeSeen, post.Blocks)
	}
	if strings.ContainsAny(post.Text, "<>") {
		t.Fatalf("the notification text carries markup: %q", post.Text)
	}
}

// TestSlackLongDiffTruncated: a diff longer than a message holds is cut,
// says how much was left out, and links to the whole plan.
func TestSlackLongDiffTruncated(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{}, SlackOptions{})
	req := testRequest("s-long")
	var lines []plan.DiffLine
	for i := range 200 {
		lines = append(lines, plan.DiffLine{Op: plan.OpAdd, Text: fmt.Sprintf("line %d", i)})
	}
	req.Parts = []plan.PartView{{Kind: "diff", Title: "Write", Path: `"big.txt"`, Added: 200, Lines: lines}}
	e.ask(req)
	msg := e.slack.message(e.slack.posted("s-long"))
	if !hasAll(msg, "+line 0", "+line 29", fmt.Sprintf("%d more lines of 200 not shown here.", 200-slackCodeLines), "/#req-s-long|The whole plan on the approval service") || strings.Contains(msg, "+line 30\\n") {
		t.Fatalf("truncation: %s", msg)
	}
}

// TestSlackPasskeyToolLinks: where each approver's passkey is required the
// message has no Approve button but "Approve with passkey" linking to the
// request's page; a crafted approve click is refused like a login alone.
func TestSlackPasskeyToolLinks(t *testing.T) {
	e := newSlackEnv(t, ServiceOptions{Passkeys: &PasskeyOptions{Tools: []string{"delete_file"}}}, SlackOptions{})
	e.ask(testRequest("s-pk"))
	msg := e.slack.message(e.slack.posted("s-pk"))
	if strings.Contains(msg, `"action_id":"`+slackActApprove+`"`) || !hasAll(msg, "Approve with passkey", `"url":"`+e.svc.opts.Origin+`/#req-s-pk"`, slackActDeny) {
		t.Fatalf("passkey message: %s", msg)
	}
	e.click(slackAlice, slackActPasskey, "s-pk") // Slack reports link clicks too
	e.click(slackAlice, slackActApprove, "s-pk") // an old or forged button
	e.slack.told(slackAlice, "requires a passkey")
	e.nothingRecorded("s-pk")
}
