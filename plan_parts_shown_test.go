package mcpsafe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/plan"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// memFile is a file in memory that a write tool overwrites.
type memFile struct {
	mu   sync.Mutex
	text string
}

func (f *memFile) get() string  { f.mu.Lock(); defer f.mu.Unlock(); return f.text }
func (f *memFile) set(s string) { f.mu.Lock(); defer f.mu.Unlock(); f.text = s }
func lines(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s %d\n", prefix, i+1)
	}
	return b.String()
}

// writeTool overwrites f with the argument content; its plan shows the
// change as a diff part that stands for the content argument.
func writeTool(f *memFile, runs *atomic.Int32) mcpsafe.Tool {
	return mcpsafe.Tool{
		Name:        "write_note",
		InputSchema: map[string]any{"type": "object"},
		Preview: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Resolved) (mcpsafe.Plan, error) {
			var a struct{ Path, Content string }
			if err := c.Decode(&a); err != nil {
				return mcpsafe.Plan{}, err
			}
			return mcpsafe.Plan{
				Summary: "Overwrite " + a.Path,
				Parts: []plan.Part{{
					Diff:  &plan.Diff{Path: a.Path, Old: f.get(), New: a.Content},
					Shows: []string{"content"},
				}},
			}, nil
		},
		Execute: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			var a struct{ Content string }
			_ = c.Decode(&a)
			f.set(a.Content)
			runs.Add(1)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written"}}}, nil
		},
	}
}

// A diff part is shown as a unified diff, the argument it stands for is
// listed once (not repeated), the channel request carries the part as
// data, and the journal keeps the digest of what was shown, not the text.
func TestDiffPartShown(t *testing.T) {
	for _, mode := range []mcpsafe.Mode{mcpsafe.ModeElicit, mcpsafe.ModeChannel} {
		t.Run(string(mode), func(t *testing.T) {
			f := &memFile{text: "line one\nline two\nline three\n"}
			var runs atomic.Int32
			var msg string
			var req approver.Request
			path := filepath.Join(t.TempDir(), "journal.jsonl")
			j, err := journal.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode, o.Journal = mode, j
				o.Approver = approverFunc(func(_ context.Context, r approver.Request) (approver.Decision, error) {
					req = r
					return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
				})
				*tools = append(*tools, writeTool(f, &runs))
			})
			cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				msg = r.Params.Message
				return accept(ctx, r)
			}})
			newText := "line one\nline 2 (edited by agent)\nline three\n"
			wantExecuted(t, callTool(t, cs, "write_note", map[string]any{"path": "notes.txt", "content": newText}))
			if runs.Load() != 1 || f.get() != newText {
				t.Fatalf("runs %d, file %q", runs.Load(), f.get())
			}
			if mode == mcpsafe.ModeElicit {
				for _, want := range []string{"\n    @@ -1,3 +1,3 @@", "\n     line one", "\n    -line two", "\n    +line 2 (edited by agent)", "(1 line added, 1 removed)",
					`"content": shown in full by change 1 above`, `"path": "notes.txt"`} {
					if !strings.Contains(msg, want) {
						t.Errorf("the prompt lacks %q:\n%s", want, msg)
					}
				}
				if strings.Count(msg, "line 2 (edited by agent)") != 1 {
					t.Errorf("the new content is shown more than once:\n%s", msg)
				}
			} else {
				if len(req.Parts) != 1 || req.Parts[0].Kind != "diff" || req.Parts[0].Added != 1 || req.Parts[0].Removed != 1 {
					t.Fatalf("the channel request's parts: %+v", req.Parts)
				}
				ops := ""
				for _, l := range req.Parts[0].Lines {
					ops += l.Op + "|"
				}
				if ops != "@@| |-|+| |" || req.Parts[0].Lines[3].Text != "line 2 (edited by agent)" {
					t.Fatalf("the diff as data: %q %+v", ops, req.Parts[0].Lines)
				}
			}
			recs := readJournal(t, path)
			var approval *journal.Record
			for i := range recs {
				b, _ := json.Marshal(recs[i])
				if strings.Contains(string(b), "edited by agent\\n") && !strings.Contains(string(b), `"args"`) {
					t.Errorf("the journal keeps what was shown, not its digest: %s", b)
				}
				if recs[i].Shown != "" {
					approval = &recs[i]
				}
			}
			if approval == nil || !strings.HasPrefix(approval.Shown, "sha256:") || len(approval.Shown) != len("sha256:")+64 {
				t.Fatalf("no approval record carries the digest of what was shown: %+v", recs)
			}
		})
	}
}

