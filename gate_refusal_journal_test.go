package mcpsafe_test

import (
	"strings"
	"testing"
)

// A call refused before it has a plan still says in the journal what it
// was aimed at; one with a plan keeps the plan's summary (control).
func TestRefusalJournalNamesTarget(t *testing.T) {
	e := newEnv(t, nil)
	cs := e.connect(client{})
	callTool(t, cs, "delete_note", map[string]any{"path": "no-such-note.txt"})
	callTool(t, cs, "delete_note", map[string]any{"path": "cache.txt"}) // no elicitation: refused with a plan
	e.journal.mu.Lock()
	defer e.journal.mu.Unlock()
	if len(e.journal.recs) != 2 {
		t.Fatalf("records %+v", e.journal.recs)
	}
	if s := e.journal.recs[0].Summary; !strings.Contains(s, "no-such-note.txt") {
		t.Fatalf("refusal before a plan: summary %q", s)
	}
	if s := e.journal.recs[1].Summary; !strings.Contains(s, "cache.txt") || strings.Contains(s, "elicit") {
		t.Fatalf("refusal with a plan: summary %q", s)
	}
}
