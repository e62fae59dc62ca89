package journal

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Text the gate stores but did not write (an upstream's error echoing
// its input, a resolver's error in a refusal's summary) loses the call's
// secret values, by the common names and by the tool's SecretFields, in
// every form a plan would (raw, JSON-escaped); the rest of the text and a
// non-secret argument's value stay (the control).
func TestAppendCutsSecretsOutOfStoredText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	args := json.RawMessage(`{"user":"carol-77","api_key":"sk-AK-1","pin2":"zz-PIN-2","nested":{"password":"pw \"Q\" 3"}}`)
	failed := Record{Call: "c1", Tool: "rotate", Decision: Failed, Args: args, SecretFields: []string{"pin2"},
		Error: `invalid [input_value='sk-AK-1'] pin2=zz-PIN-2 password "pw \"Q\" 3" for carol-77`}
	refused := Record{Tool: "rotate", Decision: Refused, Reason: "resolver_failed", Args: args, SecretFields: []string{"pin2"},
		Summary: `resolver lookup reported an error: "sk-AK-1 zz-PIN-2 for carol-77"`}
	writeJournal(t, path, []Record{failed, refused})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"sk-AK-1", "zz-PIN-2", `Q\" 3`, `Q\\\" 3`} {
		if strings.Contains(string(raw), s) {
			t.Errorf("the journal holds the secret %q:\n%s", s, raw)
		}
	}
	var recs []Record
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if want := `invalid [input_value='[redacted]'] pin2=[redacted] password [redacted] for carol-77`; recs[0].Error != want {
		t.Errorf("error text %q, want %q", recs[0].Error, want)
	}
	if want := `resolver lookup reported an error: "[redacted] [redacted] for carol-77"`; recs[1].Summary != want {
		t.Errorf("summary %q, want %q", recs[1].Summary, want)
	}
}
