package mcpsafe_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cardLines are the diff lines of the card's first part, as text.
func cardDiffLines(t *testing.T, card map[string]any) []string {
	t.Helper()
	parts, _ := card["parts"].([]any)
	if len(parts) == 0 {
		t.Fatalf("the card has no parts: %v", card["summary"])
	}
	var out []string
	for _, l := range parts[0].(map[string]any)["lines"].([]any) {
		m := l.(map[string]any)
		out = append(out, m["op"].(string)+m["text"].(string))
	}
	return out
}

// codeLine is a line of about the length of a line of code (64
// characters with its number), so that the sizes logged are realistic.
const codeLine = "    if err := handle(w, r); err != nil { return err } // line"

// logTool shows a diff part of diffLines lines, standing for no argument,
// beside its argument log (listed with the arguments).
func logTool(diffLines int, runs *atomic.Int32) mcpsafe.Tool {
	return mcpsafe.Tool{
		Name:        "append_log",
		InputSchema: map[string]any{"type": "object"},
		Preview: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "Append to the log", Parts: []plan.Part{{Diff: &plan.Diff{Path: "index.txt", New: lines(codeLine, diffLines)}}}}, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "appended"}}}, nil
		},
	}
}

// A long write (1,000 lines) in a client that renders the approval card
// (Claude Desktop, claude.ai, ChatGPT) is shown whole in the card: every
// line of its diff, the content argument named as shown by it, not
// repeated; Approve runs it once. So is a 2,000-line diff beside a
// 5,000-line argument. The control: a short write, shown as before. The
// sizes of the card's view are logged (they ground maxCardBytes's
// comment).
func TestLongPlanShownWholeInCard(t *testing.T) {
	for _, n := range []int{1000, 3} {
		t.Run(fmt.Sprintf("write of %d lines", n), func(t *testing.T) {
			f := &memFile{text: lines("old", 10)}
			var runs atomic.Int32
			e := cardEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) { *tools = append(*tools, writeTool(f, &runs)) })
			cs := e.connectCaps(appsCaps(false), nil)
			content := lines(codeLine, n)
			args := map[string]any{"path": "big.txt", "content": content}
			res := callTool(t, cs, "write_note", args)
			card, _ := cardOf(t, res)
			t.Logf("the card's view of a %d-line write: %d bytes", n, len(mustJSON(t, res.Meta["io.mcpsafe/approval-card"])))
			diff := strings.Join(cardDiffLines(t, card), "\n")
			for i := 1; i <= n; i++ {
				if !strings.Contains(diff, fmt.Sprintf("+%s %d\n", codeLine, i)) && !strings.HasSuffix(diff, fmt.Sprintf("+%s %d", codeLine, i)) {
					t.Fatalf("line %d of the write is not in the card", i)
				}
			}
			wantArgs := []any{`"content": shown in full by change 1 above`, `"path": "big.txt"`}
			if got := card["arguments"].([]any); fmt.Sprint(got) != fmt.Sprint(wantArgs) {
				t.Fatalf("arguments in the card: %q, want %q", got, wantArgs)
			}
			wantExecuted(t, decide(t, cs, card["decision"].(string), args, true))
			if runs.Load() != 1 || f.get() != content {
				t.Fatalf("the approved write did not run whole (runs %d)", runs.Load())
			}
		})
	}
	t.Run("a 2,000-line diff and a 5,000-line argument", func(t *testing.T) {
		var runs atomic.Int32
		e := cardEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) { *tools = append(*tools, logTool(1999, &runs)) })
		cs := e.connectCaps(appsCaps(false), nil)
		log := lines(codeLine, 5000)
		args := map[string]any{"log": log}
		res := callTool(t, cs, "append_log", args)
		card, _ := cardOf(t, res)
		t.Logf("the card's view of a 2,000-line diff and a 5,000-line argument: %d bytes", len(mustJSON(t, res.Meta["io.mcpsafe/approval-card"])))
		if got := len(cardDiffLines(t, card)); got != 2000 { // (with its hunk header)
			t.Fatalf("the card shows %d diff lines, want all 1,999 and the hunk", got)
		}
		a := card["arguments"].([]any)
		if len(a) != 1 || !strings.HasPrefix(a[0].(string), `"log": text of 5001 lines`) || !strings.Contains(a[0].(string), "// line 5000\n") || strings.Contains(a[0].(string), "not shown") {
			t.Fatalf("the long argument is not shown whole in the card: %.300q", a)
		}
		wantExecuted(t, decide(t, cs, card["decision"].(string), args, true))
		if runs.Load() != 1 {
			t.Fatalf("runs %d, want 1", runs.Load())
		}
	})
}

// manyPartsTool's plan is parts parts of 2,000 lines of '<' each (within
// a part's limits, escaped six-fold in JSON): past what one card carries.
func manyPartsTool(parts int, runs *atomic.Int32) mcpsafe.Tool {
	line := strings.Repeat("<", 125)
	var text strings.Builder
	for range 1999 { // (and the hunk's line)
		text.WriteString(line + "\n")
	}
	return mcpsafe.Tool{
		Name:        "write_many",
		InputSchema: map[string]any{"type": "object"},
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			p := mcpsafe.Plan{Summary: "Write many files"}
			for i := range parts {
				p.Parts = append(p.Parts, plan.Part{Diff: &plan.Diff{Path: fmt.Sprintf("f%d.html", i), New: text.String()}})
			}
			return p, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			runs.Add(1)
			return &mcp.CallToolResult{}, nil
		},
	}
}

// A plan past the card's limit is refused (plan_too_large), saying the
// card's limit and, in mode auto, that the approval page shows it; in
// mode card without the page's hint (it would change nothing). Nothing is
// asked and nothing runs. The control: two such parts fit.
func TestCardRefusesPastItsLimit(t *testing.T) {
	for _, tc := range []struct {
		mode     mcpsafe.Mode
		parts    int
		refused  bool
		pageHint bool
	}{
		{mcpsafe.ModeAuto, 5, true, true},
		{mcpsafe.ModeCard, 5, true, false},
		{mcpsafe.ModeAuto, 2, false, false},
	} {
		t.Run(fmt.Sprintf("mode %s, %d parts", tc.mode, tc.parts), func(t *testing.T) {
			var runs atomic.Int32
			e := cardEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = tc.mode
				*tools = append(*tools, manyPartsTool(tc.parts, &runs))
			})
			cs := e.connectCaps(appsCaps(false), nil)
			res := callTool(t, cs, "write_many", map[string]any{})
			if !tc.refused {
				card, _ := cardOf(t, res)
				t.Logf("the card's view of %d parts of 2,000 lines of '<': %d bytes", tc.parts, len(mustJSON(t, res.Meta["io.mcpsafe/approval-card"])))
				wantExecuted(t, decide(t, cs, card["decision"].(string), map[string]any{}, true))
				return
			}
			wantRefused(t, res, mcpsafe.ReasonPlanTooLarge)
			msg := text(res)
			if !strings.Contains(msg, "over the 4096 KiB a card carries") || strings.Contains(msg, "--approval-page") != tc.pageHint {
				t.Fatalf("the refusal does not say the card's limit, or names the page where it would not help (mode %s): %s", tc.mode, msg)
			}
			if res.Meta["io.mcpsafe/approval-card"] != nil || runs.Load() != 0 {
				t.Fatal("a card was shown or the call ran")
			}
		})
	}
}
