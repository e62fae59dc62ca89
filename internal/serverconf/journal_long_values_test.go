package serverconf

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpsafe/mcpsafe/journal"
)

// --journal-keep-long-values reaches the journal the ready servers open:
// without it a long argument is written as its digest, with it whole.
func TestJournalKeepLongValuesFlag(t *testing.T) {
	long := strings.Repeat("file content ", 200)
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "flag"}[keep], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.jsonl")
			var c Config
			fl := flag.NewFlagSet("test", flag.ContinueOnError)
			fl.SetOutput(io.Discard)
			c.RegisterFlags(fl)
			args := []string{"--journal", path}
			if keep {
				args = append(args, "--journal-keep-long-values")
			}
			if err := fl.Parse(args); err != nil {
				t.Fatal(err)
			}
			c.Audience = "a"
			g, err := Build(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(map[string]string{"content": long})
			if err := g.Options.Journal.Append(context.Background(), journal.Record{Call: "c1", Tool: "write_file", Decision: journal.ClientAccepted, Args: a}); err != nil {
				t.Fatal(err)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Contains(b, []byte(long)); got != keep {
				t.Fatalf("the content is in the journal: %v, want %v", got, keep)
			}
			if !keep && !bytes.Contains(b, []byte(`"bytes":2600`)) {
				t.Fatalf("the journal lacks the content's size:\n%s", b)
			}
		})
	}
}
