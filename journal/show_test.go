package journal

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func showString(t *testing.T, data []byte, f Filter) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := Show(&out, bytes.NewReader(data), f)
	return out.String(), err
}

func TestShowTable(t *testing.T) {
	_, lines := sampleJournal(t)
	out, err := showString(t, joinLines(lines), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) < 8 || !strings.HasPrefix(rows[0], "SEQ") {
		t.Fatalf("unexpected table:\n%s", out)
	}
	// Aligned: the DECISION column starts at the same offset in every row.
	col := strings.Index(rows[0], "DECISION")
	for i, d := range []string{ClientAccepted, Executed, TokenRedeemed, Failed, ChannelApproved, Executed} {
		if got := strings.Index(rows[i+1], d); got != col {
			t.Fatalf("row %d: %q at %d, header at %d:\n%s", i+1, d, got, col, out)
		}
	}
	if !strings.Contains(out, "6 of 6 records shown.") || strings.Contains(out, AmbiguousMarker) {
		t.Fatalf("footer:\n%s", out)
	}
	if !strings.Contains(out, "error: error text c2") {
		t.Fatalf("failed record's error not shown:\n%s", out)
	}
}

func TestShowFilter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	recs := sampleRecords()
	recs[0].Tool, recs[1].Tool = "write_file", "write_file"
	writeJournal(t, path, recs)
	data := joinLines(readLines(t, path))
	out, err := showString(t, data, Filter{Tool: "write_file"})
	if err != nil || !strings.Contains(out, "2 of 6 records shown.") || strings.Contains(out, "delete_file") {
		t.Fatalf("tool filter: %v\n%s", err, out)
	}
	// The step clock stamps 03:04:05 + n seconds: since 03:04:09 keeps seq 5 and 6.
	since := time.Date(2026, 1, 2, 3, 4, 9, 0, time.UTC)
	out, err = showString(t, data, Filter{Since: since})
	if err != nil || !strings.Contains(out, "2 of 6 records shown.") {
		t.Fatalf("since filter: %v\n%s", err, out)
	}
}

func TestShowEscapesUntrustedText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	recs := sampleRecords()[:1]
	recs[0].Tool = "rm\n99  2026-01-01 00:00:00  fake  row"
	recs[0].Summary = "\x1b[2Jclear screen \u202etxt.exe\tand \xff bytes"
	recs[0].Principal = "eve\r"
	writeJournal(t, path, recs)
	out, err := showString(t, joinLines(readLines(t, path)), Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"\x1b", "\u202e", "\r", "\n99", "\t"} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{`rm\x0a99`, `\x1b[2Jclear`, `\u202e`} {
		if !strings.Contains(out, want) {
			t.Errorf("escape %q missing:\n%s", want, out)
		}
	}
	if !utf8.ValidString(out) {
		t.Error("output is not valid UTF-8")
	}
	// Control: ordinary text is shown as written.
	if !strings.Contains(out, "client; reason for c1") {
		t.Errorf("plain text mangled:\n%s", out)
	}
}

func TestOneLineTruncates(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"abcdef", 6, "abcdef"},
		{"abcdefg", 6, "abcde…"},
		{"ééééééé", 4, "ééé…"},
		{"abc", 0, "abc"},
	} {
		if got := oneLine(tc.in, tc.max); got != tc.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestShowReportsDamage(t *testing.T) {
	_, lines := sampleJournal(t)
	all := joinLines(lines)
	out, err := showString(t, all[:len(all)-10], Filter{})
	var torn *TornError
	if !errors.As(err, &torn) || !strings.Contains(out, "final line 6 is torn") || !strings.Contains(out, "5 of 5 records shown.") {
		t.Fatalf("torn: %v\n%s", err, out)
	}
	lines[2] = mutate(t, lines[2], "summary")
	out, err = showString(t, joinLines(lines), Filter{})
	var te *TamperError
	if !errors.As(err, &te) || !strings.Contains(out, "!! JOURNAL NOT INTACT") || !strings.Contains(out, "line 3") {
		t.Fatalf("tamper: %v\n%s", err, out)
	}
	// The edited line itself is read before the next line exposes it: it
	// must not be printed as if it were good.
	if strings.Contains(out, "harmless") || !strings.Contains(out, "2 of 2 records shown.") {
		t.Fatalf("tampered row printed:\n%s", out)
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-05-01T00:00:00Z", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), true},
		{"24h", now.Add(-24 * time.Hour), true},
		{"90m", now.Add(-90 * time.Minute), true},
		{"7d", now.Add(-7 * 24 * time.Hour), true},
		{"-1h", time.Time{}, false},
		{"0s", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"d", time.Time{}, false},
		{"2026-05-01", time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), true},
		{"2020-01-01", time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), true},
		{"2026-13-01", time.Time{}, false},
		{"2026-5-1", time.Time{}, false},
	} {
		got, err := ParseSince(tc.in, now)
		if (err == nil) != tc.ok || (tc.ok && !got.Equal(tc.want)) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
