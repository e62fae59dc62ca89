package journal

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The JSONL export of an intact journal is the journal, byte for byte: it
// verifies on its own with the same summary.
func TestExportJSONLRoundTrips(t *testing.T) {
	path, _ := sampleJournal(t)
	var out bytes.Buffer
	sum, err := Export(&out, path, FormatJSONL)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), orig) {
		t.Fatalf("export differs from the journal")
	}
	again, err := Verify(bytes.NewReader(out.Bytes()))
	if err != nil || again.Records != sum.Records || again.LastHash != sum.LastHash || again.LastSeq != sum.LastSeq {
		t.Fatalf("export verifies as %+v, %v; journal %+v", again, err, sum)
	}
}

// The OCSF export has one API Activity event per record, and the journal's
// own fields come back from it unchanged.
func TestExportOCSFRoundTrips(t *testing.T) {
	path, _ := sampleJournal(t)
	var out bytes.Buffer
	if _, err := Export(&out, path, FormatOCSF); err != nil {
		t.Fatal(err)
	}
	recs := sampleRecords()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(recs) {
		t.Fatalf("%d events for %d records", len(lines), len(recs))
	}
	for i, l := range lines {
		var ev struct {
			ClassUID int    `json:"class_uid"`
			Status   string `json:"status"`
			API      struct {
				Operation string `json:"operation"`
			} `json:"api"`
			Actor struct {
				User struct {
					Name string `json:"name"`
				} `json:"user"`
			} `json:"actor"`
			Unmapped struct {
				Seq        uint64          `json:"seq"`
				Decision   string          `json:"decision"`
				ArgsDigest string          `json:"args_digest"`
				Args       json.RawMessage `json:"args"`
			} `json:"unmapped"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		r := recs[i]
		want := map[string]string{Executed: "Success", Failed: "Failure", ClientAccepted: "Success", TokenRedeemed: "Success", ChannelApproved: "Success"}[r.Decision]
		if ev.ClassUID != 6003 || ev.Unmapped.Seq != uint64(i+1) || ev.Unmapped.Decision != r.Decision || ev.Status != want ||
			ev.API.Operation != r.Tool || ev.Actor.User.Name != r.Principal || ev.Unmapped.ArgsDigest != r.ArgsDigest ||
			!bytes.Equal(ev.Unmapped.Args, Redact(r.Args, nil)) {
			t.Fatalf("event %d: %s", i+1, l)
		}
	}
}

// A secret in clear in a journal line (written by an older version, or
// edited in and the chain recomputed) is redacted on the way out in both
// formats; the other lines stay byte for byte (control).
func TestExportRedactsAgain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	recs := sampleRecords()
	recs[0].Args = json.RawMessage(`{"path":"a.txt","password":"hunter2"}`)
	writeJournal(t, path, recs)
	raw, _ := os.ReadFile(path)
	if bytes.Contains(raw, []byte("hunter2")) {
		t.Fatal("Append did not redact")
	}
	lines := readLines(t, path)
	lines[0] = bytes.Replace(lines[0], []byte(`"password":"[redacted]"`), []byte(`"password":"hunter2"`), 1)
	if err := os.WriteFile(path, joinLines(rechainPrev(lines)), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(path + HeadSuffix)
	for _, format := range []string{FormatJSONL, FormatOCSF} {
		var out bytes.Buffer
		if _, err := Export(&out, path, format); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "hunter2") || !strings.Contains(out.String(), RedactedValue) {
			t.Fatalf("%s export leaks the secret:\n%s", format, out.String())
		}
		if format == FormatJSONL {
			got := bytes.Split(bytes.TrimSuffix(out.Bytes(), []byte("\n")), []byte("\n"))
			fixed := rechainPrev(lines)
			for i := 1; i < len(got); i++ {
				if !bytes.Equal(got[i], fixed[i]) {
					t.Fatalf("line %d changed though it held no secret", i+1)
				}
			}
		}
	}
}

// A damaged journal is not exported at all.
func TestExportRefusesDamagedJournal(t *testing.T) {
	path, lines := sampleJournal(t)
	lines[2] = bytes.Replace(lines[2], []byte("delete /srv"), []byte("delete /tmp"), 1)
	if err := os.WriteFile(path, joinLines(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if _, err := Export(&out, path, FormatOCSF); err == nil || out.Len() != 0 {
		t.Fatalf("exported a tampered journal: %v, %d bytes", err, out.Len())
	}
	if _, err := Export(&out, path, "csv"); err == nil || !strings.Contains(err.Error(), "unknown export format") {
		t.Fatalf("bad format: %v", err)
	}
}

// rechainPrev recomputes every prev, leaving the rest of each line alone.
func rechainPrev(lines [][]byte) [][]byte {
	out := make([][]byte, len(lines))
	prev := Genesis
	for i, l := range lines {
		var r Record
		json.Unmarshal(l, &r)
		l = bytes.Replace(l, []byte(`"prev":"`+r.Prev+`"`), []byte(`"prev":"`+prev+`"`), 1)
		out[i] = l
		prev = hashLine(l)
	}
	return out
}
