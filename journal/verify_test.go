package journal

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/ vectors")

func TestVerifyIntact(t *testing.T) {
	path, lines := sampleJournal(t)
	sum, err := VerifyFile(path)
	wantErr(t, err, "ok", 0)
	if sum.Records != 6 || sum.LastSeq != 6 || sum.LastHash != hashLine(lines[5]) {
		t.Fatalf("summary %+v", sum)
	}
	if !sum.First.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || !sum.Last.Equal(sum.First.Add(5*time.Second)) {
		t.Fatalf("times %v %v", sum.First, sum.Last)
	}
	first, err := parseLine(lines[0])
	if err != nil || first.Prev != Genesis || first.Seq != 1 {
		t.Fatalf("first record %+v %v", first, err)
	}
	if Genesis != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Fatalf("genesis changed: %s", Genesis)
	}
	for i := 1; i < len(lines); i++ {
		r, _ := parseLine(lines[i])
		if r.Prev != hashLine(lines[i-1]) {
			t.Fatalf("line %d prev is not the hash of line %d", i+1, i)
		}
	}
}

func TestVerifyEmpty(t *testing.T) {
	sum, err := Verify(strings.NewReader(""))
	if err != nil || sum.Records != 0 || sum.LastHash != Genesis {
		t.Fatalf("%+v %v", sum, err)
	}
}

// mutate changes one field of a JSON line, keeping the writer's field order.
func mutate(t *testing.T, line []byte, field string) []byte {
	t.Helper()
	r, err := parseLine(line)
	if err != nil {
		t.Fatal(err)
	}
	switch field {
	case "seq":
		r.Seq += 10
	case "prev":
		r.Prev = hashLine([]byte("forged"))
	case "time":
		r.Time = r.Time.Add(-time.Hour)
	case "call":
		r.Call += "x"
	case "tool":
		r.Tool = "read_file"
	case "principal":
		r.Principal = "mallory@example.com"
	case "session":
		r.Session += "x"
	case "args_digest":
		r.ArgsDigest += "0"
	case "args":
		r.Args = json.RawMessage(`{"path":"/srv/data/other.txt","recursive":false}`)
	case "summary":
		r.Summary = "harmless"
	case "decision":
		r.Decision = Declined
	case "by":
		r.By = "carol@example.com"
	case "reason":
		r.Reason += "!"
	case "error":
		r.Error = ""
	case "whitespace":
		return append([]byte(" "), line...)
	default:
		t.Fatalf("no mutation for %q", field)
	}
	b, err := json.Marshal(&r)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(b, line) {
		t.Fatalf("mutation of %s changed nothing", field)
	}
	return b
}

var recordFields = []string{"seq", "prev", "time", "call", "tool", "principal", "session",
	"args_digest", "args", "summary", "decision", "by", "reason", "error", "whitespace"}

func TestVerifyTamperEachField(t *testing.T) {
	_, lines := sampleJournal(t)
	// Line 1 has no predecessor, 3 is in the middle, 5 is followed only by
	// the last line: each exercises a different way of naming the culprit.
	for _, target := range []int{1, 3, 5} {
		for _, field := range recordFields {
			t.Run(field+"@"+string(rune('0'+target)), func(t *testing.T) {
				cp := make([][]byte, len(lines))
				copy(cp, lines)
				cp[target-1] = mutate(t, lines[target-1], field)
				sum, err := Verify(bytes.NewReader(joinLines(cp)))
				wantErr(t, err, "tamper", target)
				// The summary covers only the lines before the bad one.
				if sum.Records != target-1 {
					t.Fatalf("summary counts %d records, want %d", sum.Records, target-1)
				}
			})
		}
	}
}

// An edit of the last line cannot show in the chain: nothing follows it.
// It shows only against an anchored last hash; this pins that limit.
func TestVerifyLastLineEditNeedsAnchor(t *testing.T) {
	_, lines := sampleJournal(t)
	anchor, err := Verify(bytes.NewReader(joinLines(lines)))
	if err != nil {
		t.Fatal(err)
	}
	lines[5] = mutate(t, lines[5], "summary")
	sum, err := Verify(bytes.NewReader(joinLines(lines)))
	wantErr(t, err, "ok", 0)
	if sum.LastHash == anchor.LastHash {
		t.Fatal("edited last line kept the anchored hash")
	}
}