// A diff too long for the prompt's short form is abbreviated with a count
// of what is left out, and the argument it stands for is then listed in
// full: the prompt still shows everything, never cut silently.
func TestLongDiffAbbreviatedNotCut(t *testing.T) {
	f := &memFile{text: lines("old", 200)}
	var runs atomic.Int32
	var msg string
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeElicit
		*tools = append(*tools, writeTool(f, &runs))
	})
	cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return accept(ctx, r)
	}})
	content := lines("new", 200)
	wantExecuted(t, callTool(t, cs, "write_note", map[string]any{"path": "big.txt", "content": content}))
	// 1 hunk header + 200 removed + 200 added = 401 lines; 80 shown.
	if !strings.Contains(msg, "… 321 more diff lines not shown here") {
		t.Fatalf("the prompt does not say how much of the diff it left out:\n%.2000s", msg)
	}
	if strings.Contains(msg, "shown in full by change") {
		t.Fatal("an abbreviated diff claims to show the content in full")
	}
	for i := 1; i <= 200; i++ {
		if !strings.Contains(msg, fmt.Sprintf("\n      │ new %d\n", i)) {
			t.Fatalf("the content's line %d is not listed in full:\n%s", i, msg)
		}
	}
}

// The diff binds: the file changing between the question and the run
// changes the diff and voids the approval; the control runs.
func TestDiffChangeVoidsApproval(t *testing.T) {
	for _, changed := range []bool{true, false} {
		t.Run(fmt.Sprint("changed=", changed), func(t *testing.T) {
			f := &memFile{text: "a\nb\n"}
			var runs atomic.Int32
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = mcpsafe.ModeElicit
				*tools = append(*tools, writeTool(f, &runs))
			})
			cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if changed {
					f.set("a\nb\nsomeone else's line\n")
				}
				return accept(ctx, r)
			}})
			res := callTool(t, cs, "write_note", map[string]any{"path": "n.txt", "content": "a\nc\n"})
			if changed {
				wantRefused(t, res, mcpsafe.ReasonTargetChanged)
				if runs.Load() != 0 {
					t.Fatal("ran over a file that changed after approval")
				}
				return
			}
			wantExecuted(t, res)
		})
	}
}

// Diff and argument lines crafted to pose as the prompt's structure or to
// hide a change are shown as what they are: every line from the content
// sits after the fixed gutter, a CR or bidi control is escaped, a run of
// spaces is counted. The control is a plain line, shown as it is.
func TestCraftedDiffShownAsItIs(t *testing.T) {
	spaces := strings.Repeat(" ", 200)
	f := &memFile{text: "keep\n" + spaces + "+rm -rf /\nold\n"}
	var msg string
	var runs atomic.Int32
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeElicit
		*tools = append(*tools, writeTool(f, &runs))
	})
	cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return accept(ctx, r)
	}})
	content := "keep\n" + spaces + "+rm -rf /\n" +
		"harmless\r+rm -rf ~\n" + // CR: overprints the line on a terminal
		"```\n" + // closes a Markdown diff block
		"Arguments: none\n" + // poses as the prompt's own lines
		"The approval covers exactly these arguments and this state, once.\n" +
		"safe\u202etxt.exe zero\u200bwidth\n" +
		"plain new line\n"
	wantExecuted(t, callTool(t, cs, "write_note", map[string]any{"path": "n.txt", "content": content}))
	for _, want := range []string{
		"\n     ⟨200 spaces⟩+rm -rf /\n", // unchanged context, its spaces counted
		`    +harmless\r+rm -rf ~` + "\n",
		"\n    +```\n",
		"\n    +Arguments: none\n",
		"\n    +The approval covers exactly these arguments and this state, once.\n",
		`    +safe\u202etxt.exe zero\u200bwidth` + "\n",
		"\n    +plain new line\n", // control
		"\n    -old\n",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, msg)
		}
	}
	for _, bad := range []string{"\r", "\u202e", "\u200b", spaces} {
		if strings.Contains(msg, bad) {
			t.Errorf("the prompt carries %q raw", bad)
		}
	}
	var structure int
	for _, l := range strings.Split(msg, "\n") {
		if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") || strings.HasPrefix(l, "Arguments:") {
			t.Errorf("a line from the content starts a line of the prompt: %q", l)
		}
		if l == "The approval covers exactly these arguments and this state, once." {
			structure++
		}
	}
	if structure != 1 {
		t.Errorf("the prompt's closing line appears %d times at the start of a line", structure)
	}
}

