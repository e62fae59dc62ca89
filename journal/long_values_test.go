package journal

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A string argument over LongValueBytes, at any depth, is kept as its
// SHA-256 and size; one at the limit, and every key, number and short
// value, as it is. A long value under a secret name is redacted, never
// digested (a digest of a secret would let it be guessed).
func TestLongValuesDigested(t *testing.T) {
	long := strings.Repeat("é", LongValueBytes/2) + "x" // LongValueBytes+1 bytes
	atLimit := strings.Repeat("a", LongValueBytes)
	sum := sha256.Sum256([]byte(long))
	d := fmt.Sprintf(`{"sha256":"%s","bytes":%d}`, hex.EncodeToString(sum[:]), len(long))
	args, _ := json.Marshal(map[string]any{
		"content":  long,
		"at_limit": atLimit,
		"files":    []any{map[string]any{"path": "a.txt", "text": long}, 42, true, nil},
		"password": long,
		"n":        1.5,
	})
	cases := []struct {
		keep bool
		want string
	}{
		{false, `{"at_limit":"` + atLimit + `","content":` + d + `,"files":[{"path":"a.txt","text":` + d + `},42,true,null],"n":1.5,"password":"[redacted]"}`},
		{true, string(Redact(args, nil))},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint("keep=", tc.keep), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "j.jsonl")
			writeJournal(t, path, []Record{{Tool: "write_file", Decision: ClientAccepted, Args: args, Call: "c1"}}, WithKeepLongValues(tc.keep))
			b, _ := os.ReadFile(path)
			var rec Record
			if err := json.Unmarshal(bytes.TrimSpace(b), &rec); err != nil {
				t.Fatal(err)
			}
			if got := string(rec.Args); got != tc.want {
				t.Fatalf("args in the journal:\n got %s\nwant %s", got, tc.want)
			}
			if !tc.keep && bytes.Contains(b, []byte("éé")) {
				t.Fatal("the long value is in the journal file")
			}
			// The long password is never digested: its SHA-256 would appear
			// twice (content, files[0].text) at most, not three times.
			if n := bytes.Count(b, []byte(hex.EncodeToString(sum[:]))); !tc.keep && n != 2 {
				t.Fatalf("the value's digest appears %d times, want 2 (content, files[0].text; never the password's)", n)
			}
			if _, err := VerifyFile(path); err != nil {
				t.Fatal(err)
			}
		})
	}
}