func TestVerifyStructural(t *testing.T) {
	_, lines := sampleJournal(t)
	all := joinLines(lines)
	without := func(i int) [][]byte {
		out := append([][]byte{}, lines[:i]...)
		return append(out, lines[i+1:]...)
	}
	swap := func(i, k int) [][]byte {
		out := append([][]byte{}, lines...)
		out[i], out[k] = out[k], out[i]
		return out
	}
	dup := func(i int) [][]byte {
		out := append([][]byte{}, lines[:i+1]...)
		out = append(out, lines[i])
		return append(out, lines[i+1:]...)
	}
	replace := func(i int, b string) [][]byte {
		out := append([][]byte{}, lines...)
		out[i] = []byte(b)
		return out
	}
	last := len(lines) - 1
	// A final line that is complete JSON but does not chain is tampering,
	// even without a newline.
	forged := append(joinLines(lines[:last]), mutate(t, lines[last], "prev")...)
	tests := []struct {
		name string
		data []byte
		kind string
		line int
	}{
		{"untouched", all, "ok", 0},
		{"delete first", joinLines(without(0)), "tamper", 1},
		{"delete middle", joinLines(without(2)), "tamper", 3},
		{"swap middle", joinLines(swap(2, 3)), "tamper", 3},
		{"swap last two", joinLines(swap(4, 5)), "tamper", 5},
		{"duplicate middle", joinLines(dup(2)), "tamper", 4},
		{"duplicate last", joinLines(dup(last)), "tamper", 7},
		{"invalid json middle", joinLines(replace(2, `{"seq":3,`)), "tamper", 3},
		{"empty line middle", joinLines(replace(2, ``)), "tamper", 3},
		{"json array middle", joinLines(replace(2, `[1]`)), "tamper", 3},
		{"null middle", joinLines(replace(2, `null`)), "tamper", 3},
		{"trailing data middle", joinLines(replace(2, string(lines[2])+` {}`)), "tamper", 3},
		{"inserted record", joinLines(append(append(append([][]byte{}, lines[:3]...), lines[0]), lines[3:]...)), "tamper", 4},
		{"cut last line mid-write", all[:len(all)-len(lines[last])/2], "torn", 6},
		{"last line without newline", all[:len(all)-1], "torn", 6},
		{"last line one byte", all[:len(all)-len(lines[last])], "torn", 6},
		{"last line zeros", append(joinLines(lines[:last]), 0, 0, 0, 0), "torn", 6},
		{"last line garbage with newline", append(joinLines(lines[:last]), "{\"seq\":6,\"pr\n"...), "torn", 6},
		{"forged unterminated last line", forged, "tamper", 5},
		{"line too long", append(joinLines(lines[:2]), bytes.Repeat([]byte("a"), MaxLineBytes+10)...), "tamper", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(tc.data))
			wantErr(t, err, tc.kind, tc.line)
		})
	}
}

// vectors are the files in testdata/ and what Verify must say of each.
var vectors = []struct {
	file string
	kind string
	line int
	make func(lines [][]byte) []byte
}{
	{"good.jsonl", "ok", 0, func(l [][]byte) []byte { return joinLines(l) }},
	{"edited-summary-line3.jsonl", "tamper", 3, nil},
	{"deleted-line3.jsonl", "tamper", 3, func(l [][]byte) []byte {
		return joinLines(append(append([][]byte{}, l[:2]...), l[3:]...))
	}},
	{"swapped-lines3-4.jsonl", "tamper", 3, func(l [][]byte) []byte {
		c := append([][]byte{}, l...)
		c[2], c[3] = c[3], c[2]
		return joinLines(c)
	}},
	{"duplicated-line2.jsonl", "tamper", 3, func(l [][]byte) []byte {
		return joinLines(append(append(append([][]byte{}, l[:2]...), l[1]), l[2:]...))
	}},
	{"torn-last-line.jsonl", "torn", 6, func(l [][]byte) []byte {
		all := joinLines(l)
		return all[:len(all)-40]
	}},
}

func TestVectors(t *testing.T) {
	path, lines := sampleJournal(t)
	if *update {
		for _, v := range vectors {
			var data []byte
			if v.make != nil {
				data = v.make(lines)
			} else {
				c := append([][]byte{}, lines...)
				c[2] = mutate(t, c[2], "summary")
				data = joinLines(c)
			}
			if err := os.WriteFile(filepath.Join("testdata", v.file), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The writer must still produce good.jsonl byte for byte: the format is
	// what old journals are verified against.
	got, _ := os.ReadFile(path)
	want, err := os.ReadFile(filepath.Join("testdata", "good.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("writer output differs from testdata/good.jsonl:\n%s\nvs\n%s", got, want)
	}
	for _, v := range vectors {
		t.Run(v.file, func(t *testing.T) {
			_, err := VerifyFile(filepath.Join("testdata", v.file))
			wantErr(t, err, v.kind, v.line)
		})
	}
}
