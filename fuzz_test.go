package mcpsafe_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/result"
	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fuzz targets present hostile approval tokens and MRTR request states
// to a real gate over the SDK's in-memory transport. The property: the tool
// runs only for a value this gate issued for these arguments, and at most
// once; everything else is a refusal. Keys and clock are fixed so that the
// seed corpus in testdata/fuzz holds values that authenticate (they reach
// the ledger, which has never seen their nonce) as well as near misses.

var fuzzKey = func() []byte {
	b := make([]byte, 32)
	for i := range b {
		b[i] = byte(0xa0 + i)
	}
	return b
}()

// fuzzNow is the gate's fixed clock. The in-memory ledger checks expiry
// against the real clock, so the TTL reaches far past today: seeds sealed
// once stay unexpired for the gate and issuable for the ledger.
var fuzzNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

const fuzzTTL = 20 * 365 * 24 * time.Hour

const fuzzPath = "cache.txt"

// fuzzGate is one gate, server and connected client, reused across fuzz
// inputs (a fresh server per input would measure the SDK's handshake).
type fuzzGate struct {
	cs    *mcp.ClientSession
	mu    sync.Mutex
	execs int
}

func newFuzzGate(tb testing.TB, mode mcpsafe.Mode) *fuzzGate {
	tb.Helper()
	keys, err := mcpsafe.NewKeys(fuzzKey)
	if err != nil {
		tb.Fatal(err)
	}
	fg := &fuzzGate{}
	g, err := mcpsafe.New(mcpsafe.Options{
		Audience: "fuzz-server", Journal: journal.Discard, Keys: keys, Mode: mode,
		Clock: func() time.Time { return fuzzNow }, TTL: fuzzTTL, MaxPending: 1 << 20, MaxPendingPerPrincipal: 1 << 20,
	})
	if err != nil {
		tb.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "fuzz-server", Version: "1"}, nil)
	err = g.Register(server, mcpsafe.Tool{
		Name:        "touch",
		InputSchema: pathSchema,
		Preview: func(context.Context, mcpsafe.Call, mcpsafe.Resolved) (mcpsafe.Plan, error) {
			return mcpsafe.Plan{Summary: "touch a note"}, nil
		},
		Execute: func(context.Context, mcpsafe.Call, mcpsafe.Approval) (*mcp.CallToolResult, error) {
			fg.mu.Lock()
			fg.execs++
			fg.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "touched"}}}, nil
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ss.Close() })
	cl := mcp.NewClient(&mcp.Implementation{Name: "fuzz-client", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: accept,
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	})
	fg.cs, err = cl.Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { fg.cs.Close() })
	return fg
}

func (fg *fuzzGate) executions() int {
	fg.mu.Lock()
	defer fg.mu.Unlock()
	return fg.execs
}

// call bounds each call, so that a call that never returns fails instead of
// stalling a fuzz run (the fuzzer has no per-input timeout).
func (fg *fuzzGate) call(tb testing.TB, p *mcp.CallToolParams) *mcp.CallToolResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := fg.cs.CallTool(ctx, p)
	if err != nil {
		tb.Fatalf("CallTool(%q): %v", p.Arguments, err)
	}
	return res
}

// issueToken returns a genuine token for touch(cache.txt).
func (fg *fuzzGate) issueToken(tb testing.TB) string {
	tb.Helper()
	res := fg.call(tb, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"path": fuzzPath}})
	var s result.Required
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &s); err != nil || s.ApprovalToken == "" {
		tb.Fatalf("no token issued: %s", b)
	}
	return s.ApprovalToken
}

// issueState returns a genuine MRTR request state for touch(cache.txt).
func (fg *fuzzGate) issueState(tb testing.TB) string {
	tb.Helper()
	res := fg.call(tb, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"path": fuzzPath}})
	if res.RequestState == "" {
		tb.Fatalf("no request state issued: %v", text(res))
	}
	return res.RequestState
}

// checkOutcome enforces the property for one presented value.
func checkOutcome(t *testing.T, fg *fuzzGate, before int, res *mcp.CallToolResult, genuine bool, spent map[string]bool, v string) {
	t.Helper()
	ran := fg.executions() != before
	switch {
	case ran && !genuine:
		t.Fatalf("a value this gate never issued ran the tool: %q", v)
	case ran && spent[v]:
		t.Fatalf("a genuine value ran the tool twice: %q", v)
	case ran:
		spent[v] = true
	case genuine && !spent[v]:
		// The control: a genuine, unspent value for these arguments runs.
		t.Fatalf("a genuine value was refused: %v", text(res))
	case !res.IsError:
		if m := structuredOrNil(res); m["status"] != "approval_required" {
			t.Fatalf("not executed, yet not refused either: %v", text(res))
		}
	}
}

