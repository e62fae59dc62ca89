package mcpsafe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/canon"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// moveNoteTool reads its arguments the way most Go tools do, with
// encoding/json into a struct (which matches keys case-insensitively),
// while its rules read the exact key from the argument map. Its schema
// allows extra properties, as many upstream schemas do.
func (n *notes) moveNoteTool(seen *[]json.RawMessage, mu *sync.Mutex) mcpsafe.Tool {
	type moveArgs struct {
		Source      string `json:"source"`
		Destination string `json:"destination"`
	}
	exact := func(c mcpsafe.Call) string {
		var m map[string]any
		_ = json.Unmarshal(c.Arguments, &m)
		s, _ := m["source"].(string)
		return s
	}
	return mcpsafe.Tool{
		Name: "move_note",
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"source":      map[string]any{"type": "string"},
				"destination": map[string]any{"type": "string"},
			},
			"required": []string{"source", "destination"},
		},
		Deny: []mcpsafe.Rule{{Name: "thesis is protected", Match: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Resolved) (bool, error) {
			return exact(c) == "thesis.txt", nil
		}}},
		AutoApprove: []mcpsafe.Rule{{Name: "todo may move", Match: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Resolved) (bool, error) {
			return exact(c) == "todo.txt", nil
		}}},
		Preview: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: fmt.Sprintf("Move note %q", exact(c))}, nil
		},
		Execute: func(_ context.Context, c mcpsafe.Call, _ mcpsafe.Approval) (*mcp.CallToolResult, error) {
			mu.Lock()
			*seen = append(*seen, append(json.RawMessage(nil), c.Arguments...))
			mu.Unlock()
			var a moveArgs
			if err := c.Decode(&a); err != nil {
				return nil, err
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			n.execs++
			n.m[a.Destination] = n.m[a.Source]
			delete(n.m, a.Source)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "moved " + a.Source}}}, nil
		},
	}
}

func rawCall(t *testing.T, cs *mcp.ClientSession, tool, raw string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(raw)})
	if err != nil {
		t.Fatalf("CallTool %s %s: %v", tool, raw, err)
	}
	return res
}

// TestFoldedKeysRefused is the attack from issue 11: the deny rule and the
// auto-approve rule read "source" = todo.txt, while encoding/json in
// Execute takes "ſource" (U+017F) = thesis.txt, which the deny rule
// protects. Every spelling encoding/json folds together is refused before
// any rule runs, at any depth; the exact spellings are the controls.
// (mutant: canon-folded-keys-unchecked)
func TestFoldedKeysRefused(t *testing.T) {
	attacks := map[string]string{
		"long s":             `{"source":"todo.txt","ſource":"thesis.txt","destination":"stolen.txt"}`,
		"long s first":       `{"ſource":"thesis.txt","source":"todo.txt","destination":"stolen.txt"}`,
		"upper case":         `{"source":"todo.txt","SOURCE":"thesis.txt","destination":"stolen.txt"}`,
		"Kelvin sign nested": `{"source":"todo.txt","destination":"stolen.txt","opts":{"kind":"a","Kind":"b"}}`,
		"token in capitals":  `{"source":"todo.txt","destination":"stolen.txt","Approval_Token":"x"}`,
		"token Kelvin sign":  `{"source":"todo.txt","destination":"stolen.txt","approval_toKen":"x"}`,
	}
	for name, raw := range attacks {
		t.Run(name, func(t *testing.T) {
			var seen []json.RawMessage
			var mu sync.Mutex
			e := newEnv(t, nil)
			e.register(e.notes.moveNoteTool(&seen, &mu))
			res := rawCall(t, e.connect(client{}), "move_note", raw)
			wantRefused(t, res, mcpsafe.ReasonArgumentsInvalid)
			if e.notes.executions() != 0 || !e.notes.has("thesis.txt") || !e.notes.has("todo.txt") {
				t.Fatalf("the folded key ran: %v", text(res))
			}
			if d := e.journal.decisions(); len(d) != 1 || d[0] != journal.Refused+":"+mcpsafe.ReasonArgumentsInvalid {
				t.Fatalf("journal %v", d)
			}
		})
	}
	t.Run("control: exact keys", func(t *testing.T) {
		var seen []json.RawMessage
		var mu sync.Mutex
		e := newEnv(t, nil)
		e.register(e.notes.moveNoteTool(&seen, &mu))
		cs := e.connect(client{})
		wantExecuted(t, rawCall(t, cs, "move_note", `{"source":"todo.txt","destination":"done.txt","opts":{"kind":"a","mode":"b"}}`))
		if !e.notes.has("done.txt") || e.notes.has("todo.txt") {
			t.Fatal("the auto-approved move did not happen")
		}
		wantRefused(t, rawCall(t, cs, "move_note", `{"source":"thesis.txt","destination":"stolen.txt"}`), mcpsafe.ReasonPolicyDenied)
		if !e.notes.has("thesis.txt") {
			t.Fatal("the deny rule did not hold")
		}
	})
}

