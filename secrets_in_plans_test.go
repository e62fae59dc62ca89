package mcpsafe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/approver"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/prompt"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	secretPassword = "hunter2-correct-horse"
	secretDSN      = "postgres://app:dsn-pw-9f8e@db1/prod"
)

// connectTool is a careless tool: its preview copies every argument,
// secrets included, into the plan's summary, details and targets. SecretFields
// names dsn (not a common name); password is one.
func connectTool(got *sync.Map) mcpsafe.Tool {
	return mcpsafe.Tool{
		Name:         "rotate_db",
		InputSchema:  map[string]any{"type": "object"},
		SecretFields: []string{"dsn"},
		Preview: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Resolved) (mcpsafe.Plan, error) {
			var a map[string]string
			if err := c.Decode(&a); err != nil {
				return mcpsafe.Plan{}, err
			}
			return mcpsafe.Plan{
				Summary: fmt.Sprintf("Rotate %s with password %s", a["host"], a["password"]),
				Details: []string{"dsn: " + a["dsn"], "quoted: " + prompt.Quote(a["password"]), fmt.Sprintf("go-quoted: %q", a["dsn"])},
				Targets: []mcpsafe.Target{{Name: a["host"], State: "reachable via " + a["dsn"]}},
			}, nil
		},
		Execute: func(_ context.Context, c mcpsafe.Call, a mcpsafe.Approval) (*mcp.CallToolResult, error) {
			got.Store("args", string(c.Arguments))
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "rotated"}}}, nil
		},
	}
}

func noSecrets(t *testing.T, where, s string) {
	t.Helper()
	for _, secret := range []string{secretPassword, secretDSN, "dsn-pw-9f8e", "correct-horse"} {
		if strings.Contains(s, secret) {
			t.Errorf("%s carries the secret %q:\n%s", where, secret, s)
		}
	}
}

// Secrets never reach a plan's readers: the elicitation message, the
// token result (text and structured content), the channel request and the
// journal. The tool itself still receives them, and an argument that is
// not secret is shown as it is (the controls).
func TestSecretsRedactedInPlans(t *testing.T) {
	args := func() map[string]any {
		return map[string]any{"host": "db1.internal", "password": secretPassword, "dsn": secretDSN}
	}
	for _, mode := range []mcpsafe.Mode{mcpsafe.ModeElicit, mcpsafe.ModeToken, mcpsafe.ModeChannel} {
		t.Run(string(mode), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.jsonl")
			j, err := journal.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var got sync.Map
			var shown []string
			e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
				o.Mode, o.Journal = mode, j
				o.Approver = approverFunc(func(_ context.Context, r approver.Request) (approver.Decision, error) {
					b, _ := json.Marshal(r)
					shown = append(shown, string(b))
					return approver.Decision{Approved: true, Approvers: []string{"alice"}}, nil
				})
				*tools = append(*tools, connectTool(&got))
			})
			cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				shown = append(shown, r.Params.Message)
				return accept(ctx, r)
			}})
			res := callTool(t, cs, "rotate_db", args())
			if mode == mcpsafe.ModeToken {
				b, _ := json.Marshal(res.StructuredContent)
				shown = append(shown, text(res), string(b))
				a := args()
				a["approval_token"] = token(t, res)
				res = callTool(t, cs, "rotate_db", a)
			}
			wantExecuted(t, res)
			if len(shown) == 0 {
				t.Fatal("nothing was shown to an approver")
			}
			for _, s := range shown {
				noSecrets(t, "what the approver saw", s)
				// Control: what is not secret is shown, and the redaction is visible.
				if !strings.Contains(s, "db1.internal") || !strings.Contains(s, "[redacted]") {
					t.Errorf("the plan lost its non-secret parts or hides the redaction:\n%s", s)
				}
			}
			if mode == mcpsafe.ModeChannel && !strings.Contains(shown[0], `"arguments":{"dsn":"[redacted]","host":"db1.internal","password":"[redacted]"}`) {
				t.Errorf("the channel request lacks the redacted arguments: %s", shown[0])
			}
			recs := readJournal(t, path)
			for _, r := range recs {
				b, _ := json.Marshal(r)
				noSecrets(t, "the journal", string(b))
			}
			if !strings.Contains(recs[len(recs)-1].Summary, "Rotate db1.internal with password [redacted]") {
				t.Errorf("journal summary %q", recs[len(recs)-1].Summary)
			}
			// Control: the tool ran with the real values.
			if a, _ := got.Load("args"); !strings.Contains(a.(string), secretPassword) || !strings.Contains(a.(string), secretDSN) {
				t.Fatalf("Execute did not get the real arguments: %v", a)
			}
		})
	}
}

// Control for the redaction rule: the same values under names that are not
// secret are shown as they are.
func TestNonSecretValuesShown(t *testing.T) {
	var msg string
	var got sync.Map
	e := newEnv(t, func(o *mcpsafe.Options, tools *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeElicit
		tool := connectTool(&got)
		tool.SecretFields = nil
		*tools = append(*tools, tool)
	})
	cs := e.connect(client{elicit: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		msg = r.Params.Message
		return accept(ctx, r)
	}})
	wantExecuted(t, callTool(t, cs, "rotate_db", map[string]any{"host": "db1.internal", "dsn": secretDSN}))
	if !strings.Contains(msg, secretDSN) {
		t.Fatalf("a field that is neither named secret nor sensitive was redacted:\n%s", msg)
	}
}

// No model-facing message carries what a failing channel said: its error
// can name the approver's URL (with a key in the query) or echo its
// answer. The operator finds it in the log.
func TestChannelErrorKeptFromModel(t *testing.T) {
	var logs bytes.Buffer
	leak := errors.New(`Post "https://approvals.internal:8443/webhook?key=url-secret-77": dial tcp 10.0.0.9:8443: connection refused`)
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) {
		o.Mode = mcpsafe.ModeChannel
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		o.Approver = approverFunc(func(context.Context, approver.Request) (approver.Decision, error) {
			return approver.Decision{}, leak
		})
	})
	res := callTool(t, e.connect(client{}), "delete_note", map[string]any{"path": "cache.txt"})
	wantRefused(t, res, mcpsafe.ReasonChannelUnavailable)
	b, _ := json.Marshal(res)
	for _, bad := range []string{"approvals.internal", "url-secret-77", "10.0.0.9"} {
		if strings.Contains(string(b), bad) {
			t.Fatalf("the model's result carries %q: %s", bad, b)
		}
	}
	// Control: the operator still gets the whole error.
	if !strings.Contains(logs.String(), "url-secret-77") {
		t.Fatalf("the log lost the channel error: %s", logs.String())
	}
	if !e.notes.has("cache.txt") {
		t.Fatal("the tool ran")
	}
}