func structuredOrNil(res *mcp.CallToolResult) map[string]any {
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

// FuzzApprovalToken presents arbitrary strings as approval_token.
func FuzzApprovalToken(f *testing.F) {
	fg := newFuzzGate(f, mcpsafe.ModeToken)
	genuine := map[string]bool{}
	for range 2 {
		tok := fg.issueToken(f)
		genuine[tok] = true
		f.Add(tok)
		f.Add(tok + "A")
		f.Add(tok[:len(tok)-1])
	}
	f.Add("")
	f.Add("not-a-token")
	var mu sync.Mutex
	spent := map[string]bool{}
	f.Fuzz(func(t *testing.T, tok string) {
		mu.Lock()
		defer mu.Unlock()
		before := fg.executions()
		res := fg.call(t, &mcp.CallToolParams{Name: "touch", Arguments: map[string]any{"path": fuzzPath, mcpsafe.TokenField: tok}})
		checkOutcome(t, fg, before, res, genuine[tok], spent, tok)
		if !genuine[tok] && !res.IsError {
			t.Fatalf("a forged token was not refused: %v", text(res))
		}
	})
}

// FuzzRequestState presents arbitrary strings as the MRTR requestState
// together with an exact accept: only a state this gate issued runs.
func FuzzRequestState(f *testing.F) {
	fg := newFuzzGate(f, mcpsafe.ModeElicit)
	genuine := map[string]bool{}
	for range 2 {
		st := fg.issueState(f)
		genuine[st] = true
		f.Add(st)
		f.Add(st + "A")
		f.Add(st[1:])
	}
	f.Add("")
	f.Add("not-a-state")
	var mu sync.Mutex
	spent := map[string]bool{}
	f.Fuzz(func(t *testing.T, state string) {
		mu.Lock()
		defer mu.Unlock()
		before := fg.executions()
		res := fg.call(t, &mcp.CallToolParams{
			Name: "touch", Arguments: map[string]any{"path": fuzzPath},
			RequestState:   state,
			InputResponses: mcp.InputResponseMap{"mcpsafe_approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
		})
		checkOutcome(t, fg, before, res, genuine[state], spent, state)
		if !genuine[state] && !res.IsError {
			t.Fatalf("a forged request state was not refused: %v", text(res))
		}
	})
}

// TestWriteFuzzSeeds regenerates testdata/fuzz for the two targets above
// when MCPSAFE_WRITE_FUZZ_SEEDS=1: values sealed under the fixed fuzz key
// and clock, so they authenticate in any process but were never issued to
// its ledger, plus tampered twins. Without the variable it checks that the
// corpus exists.
func TestWriteFuzzSeeds(t *testing.T) {
	dirs := map[string]string{
		"FuzzApprovalToken": filepath.Join("testdata", "fuzz", "FuzzApprovalToken"),
		"FuzzRequestState":  filepath.Join("testdata", "fuzz", "FuzzRequestState"),
	}
	if os.Getenv("MCPSAFE_WRITE_FUZZ_SEEDS") != "1" {
		for name, dir := range dirs {
			if ents, err := os.ReadDir(dir); err != nil || len(ents) == 0 {
				t.Fatalf("%s has no seed corpus in %s (run with MCPSAFE_WRITE_FUZZ_SEEDS=1): %v", name, dir, err)
			}
		}
		return
	}
	tok := newFuzzGate(t, mcpsafe.ModeToken).issueToken(t)
	st := newFuzzGate(t, mcpsafe.ModeElicit).issueState(t)
	flip := func(s string, i int) string {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	seeds := map[string]map[string]string{
		"FuzzApprovalToken": {
			"sealed_not_issued": tok, "appended_char": tok + "A", "padding": tok + "=",
			"flipped_middle": flip(tok, len(tok)/2), "flipped_last": flip(tok, len(tok)-1),
			"truncated": tok[:len(tok)-2], "state_as_token": st, "empty": "", "garbage": "%%%",
		},
		"FuzzRequestState": {
			"sealed_not_issued": st, "appended_char": st + "A", "padding": st + "==",
			"flipped_first": flip(st, 0), "flipped_middle": flip(st, len(st)/2),
			"token_as_state": tok, "newline": st[:10] + "\n" + st[10:], "empty": "",
		},
	}
	for name, vs := range seeds {
		if err := os.MkdirAll(dirs[name], 0o755); err != nil {
			t.Fatal(err)
		}
		for file, v := range vs {
			body := fmt.Sprintf("go test fuzz v1\nstring(%q)\n", v)
			if err := os.WriteFile(filepath.Join(dirs[name], file), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// FuzzOpenGrant drives the gate's unseal path directly (no transport), so
// the fuzzer runs thousands of inputs per second: a value opens only if it
// is a grant sealed under the key for this audience, i.e. one of the
// genuine sealed seeds in testdata/fuzz.
func FuzzOpenGrant(f *testing.F) {
	keys, err := mcpsafe.NewKeys(fuzzKey)
	if err != nil {
		f.Fatal(err)
	}
	known := map[string]bool{}
	for _, dir := range []string{"FuzzApprovalToken", "FuzzRequestState"} {
		b, err := os.ReadFile(filepath.Join("testdata", "fuzz", dir, "sealed_not_issued"))
		if err != nil {
			f.Fatal(err)
		}
		var v string
		if _, err := fmt.Sscanf(strings.TrimPrefix(string(b), "go test fuzz v1\n"), "string(%q)", &v); err != nil {
			f.Fatalf("%s seed: %v", dir, err)
		}
		known[v] = true
		f.Add(v, "fuzz-server")
		f.Add(v, "other-server")
	}
	// Fresh seals cannot be seeds here: fuzz workers are separate processes
	// and would not know them.
	f.Fuzz(func(t *testing.T, sealed, audience string) {
		nonce, err := mcpsafe.OpenGrantForFuzz(keys, audience, sealed)
		if err != nil {
			if nonce != "" {
				t.Fatalf("error %v with a nonce %q", err, nonce)
			}
			return
		}
		if !known[sealed] || audience != "fuzz-server" {
			t.Fatalf("opened a grant this key never sealed for %q: %q", audience, sealed)
		}
		if len(nonce) != 32 {
			t.Fatalf("opened grant has nonce %q", nonce)
		}
	})
}