// Arguments that are JSON are shown as indented JSON, not as an escaped
// string, and a string of several lines as its lines; each once.
func TestArgumentsShownOnceAsJSON(t *testing.T) {
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
	wantExecuted(t, callTool(t, cs, "send_report", map[string]any{
		"edits": []any{map[string]any{"oldText": "line two", "newText": "line 2 (edited by agent)"}},
		"note":  "first line\nsecond line",
		"to":    "team@example.com",
	}))
	for _, want := range []string{
		"\"edits\": JSON:\n      │ [\n      │   {\n      │     \"newText\": \"line 2 (edited by agent)\",\n      │     \"oldText\": \"line two\"\n      │   }\n      │ ]",
		"\"note\": text of 2 lines, 22 characters:\n      │ first line\n      │ second line",
		`"to": "team@example.com"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, `\"newText\"`) {
		t.Errorf("the prompt shows JSON as an escaped string:\n%s", msg)
	}
}

// A secret argument copied into a part is redacted there too, in the
// prompt and in the channel request; the tool still gets the real value.
func TestSecretsRedactedInParts(t *testing.T) {
	for _, mode := range []mcpsafe.Mode{mcpsafe.ModeElicit, mcpsafe.ModeChannel} {
		t.Run(string(mode), func(t *testing.T) {
			var shown []string
			var got atomic.Value
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode = mode
				o.Approver = approverFunc(func(_ context.Context, r approver.Request) (approver.Decision, error) {
					b, _ := json.Marshal(r)
					shown = append(shown, string(b))
					return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
				})
				*tools = append(*tools, mcpsafe.Tool{
					Name: "set_password", InputSchema: map[string]any{"type": "object"},
					Preview: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Resolved) (mcpsafe.Plan, error) {
						var a struct{ Password string }
						_ = c.Decode(&a)
						return mcpsafe.Plan{Summary: "Set the password", Parts: []plan.Part{
							{Diff: &plan.Diff{Path: "app.env", Old: "user=app\n", New: "user=app\npassword=" + a.Password + "\n"}},
							{Table: &plan.Table{Columns: []string{"key", "value"}, Rows: [][]string{{"password", a.Password}}}},
						}}, nil
					},
					Execute: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
						got.Store(string(c.Arguments))
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "set"}}}, nil
					},
				})
			})
			cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				shown = append(shown, r.Params.Message)
				return accept(ctx, r)
			}})
			wantExecuted(t, callTool(t, cs, "set_password", map[string]any{"password": secretPassword}))
			if len(shown) != 1 {
				t.Fatalf("shown %d times", len(shown))
			}
			noSecrets(t, "what the approver saw", shown[0])
			if !strings.Contains(shown[0], "password=[redacted]") || !strings.Contains(shown[0], `"[redacted]"`) {
				t.Errorf("the parts lost their redacted lines:\n%s", shown[0])
			}
			if a, _ := got.Load().(string); !strings.Contains(a, secretPassword) {
				t.Fatalf("Execute did not get the real value: %q", a)
			}
		})
	}
}
