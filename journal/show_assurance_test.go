package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// journal show names the assurance of channel approvals and, for
// passkeys, who signed with which credential; evidence that is not a
// statement adds nothing (it is display only, never trusted).
func TestShowAssurance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	j, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ev := json.RawMessage(`{"statement":{"passkeys":[{"approver":"alice","credential_id":"Q1JFRC1h","assertion":{}}]},"signature":"x"}`)
	for _, r := range []Record{
		{Call: "c1", Tool: "drop_table", Decision: ChannelApproved, By: "alice", Assurance: "passkey", Evidence: ev},
		{Call: "c2", Tool: "drop_table", Decision: ChannelApproved, By: "bob", Assurance: "channel"},
		{Call: "c3", Tool: "drop_table", Decision: ChannelApproved, By: "carol", Assurance: "passkey", Evidence: json.RawMessage(`"junk"`)},
		{Call: "c4", Tool: "delete_file", Decision: PageApproved, By: "ada", Assurance: "passkey", Evidence: json.RawMessage(`{"approver":"ada","credential_id":"QURBLWtleTE","assertion":{}}`)},
		{Call: "c5", Tool: "delete_file", Decision: PageApproved, Assurance: "local_page"},
	} {
		if err := j.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	var out bytes.Buffer
	if err := ShowFile(&out, path, Filter{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"alice; assurance passkey [alice:Q1JFRC1h]", "bob; assurance channel", "carol; assurance passkey ", "ada; assurance passkey [ada:QURBLWtl]", "assurance local page"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("journal show lacks %q:\n%s", want, out.String())
		}
	}
}
