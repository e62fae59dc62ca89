package mcpsafe_test

import (
	"context"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"
)

// jsonValue draws a random JSON value of bounded depth.
func jsonValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 6
		if depth <= 0 {
			kinds = 4
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return rapid.StringOf(rapid.RuneFrom([]rune("ab \u00e9\u20ac\U0001F600\n\""))).Draw(t, "s")
		case 1:
			return float64(rapid.IntRange(-1e6, 1e6).Draw(t, "n"))
		case 2:
			return rapid.Bool().Draw(t, "b")
		case 3:
			return nil
		case 4:
			return rapid.SliceOfN(jsonValue(depth-1), 0, 3).Draw(t, "arr")
		default:
			return jsonObject(depth-1).Draw(t, "obj")
		}
	})
}

func jsonObject(depth int) *rapid.Generator[map[string]any] {
	return rapid.MapOfN(rapid.StringMatching(`[a-z\x{e9}\x{20ac}]{1,4}`), jsonValue(depth), 0, 4)
}

// shuffled encodes v with object keys in a random order and random spacing:
// a different byte string for the same JSON value.
func shuffled(v any, r *rand.Rand) string {
	switch x := v.(type) {
	case map[string]any:
		keys := sortedKeys(x)
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		parts := make([]string, len(keys))
		for i, k := range keys {
			kb, _ := json.Marshal(k)
			parts[i] = string(kb) + strings.Repeat(" ", r.Intn(2)) + ":" + shuffled(x[k], r)
		}
		return "{" + strings.Join(parts, " ,"[r.Intn(2):]) + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = shuffled(e, r)
		}
		return "[" + strings.Join(parts, ",") + "]"
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// mutate changes one leaf (or adds a key) somewhere in v.
func mutate(t *rapid.T, v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var c map[string]any
	json.Unmarshal(b, &c)
	var walk func(m map[string]any) bool
	walk = func(m map[string]any) bool {
		for _, k := range sortedKeys(m) {
			switch x := m[k].(type) {
			case map[string]any:
				if rapid.Bool().Draw(t, "descend") && walk(x) {
					return true
				}
			case string:
				m[k] = x + "!"
				return true
			case float64:
				m[k] = x + 1
				return true
			case bool:
				m[k] = !x
				return true
			case nil:
				m[k] = false
				return true
			case []any:
				m[k] = append(x, "extra")
				return true
			}
		}
		return false
	}
	if !walk(c) {
		c["added"] = true
	}
	return c
}

// Property: a grant verifies for arguments equal after canonicalization
// (reordered keys, other spacing) and fails for any mutation.
func TestGrantProperty(t *testing.T) {
	n := newNotes()
	act := mcpsafe.Tool{
		Name:        "act",
		InputSchema: map[string]any{"type": "object"},
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "act"}, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			n.mu.Lock()
			n.execs++
			n.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		},
	}
	e := newEnv(t, func(_ *mcpsafe.Options, tools *[]mcpsafe.Tool) { *tools = []mcpsafe.Tool{act} })
	cs := e.connect(client{})
	raw := func(s string) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "act", Arguments: json.RawMessage(s)})
		if err != nil {
			t.Fatalf("CallTool %s: %v", s, err)
		}
		return res
	}
	withToken := func(args string, tok string) string {
		tb, _ := json.Marshal(tok)
		if args == "{}" {
			return `{"approval_token":` + string(tb) + `}`
		}
		return `{"approval_token":` + string(tb) + "," + args[1:]
	}
	rapid.Check(t, func(rt *rapid.T) {
		args := jsonObject(3).Draw(rt, "args")
		r := rand.New(rand.NewSource(rapid.Int64().Draw(rt, "seed")))
		first, _ := json.Marshal(args)

		// The same value, encoded differently: redeems.
		tok := token(t, raw(string(first)))
		before := n.executions()
		res := raw(withToken(shuffled(args, r), tok))
		if res.IsError || n.executions() != before+1 {
			rt.Fatalf("equal arguments %s refused: %v", shuffled(args, r), text(res))
		}

		// Any mutation: refused, nothing runs.
		tok = token(t, raw(string(first)))
		m, _ := json.Marshal(mutate(rt, args))
		res = raw(withToken(string(m), tok))
		if !res.IsError || structured(t, res)["reason"] != mcpsafe.ReasonArgumentsChanged || n.executions() != before+1 {
			rt.Fatalf("mutated arguments %s (approved %s) not refused: %v", m, first, text(res))
		}
	})
}
