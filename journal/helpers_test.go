package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// stepClock returns a clock that starts at a fixed instant and moves one
// second per reading, so journals written in tests are byte-for-byte
// reproducible.
func stepClock() func() time.Time {
	var n atomic.Int64
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time { return start.Add(time.Duration(n.Add(1)-1) * time.Second) }
}

// sampleRecords has every field set on every record, so that a test can
// tamper with any field of any line.
func sampleRecords() []Record {
	base := func(call, decision, by string) Record {
		return Record{
			Call:       call,
			Tool:       "delete_file",
			Principal:  "alice@example.com",
			Session:    "sess-1",
			ArgsDigest: "sha256:" + call,
			Args:       json.RawMessage(`{"path":"/srv/data/` + call + `.txt","recursive":false}`),
			Summary:    "delete /srv/data/" + call + ".txt (12 KiB)",
			Decision:   decision,
			By:         by,
			Reason:     "reason for " + call,
			Error:      "error text " + call,
		}
	}
	return []Record{
		base("c1", ClientAccepted, "client"),
		base("c1", Executed, "gate"),
		base("c2", TokenRedeemed, "token"),
		base("c2", Failed, "gate"),
		base("c3", ChannelApproved, "bob@example.com"),
		base("c3", Executed, "gate"),
	}
}

// writeJournal writes recs to a new journal at path with the step clock.
func writeJournal(t testing.TB, path string, recs []Record, opts ...Option) {
	t.Helper()
	j, err := Open(path, append([]Option{WithClock(stepClock())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := j.Append(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func readLines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.Split(b, []byte("\n"))
}

func joinLines(lines [][]byte) []byte {
	return append(bytes.Join(lines, []byte("\n")), '\n')
}

func sampleJournal(t testing.TB) (path string, lines [][]byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "j.jsonl")
	writeJournal(t, path, sampleRecords())
	return path, readLines(t, path)
}

// wantErr checks err against an expected kind ("ok", "tamper", "torn") and
// line.
func wantErr(t *testing.T, err error, kind string, line int) {
	t.Helper()
	var te *TamperError
	var tr *TornError
	switch kind {
	case "ok":
		if err != nil {
			t.Fatalf("want intact, got %v", err)
		}
	case "tamper":
		if !errors.As(err, &te) {
			t.Fatalf("want *TamperError at line %d, got %v", line, err)
		}
		if errors.As(err, &tr) {
			t.Fatalf("tampering reported as torn: %v", err)
		}
		if te.Line != line {
			t.Fatalf("want tamper at line %d, got line %d: %v", line, te.Line, err)
		}
	case "torn":
		if !errors.As(err, &tr) {
			t.Fatalf("want *TornError at line %d, got %v", line, err)
		}
		if tr.Line != line {
			t.Fatalf("want torn at line %d, got line %d: %v", line, tr.Line, err)
		}
	default:
		t.Fatalf("bad kind %q", kind)
	}
}

// needEnv fails in CI and skips loudly elsewhere, per the team's rule.
func needEnv(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("required environment missing: "+format, args...)
	}
	t.Skipf("SKIPPING (not CI): required environment missing: "+format, args...)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
