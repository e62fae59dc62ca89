package mcpsafe_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sendTool is a tool whose plan names none of its arguments: only the
// arguments section of the prompt can show the approver where it sends.
func sendTool(runs *atomic.Int32) mcpsafe.Tool {
	return mcpsafe.Tool{
		Name:        "send_report",
		InputSchema: map[string]any{"type": "object"},
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "Send the weekly report"}, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, nil
		},
	}
}

// padded is a call whose dangerous argument (recipient) comes after n
// harmless keys and, optionally, a long harmless string.
func padded(n, filler int) map[string]any {
	args := map[string]any{}
	for i := range n {
		args[fmt.Sprintf("a%03d", i)] = "harmless"
	}
	if filler > 0 {
		args["a_note"] = strings.Repeat("x", filler)
	}
	args["recipient"] = "attacker@evil.example"
	return args
}

// Padding cannot push the dangerous argument out of the approver's view:
// the prompt shows every argument whole, or the call is refused
// (plan_too_large) before anyone is asked. Never a cut. The form of a
// client that elicits may abbreviate a long value (bounded), saying so in
// counts, but every other argument stays whole in it.
func TestPaddedCallShownWholeOrRefused(t *testing.T) {
	cases := []struct {
		name   string
		mode   mcpsafe.Mode
		args   map[string]any
		reason string // "" = shown whole and approved
	}{
		{"elicit: 500 harmless keys before the recipient", mcpsafe.ModeElicit, padded(500, 0), mcpsafe.ReasonPlanTooLarge},
		{"token: 500 harmless keys before the recipient", mcpsafe.ModeToken, padded(500, 0), mcpsafe.ReasonPlanTooLarge},
		{"token: a 100 KB string before the recipient", mcpsafe.ModeToken, padded(0, 100<<10), mcpsafe.ReasonPlanTooLarge},
		// Controls: the same shape within the limits is shown whole.
		{"elicit control: 60 keys and a 4 KB string", mcpsafe.ModeElicit, padded(60, 4<<10), ""},
		{"token control: 60 keys and a 4 KB string", mcpsafe.ModeToken, padded(60, 4<<10), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int32
			var asked atomic.Int32
			var msg string
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = tc.mode
				*tools = append(*tools, sendTool(&runs))
			})
			cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				msg = r.Params.Message
				return accept(ctx, r)
			}})
			res := callTool(t, cs, "send_report", tc.args)
			if tc.mode == mcpsafe.ModeToken && tc.reason == "" {
				tok := token(t, res)
				msg = text(res)
				args := tc.args
				args["approval_token"] = tok
				res = callTool(t, cs, "send_report", args)
				delete(args, "approval_token")
			}
			if tc.reason != "" {
				wantRefused(t, res, tc.reason)
				if asked.Load() != 0 || runs.Load() != 0 {
					t.Fatalf("a plan too large to show was still put to the user (%d) or ran (%d)", asked.Load(), runs.Load())
				}
				if m := structured(t, res); !strings.Contains(m["message"].(string), "never cut") {
					t.Fatalf("the refusal does not say why: %v", m["message"])
				}
				return
			}
			wantExecuted(t, res)
			if runs.Load() != 1 {
				t.Fatalf("runs = %d", runs.Load())
			}
			// Every argument is in the prompt, whole.
			for k, v := range tc.args {
				if line := fmt.Sprintf("%q: %q", k, v); !strings.Contains(msg, line) {
					t.Fatalf("the prompt lacks %.60s", line)
				}
			}
			if strings.Contains(msg, "…") || strings.Contains(msg, "sha256:") {
				t.Fatal("the prompt cut an argument")
			}
		})
	}
}

// A 100 KB string before the recipient, in a form: the form is bounded,
// the long string shown by its start and end with its length, and the
// recipient, after it, whole. The token's text (relayed by the model) is
// never bounded: it is refused, as before.
func TestPaddedStringBoundedInFormRecipientWhole(t *testing.T) {
	var runs atomic.Int32
	var msg string
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeElicit
		*tools = append(*tools, sendTool(&runs))
	})
	cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return accept(ctx, r)
	}})
	wantExecuted(t, callTool(t, cs, "send_report", padded(0, 100<<10)))
	wantFormFits(t, msg)
	for _, want := range []string{
		"too long for this form to show whole",
		`"recipient": "attacker@evil.example"`,
		`(102400 chars, sha256:`, "(abbreviated: only its start and end are shown)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the bounded form lacks %q:\n%.3000s", want, msg)
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("runs = %d", runs.Load())
	}
}
