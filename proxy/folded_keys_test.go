package proxy

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe"
	"github.com/mcpsafe/mcpsafe/internal/canon"
	"github.com/mcpsafe/mcpsafe/journal"
)

// TestProxyFoldedKeysRefused: gated proxy calls go through the gate's
// decode, so two spellings of one key never reach the CEL rules or the
// upstream. Without the check, the deny rule reads "source" = /ok while a
// Go upstream decoding with encoding/json acts on "ſource" (U+017F) =
// /protected/x. The exact spelling is the control: it runs, and the
// journal records exactly the arguments the real upstream received.
// (mutant: canon-folded-keys-unchecked)
func TestProxyFoldedKeysRefused(t *testing.T) {
	u, up := newGoUpstream(t)
	s := newProxy(t, up, mustPolicy(t, `
tools:
  delete_thing:
    deny:
      - name: protected
        expr: 'args.source.startsWith("/protected/")'
    auto_approve: ['true']
`))
	cs := connect(t, s, nil)
	for _, raw := range []string{
		`{"source":"/ok","ſource":"/protected/x"}`,
		`{"source":"/ok","SOURCE":"/protected/x"}`,
		`{"source":"/ok","opts":{"kind":1,"Kind":2}}`,
		`{"source":"/ok","Approval_Token":"x"}`,
	} {
		res := call(t, cs, "delete_thing", json.RawMessage(raw))
		if reasonOf(t, res) != mcpsafe.ReasonArgumentsInvalid || u.count("delete_thing") != 0 {
			t.Fatalf("%s: reason %q, upstream calls %d (%s)", raw, reasonOf(t, res), u.count("delete_thing"), text(res))
		}
	}
	// Controls: the deny rule sees the exact key, and the exact call runs.
	if r := reasonOf(t, call(t, cs, "delete_thing", json.RawMessage(`{"source":"/protected/x"}`))); r != mcpsafe.ReasonPolicyDenied {
		t.Fatalf("deny rule: reason %q", r)
	}
	raw := `{"source":"/ok","label":"a<b>&c\u2028é😀","n":1e2,"opts":{"list":[true,null,-0.5],"Kind":"x"}}`
	if res := call(t, cs, "delete_thing", json.RawMessage(raw)); res.IsError || u.count("delete_thing") != 1 {
		t.Fatalf("control did not run: %s", text(res))
	}
	u.mu.Lock()
	got := u.lastArgs["delete_thing"]
	u.mu.Unlock()
	want, err := canon.Canonical([]byte(got))
	if err != nil {
		t.Fatalf("upstream got %s: %v", got, err)
	}
	if sent, _ := canon.Canonical([]byte(raw)); string(sent) != string(want) {
		t.Fatalf("upstream got %s, the client sent %s", want, sent)
	}
	data, err := os.ReadFile(s.JournalPath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r journal.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Decision != journal.PolicyAutoApproved && r.Decision != journal.Executed {
			continue
		}
		n++
		j, err := canon.Canonical(r.Args)
		if err != nil || string(j) != string(want) {
			t.Fatalf("%s record holds %s (%v); upstream received %s", r.Decision, r.Args, err, want)
		}
		if d, _ := canon.Digest([]byte(got)); r.ArgsDigest != d {
			t.Fatalf("%s record digest %s is not the digest of what upstream received (%s)", r.Decision, r.ArgsDigest, d)
		}
	}
	if n != 2 {
		t.Fatalf("want an approval and an outcome record, found %d", n)
	}
}