func (e *env) register(tool mcpsafe.Tool) {
	e.t.Helper()
	if err := e.gate.Register(e.server, tool); err != nil {
		e.t.Fatalf("Register %s: %v", tool.Name, err)
	}
}

// TestTokenSpellingVariantRefused: an approval token sent under a case
// variant of approval_token is neither redeemed nor passed to the tool as
// an ordinary argument; the exact spelling redeems it.
func TestTokenSpellingVariantRefused(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{})
	tok := token(t, callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt"}))
	for _, name := range []string{"Approval_Token", "APPROVAL_TOKEN", "approval_toKen"} {
		wantRefused(t, callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt", name: tok}), mcpsafe.ReasonArgumentsInvalid)
		if e.notes.executions() != 0 {
			t.Fatalf("%s ran the tool", name)
		}
	}
	// Control: the token is still unspent and redeems under its exact name.
	wantExecuted(t, callTool(t, cs, "rename_note", map[string]any{"from": "todo.txt", "to": "done.txt", mcpsafe.TokenField: tok}))
	if !e.notes.has("done.txt") {
		t.Fatal("exact token did not run")
	}
}

// TestJournalArgumentsAreWhatExecuteGot: the arguments in the real journal
// (approval and outcome records) are, as JSON values, exactly the bytes
// Execute received: same keys, same values, nothing dropped or added,
// including characters JSON encoders like to escape.
func TestJournalArgumentsAreWhatExecuteGot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var seen []json.RawMessage
	var mu sync.Mutex
	e := newEnv(t, func(o *mcpsafe.Options, _ *[]mcpsafe.Tool) { o.Journal = j })
	e.register(e.notes.moveNoteTool(&seen, &mu))
	raw := `{"destination":"done.txt","label":"a<b>&c\u2028\u00e9\ud83d\ude00","source":"todo.txt","n":1e2,"opts":{"list":[true,null,-0.5],"Kind":"x"}}`
	wantExecuted(t, rawCall(t, e.connect(client{}), "move_note", raw))
	if len(seen) != 1 {
		t.Fatalf("Execute ran %d times", len(seen))
	}
	got := readJournal(t, path)
	n := 0
	for _, r := range got {
		if r.Tool != "move_note" {
			continue
		}
		n++
		a, err := canon.Canonical(r.Args)
		if err != nil {
			t.Fatalf("%s record args %s: %v", r.Decision, r.Args, err)
		}
		b, err := canon.Canonical(seen[0])
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Fatalf("%s record holds %s, Execute got %s", r.Decision, a, b)
		}
		if d, _ := canon.Digest(seen[0]); r.ArgsDigest != d {
			t.Fatalf("%s record digest %s is not the digest of what Execute got (%s)", r.Decision, r.ArgsDigest, d)
		}
	}
	if n != 2 {
		t.Fatalf("want an approval and an outcome record, got %d: %+v", n, got)
	}
	// A nested member named like the token field is an ordinary argument:
	// the journal keeps its key and hides its value, like any other name
	// with "token" in it, rather than dropping it from the record.
	wantExecuted(t, rawCall(t, e.connect(client{}), "move_note", `{"source":"todo.txt","destination":"b.txt","opts":{"approval_token":"v"}}`))
	last := readJournal(t, path)
	if a := string(last[len(last)-1].Args); !strings.Contains(a, `"opts":{"approval_token":"[redacted]"}`) {
		t.Fatalf("nested approval_token not kept as a redacted key: %s", a)
	}
}

// TestRegisterRefusesFoldedSchemaProperties: a schema whose properties
// could only be sent as arguments the gate refuses (two names equal under
// case folding, or a case variant of approval_token) is refused at
// registration; a schema whose names differ otherwise is the control.
func TestRegisterRefusesFoldedSchemaProperties(t *testing.T) {
	e := newEnv(t, nil)
	tool := func(props ...string) mcpsafe.Tool {
		p := map[string]any{}
		for _, name := range props {
			p[name] = map[string]any{"type": "string"}
		}
		tl := e.notes.renameTool()
		tl.Name = "t_" + strings.Join(props, "_")
		tl.InputSchema = map[string]any{"type": "object", "properties": p}
		return tl
	}
	for _, props := range [][]string{{"Approval_Token"}, {"source", "ſource"}, {"kind", "Kind"}} {
		if err := e.gate.Register(e.server, tool(props...)); err == nil || !strings.Contains(err.Error(), "differ only in letter case") {
			t.Errorf("Register with properties %q = %v", props, err)
		}
	}
	if err := e.gate.Register(e.server, tool("source", "sources", "ß", "ss")); err != nil {
		t.Fatalf("control: %v", err)
	}
}
