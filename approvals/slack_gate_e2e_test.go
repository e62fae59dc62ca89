package approvals

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/channel"
	"github.com/mcpsafe/mcpsafe/journal"
)

// TestGateSlackApproval is the whole path through Slack: a real SDK client
// calls a gated tool; the gate asks the service by its signed webhook; the
// service posts to (the stand-in of) Slack; a signed click approves; the
// gate checks the signed statement, journals the approval naming the path
// (via slack) and runs the call once. A replay of the click changes
// nothing, and the tool does not run again.
func TestGateSlackApproval(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	e := newSlackEnv(t, ServiceOptions{SigningKey: priv}, SlackOptions{})
	hook := newHook(t, e.srv.URL+"/webhook", channel.WithServiceKey(pub))

	files := &fileStore{files: map[string]string{"cache.txt": "old cache"}}
	jr := &memJournal{}
	gate, err := mcpsafe.New(mcpsafe.Options{
		Audience: "files@e2e", Journal: jr, Mode: mcpsafe.ModeChannel, Approver: hook, ChannelTimeout: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	if err := gate.Register(server, files.deleteTool()); err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "cache.txt"}})
		if err != nil {
			t.Errorf("CallTool: %v", err)
		}
		done <- res
	}()
	var id string
	e.slack.waitFor("the request's message", func() bool {
		posts := e.slack.recorded("chat.postMessage")
		if len(posts) == 0 || posts[0].Refused {
			return false
		}
		var blocks []map[string]any
		json.Unmarshal(posts[0].Blocks, &blocks)
		for _, b := range blocks {
			if els, ok := b["elements"].([]any); ok && b["type"] == "actions" {
				id, _ = els[0].(map[string]any)["value"].(string)
			}
		}
		return id != ""
	})
	ts := e.slack.posted(id)
	if m := e.slack.message(ts); !hasAll(m, `Delete \"cache.txt\"`, "files@e2e", slackActApprove) {
		t.Fatalf("message: %s", m)
	}
	body := clickPayload(slackAlice, slackActApprove, id, ts)
	now := itoa(time.Now().Unix())
	sig := slackSign(slackTestSecret, now, body)
	if code := e.deliver(body, now, sig); code != 200 {
		t.Fatalf("click: %d", code)
	}
	var res *mcp.CallToolResult
	select {
	case res = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the tool call did not return")
	}
	if res == nil || res.IsError || files.has("cache.txt") || files.runs() != 1 {
		t.Fatalf("after the Slack approval: %+v, execs=%d", res, files.runs())
	}
	rec, ok := jr.find(journal.ChannelApproved)
	if !ok || rec.By != "alice" || rec.Assurance != "channel" || !bytes.Contains(rec.Evidence, []byte(`"via":["slack"]`)) {
		t.Fatalf("journal: %+v (found %v), evidence %s", rec, ok, rec.Evidence)
	}
	// As `mcpsafe journal show` prints it, from a real journal file.
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	j.Close()
	var shown bytes.Buffer
	if err := journal.ShowFile(&shown, path, journal.Filter{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(shown.String(), "assurance channel (alice via slack)") {
		t.Fatalf("journal show does not name the path: %s", shown.String())
	}
	if code := e.deliver(body, now, sig); code != 401 {
		t.Fatalf("replayed click: %d", code)
	}
	if files.runs() != 1 {
		t.Fatalf("the tool ran %d times", files.runs())
	}
	e.slack.waitFor("the message shows the approval", func() bool {
		return strings.Contains(e.slack.message(ts), "Approved by alice (in Slack)")
	})
}
