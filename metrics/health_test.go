package metrics

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpsafe/mcpsafe/journal"
	"github.com/mcpsafe/mcpsafe/ledger"
	_ "github.com/mcpsafe/mcpsafe/ledger/sqlite" // file:
)

func expose(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

// A journal that stops working shows as down, with the failed append
// counted as an error; a working one (the control) as up.
func TestJournalHealthFollowsAppends(t *testing.T) {
	m := New()
	j, err := journal.Open(filepath.Join(t.TempDir(), "j.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	tj := m.Journal(j)
	rec := journal.Record{Tool: "t", Decision: journal.Refused}
	if err := tj.Append(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	body := expose(t, m)
	for _, want := range []string{`mcpsafe_component_up{component="journal"} 1`, `mcpsafe_journal_append_duration_seconds_count{result="ok"} 1`} {
		if !strings.Contains(body, want) {
			t.Fatalf("missing %s", want)
		}
	}
	j.Close()
	if err := tj.Append(context.Background(), rec); err == nil {
		t.Fatal("append to a closed journal worked")
	}
	body = expose(t, m)
	for _, want := range []string{`mcpsafe_component_up{component="journal"} 0`, `mcpsafe_journal_append_duration_seconds_count{result="error"} 1`} {
		if !strings.Contains(body, want) {
			t.Fatalf("missing %s in\n%s", want, body)
		}
	}
}

func TestLedgerHealthFollowsOperations(t *testing.T) {
	m := New()
	// A real file ledger, closed later to make it fail.
	l, err := ledger.Open(context.Background(), "file:"+filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	tl := m.Ledger(l)
	if err := tl.Issue(context.Background(), "n1", time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, err := tl.Redeem(context.Background(), "n1"); !ok || err != nil {
		t.Fatalf("redeem: %v %v", ok, err)
	}
	body := expose(t, m)
	for _, want := range []string{`mcpsafe_component_up{component="ledger"} 1`, `mcpsafe_ledger_duration_seconds_count{op="issue",result="ok"} 1`, `mcpsafe_ledger_duration_seconds_count{op="redeem",result="ok"} 1`} {
		if !strings.Contains(body, want) {
			t.Fatalf("missing %s", want)
		}
	}
	l.Close()
	if _, err := tl.Redeem(context.Background(), "n2"); err == nil {
		t.Fatal("redeem on a closed ledger worked")
	}
	if body = expose(t, m); !strings.Contains(body, `mcpsafe_component_up{component="ledger"} 0`) {
		t.Fatalf("a failed redeem left the ledger up:\n%s", body)
	}
}
